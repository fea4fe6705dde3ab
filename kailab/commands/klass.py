"""``kailab class …``: one lab for a whole class. Each command opens the lab and asks its class (classroom/klass.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from kailab import render
from kailab.classroom import STUCK_SECONDS
from kailab.commands.options import QuietOpt, VerdictsJsonOpt
from kailab.errors import KailabError
from kailab.lab import Lab
from kailab.progress import Progress, stderr

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="One lab for a whole class: each learner a fleet and a KAI partition of their own.",
)


def _finite(value: float) -> float:
    """A number of seconds, refused when it is not a number (nan) or endless (inf)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise typer.BadParameter("give a number of seconds, e.g. 300")
    return value


StuckOpt = typer.Option(
    STUCK_SECONDS,
    "--stuck-after",
    min=0,
    callback=_finite,
    help="Seconds a lesson may run without a verdict, or a pod wait for a scheduler, before it counts as stuck.",
)


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


@app.command("up")
def up(
    learners: int | None = typer.Option(None, "--learners", help="This many learners: learner-1 … learner-N."),
    learner: list[str] = typer.Option([], "--learner", help="A learner by name (repeat for each)."),
    roster: Path | None = typer.Option(None, "--roster", help="A file with one learner name a line."),
    out: Path | None = typer.Option(None, "--out", help="Write each learner's kubeconfig here (NAME.kubeconfig)."),
    address: str | None = typer.Option(
        None,
        "--address",
        metavar="<ip>",
        help="The address learners reach the lab at: the one it was brought up at (kailab up --address), which "
        "their kubeconfigs name anyway; given here, class up checks it is.",
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace kubeconfigs in --out that kailab did not write (or that were changed)."
    ),
    tasks_dir: Path | None = typer.Option(
        None,
        "--tasks",
        metavar="<dir>",
        help="Your own task files (LESSON-N.yaml) to store beside the built-in ones, hidden checks out of learners' "
        "reach; run class up again to add more.",
    ),
    quiet: bool = QuietOpt,
) -> None:
    """Give each learner a lesson fleet (5 KWOK nodes, 32 GPUs) and a KAI partition (a SchedulingShard) of their own."""
    from kailab.classroom.grading import read_dir
    from kailab.fleet import load_fleet

    wanted = roster_of(learners, learner, roster)  # checked before anything is applied
    own = read_dir(tasks_dir) if tasks_dir is not None else []  # likewise
    lab = Lab.open()
    klass = lab.klass()
    server, said = klass.learners_server(lab.kube, address)  # a wrong address is refused before anything is applied
    added = klass.up(lab.kube, wanted, load_fleet(), Progress(quiet), out, server=server, force=force)
    klass.store_tasks(lab.kube, own, Progress(quiet))
    render.stdout.print(
        f"Class: {', '.join(klass.learners())} ({len(added)} added). "
        "A learner's lessons: kailab class demo NAME --learner LEARNER",
        markup=False,
        highlight=False,
    )
    if out is not None:
        render.stdout.print(said, markup=False, highlight=False)


@app.command("add")
def add(
    learner: list[str] = typer.Option(..., "--learner", help="A late joiner by name (repeat for each)."),
    out: Path | None = typer.Option(None, "--out", help="Write their kubeconfig here (NAME.kubeconfig)."),
    quiet: bool = QuietOpt,
) -> None:
    """Add late joiners mid-class: a fleet, a KAI partition and a kubeconfig each; nobody else's is touched."""
    from kailab.classroom import roster
    from kailab.fleet import load_fleet

    wanted = roster.from_names(learner)  # checked before anything is applied
    lab = Lab.open()
    klass = lab.klass()
    server, said = klass.learners_server(lab.kube)
    added = klass.add(lab.kube, wanted, load_fleet(), Progress(quiet), out, server=server)
    render.stdout.print(
        f"Added: {', '.join(added)}. Class: {', '.join(klass.learners())}.", markup=False, highlight=False
    )
    if out is not None:
        render.stdout.print(said, markup=False, highlight=False)


