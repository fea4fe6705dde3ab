"""``kailab class …``: one lab for a whole class. Thin commands; the work is in the classroom modules."""

from __future__ import annotations

from pathlib import Path

import typer

from kailab import lab, render
from kailab.classroom.records import STUCK_SECONDS
from kailab.errors import KailabError
from kailab.progress import Progress, stderr

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="One lab for a whole class: each learner a fleet and a KAI partition of their own.",
)

QuietOpt = typer.Option(False, "--quiet", "-q", help="Print results only, no progress lines.")


def roster_of(count: int | None, names: list[str], roster: Path | None):
    """The roster from exactly one of --learners, --learner, --roster."""
    from kailab.classroom import roster as r

    given = [
        flag
        for flag, value in (
            ("--learners", count is not None),
            ("--learner", bool(names)),
            ("--roster", roster is not None),
        )
        if value
    ]
    if len(given) != 1:
        raise r.RosterError(
            "Say who is in the class with one of --learners N, --learner NAME (repeated) or "
            f"--roster FILE{'' if not given else ', not ' + ' and '.join(given)}."
        )
    if count is not None:
        return r.from_count(count)
    if names or roster is None:
        return r.from_names(names)
    return r.from_file(roster)


def lab_class():
    """The running lab's class (every runtime: classroom/partitions.py); a clear error without a lab, or for a
    learner who joined a class (the class is the instructor's to change)."""
    from kailab.classroom.partitions import class_of
    from kailab.errors import NotRunning

    if j := lab.joined():
        raise KailabError(
            f"This folder joined a class as learner {j.learner}: the class's commands are the instructor's.",
            hint="Your own slice: kailab demo NAME, kailab lesson NAME, kailab watch, kailab down.",
        )
    rt = lab.current_runtime()
    if rt is None:
        raise NotRunning("No lab is running.", hint="Start one: kailab up")
    return class_of(rt)


@app.command("up")
def up(
    learners: int | None = typer.Option(None, "--learners", help="This many learners: learner-1 … learner-N."),
    learner: list[str] = typer.Option([], "--learner", help="A learner by name (repeat for each)."),
    roster: Path | None = typer.Option(None, "--roster", help="A file with one learner name a line."),
    out: Path | None = typer.Option(None, "--out", help="Write each learner's kubeconfig here (NAME.kubeconfig)."),
    quiet: bool = QuietOpt,
) -> None:
    """Give each learner a lesson fleet (5 KWOK nodes, 32 GPUs) and a KAI partition (a SchedulingShard) of their own."""
    from kailab.fleet import load_fleet

    wanted = roster_of(learners, learner, roster)  # checked before anything is applied
    klass = lab_class()
    progress = Progress(quiet)
    added = klass.up(lab.connect(), wanted, load_fleet(), progress, out)
    render.stdout.print(
        f"Class: {', '.join(klass.learners())} ({len(added)} added). "
        "A learner's lessons: kailab class demo NAME --learner LEARNER",
        markup=False,
        highlight=False,
    )


@app.command("down")
def down(
    learner: list[str] = typer.Option([], "--learner", help="Remove only this learner (repeat for each)."),
    quiet: bool = QuietOpt,
) -> None:
    """Remove every learner (or the ones named): their scheduler, namespaces, queues and nodes."""
    klass = lab_class()
    removed = klass.down(lab.connect(), learner or None, Progress(quiet))
    render.stdout.print(f"Removed: {', '.join(removed) or 'no learner'}.", markup=False, highlight=False)


StuckOpt = typer.Option(
    STUCK_SECONDS,
    "--stuck-after",
    min=0,
    help="Seconds a lesson may run without a verdict, or a pod wait for a scheduler, before it counts as stuck.",
)