@app.command("reset")
def reset(
    learner: list[str] = typer.Option(..., "--learner", help="Whose slice to reset (repeat for each)."),
    quiet: bool = QuietOpt,
) -> None:
    """Put a learner's slice back to clean: their scheduler running with the lab's defaults, lesson namespaces
    emptied, queues deleted, nodes made again. Their records and kubeconfig stay; nobody else is touched."""
    from kailab.fleet import load_fleet

    lab = Lab.open()
    done = lab.klass().reset(lab.kube, learner, load_fleet(), Progress(quiet))
    render.stdout.print(f"Reset: {', '.join(done)} (records and kubeconfig kept).", markup=False, highlight=False)


@app.command("down")
def down(
    learner: list[str] = typer.Option([], "--learner", help="Remove only this learner (repeat for each)."),
    quiet: bool = QuietOpt,
) -> None:
    """Remove every learner (or the ones named): their scheduler, namespaces, queues and nodes."""
    lab = Lab.open()
    klass = lab.klass()
    removed = klass.down(lab.kube, learner or None, Progress(quiet))
    render.stdout.print(f"Removed: {', '.join(removed) or 'no learner'}.", markup=False, highlight=False)


@app.command("status")
def status(
    as_json: bool = typer.Option(False, "--json", help="Print the class as JSON."),
    stuck_after: float = StuckOpt,
) -> None:
    """Learners × lessons: each verdict and when, predictions graded right or wrong, whose scheduler runs, and who is
    stuck (a lesson running for minutes, a pod Pending with KAI's reason)."""
    lab = Lab.open()
    klass = lab.klass()
    report = klass.status(lab.kube, stuck_after)
    if as_json:
        render.print_json(report)
        return
    from kailab.classroom.report import text
    from kailab.lesson import lesson_names

    for line in text(report, klass.learners(), lesson_names()):  # task grades beside each learner's lessons
        render.stdout.print(line, markup=False, highlight=False)


@app.command("serve")
def serve(
    address: str = typer.Option("127.0.0.1", "--address", help="Where to listen; 0.0.0.0 shows the page to the room."),
    port: int = typer.Option(8391, "--port", min=0, max=65535, help="The port (0: any free one)."),
    stuck_after: float = StuckOpt,
) -> None:
    """A live page for the projector: learners × lessons, the class per lesson, who is stuck and why (KAI's words);
    click a learner to open their lessons. Read-only; no credential reaches it. Ctrl-C ends it."""
    from kailab.web.serve import serve_class

    serve_class(Lab.open(), address, port, stuck_after, lambda s: render.stdout.print(s, markup=False, highlight=False))


@app.command("evidence")
def evidence(
    out: Path = typer.Option(
        Path("class-report.md"), "--out", help="The page: NAME.html (one file) or NAME.md (pictures beside it)."
    ),
    stuck_after: float = StuckOpt,
    force: bool = typer.Option(
        False, "--force", help="Replace --out even if kailab did not write it (or it was changed since)."
    ),
) -> None:
    """Write the class's status as a page to hand round: learners × lessons, predictions, who is stuck, and each
    learner's GPU timelines."""
    from kailab import outfile

    lab = Lab.open()
    klass = lab.klass()
    outfile.check_user_file(out, force, "the class report")  # before the cluster is read
    written = klass.page(lab.kube, out, stuck_after, force)
    render.stdout.print(f"Wrote {', '.join(map(str, written))}", markup=False, highlight=False)


@app.command("demo")
def demo(
    name: str = typer.Argument(..., help="An exercise (see kailab demo --help), or all."),
    learner: str = typer.Option(..., "--learner", help="Whose slice to run it in."),
    as_json: bool = VerdictsJsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Run a built-in exercise in a learner's slice, as they would."""
    from kailab.classroom.joined import slice_line
    from kailab.commands.lessons import report
    from kailab.lesson import lesson_names

    names = lesson_names() if name == "all" else [name]
    if any(n not in lesson_names() for n in names):
        raise KailabError(f"No exercise named {name!r}.", hint=f"Choose one of: {', '.join(lesson_names())}, all.")
    lab = Lab.open()
    klass = lab.klass()
    klass.known(learner)  # an unknown learner is refused before anything is applied
    stderr.print(slice_line(learner), markup=False, highlight=False)
    report(klass.run(lab.kube, learner, names, Progress(quiet or as_json)), as_json)