@app.command("status")
def status(
    as_json: bool = typer.Option(False, "--json", help="Print the class as JSON."),
    stuck_after: float = StuckOpt,
) -> None:
    """Learners × lessons: each verdict and when, predictions graded right or wrong, whose scheduler runs, and who is
    stuck (a lesson running for minutes, a pod Pending with KAI's reason)."""
    import json

    from kailab.classroom.records import class_status, stuck_line
    from kailab.classroom.report import when

    klass = lab_class()
    learners = klass.learners()
    report = class_status(kube := lab.connect(), learners, stuck_after=stuck_after)
    for name in learners:
        try:
            report[name]["scheduler"] = "running" if klass.control(name, kube).running() else "stopped"
        except KailabError:  # their shard is gone
            report[name]["scheduler"] = "missing"
    if as_json:
        print(json.dumps(report, indent=2))
        return
    if not learners:
        render.stdout.print("No class on this lab. Start one: kailab class up --learners N", markup=False)
        return
    for name in learners:
        row = report[name]
        lessons = ", ".join(
            f"{lesson} {when(r)}" + (f" (predictions {r['right']})" if r.get("right") else "")
            for lesson, r in sorted(row["lessons"].items())
        )
        render.stdout.print(
            f"{name} (scheduler {row['scheduler']}): {lessons or 'no lesson run yet'}", markup=False, highlight=False
        )
        for lesson, r in sorted(row["lessons"].items()):
            if r.get("prediction"):
                said = " ".join(str(r["prediction"]).split())  # one line, as typed
                render.stdout.print(
                    f"  {lesson}: predicted “{said}”, outcome {r['outcome']}", markup=False, highlight=False
                )
            if r.get("predictions"):
                render.stdout.print(
                    f"  {lesson} predictions: " + "; ".join(map(_graded_words, r["predictions"])),
                    markup=False,
                    highlight=False,
                )
        for s in row["stuck"]:
            render.stdout.print(f"  stuck: {stuck_line(name, s)}", markup=False, highlight=False)
    if said := outcome_counts(report):
        render.stdout.print(said, markup=False, highlight=False)


def outcome_counts(report: dict) -> str:
    """The class's verdicts counted apart — PASS, FAIL, UNDECIDED (the host too busy to tell), still running — and,
    when some are UNDECIDED, what to do; "" before any lesson ran."""
    from kailab.checks import UNDECIDED

    counts: dict[str, int] = {}
    for row in report.values():
        for r in row["lessons"].values():
            counts[r.get("outcome", "")] = counts.get(r.get("outcome", ""), 0) + 1
    if not counts:
        return ""
    order = ["PASS", "FAIL", UNDECIDED, *sorted(set(counts) - {"PASS", "FAIL", UNDECIDED})]
    said = "Verdicts: " + ", ".join(f"{counts[k]} {k or 'unknown'}" for k in order if counts.get(k))
    if counts.get(UNDECIDED):
        said += (
            f". {counts[UNDECIDED]} UNDECIDED: the host was too busy to tell, not KAI failing — "
            "fewer learners at once (a smaller class on this machine), then run those lessons again"
        )
    return said


def _graded_words(g: dict) -> str:
    """One graded prediction in words: ``ops-gpus wrong (said 32, KAI did 16)``."""
    said = f"said {g.get('given')}" if g.get("given") else "not answered"
    did = f"KAI did {g.get('answer')}" if g.get("answer") else "not measured"
    return f"{g.get('key')} {g.get('mark')} ({said}, {did})"


@app.command("evidence")
def evidence(
    out: Path = typer.Option(
        Path("class-report.md"), "--out", help="The page: NAME.html (one file) or NAME.md (pictures beside it)."
    ),
    stuck_after: float = StuckOpt,
) -> None:
    """Write the class's status as a page to hand round: learners × lessons, predictions, who is stuck, and each
    learner's GPU timelines."""
    from kailab.classroom import report
    from kailab.classroom.records import class_status
    from kailab.lesson import lesson_names

    klass = lab_class()
    status = class_status(lab.connect(), klass.learners(), stuck_after=stuck_after, timelines=True)
    written = report.write(status, lesson_names(), out)
    render.stdout.print(f"Wrote {', '.join(map(str, written))}", markup=False, highlight=False)


@app.command("demo")
def demo(
    name: str = typer.Argument(..., help="An exercise (see kailab demo --help), or all."),
    learner: str = typer.Option(..., "--learner", help="Whose slice to run it in."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
    quiet: bool = QuietOpt,
) -> None:
    """Run a built-in exercise in a learner's slice, as they would."""
    from kailab.classroom.lessons import run_lessons, slice_line
    from kailab.lesson import lesson_names

    names = lesson_names() if name == "all" else [name]
    if any(n not in lesson_names() for n in names):
        raise KailabError(f"No exercise named {name!r}.", hint=f"Choose one of: {', '.join(lesson_names())}, all.")
    klass = lab_class()
    klass.known(learner)  # an unknown learner is refused before anything is applied
    stderr.print(slice_line(learner), markup=False, highlight=False)
    verdicts = run_lessons(klass, lab.connect(), learner, names, Progress(quiet or as_json))
    render.print_verdicts(verdicts, as_json)
    from kailab.checks import exit_code

    if code := exit_code(verdicts):  # 1 failed, 3 undecided (README)
        raise typer.Exit(code)
