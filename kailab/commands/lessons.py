"""Scenarios on the lab: ``run``, ``demo`` (and its ``demo-NAME`` shortcuts), ``lesson`` and its tasks, ``challenge``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from kailab import render
from kailab.commands.options import (
    QuietOpt,
    VerdictsJsonOpt,
    ask,
    ask_prediction,
    complete_demos,
    complete_lessons,
    complete_scenario_files,
)
from kailab.errors import KailabError
from kailab.lab import Lab
from kailab.lesson import EXERCISE_NAMES
from kailab.progress import Progress, stderr

if TYPE_CHECKING:
    from kailab.scenarios.model import Scenario
    from kailab.tasks import Task

EvidenceOpt = typer.Option(False, "--evidence", help="Capture evidence before and after the exercise.")
TaskFileOpt = typer.Option(
    None,
    "--file",
    help="Check this file instead of your copy in kailab-tasks/.",
    autocompletion=complete_scenario_files,
)


def run(
    files: list[Path] = typer.Argument(..., help="Scenario files.", autocompletion=complete_scenario_files),
    as_json: bool = VerdictsJsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Run scenario files (an instructor's own, or a built-in one) and print their verdicts."""
    from kailab.scenarios.loader import load_scenario

    lab = Lab.open()
    scenarios = [lab.scenario(load_scenario(f)) for f in files]  # all checked before anything is applied
    run_and_report(lab, scenarios, as_json, quiet)


def demo(
    name: str = typer.Argument(
        ..., help=f"One of: {', '.join(EXERCISE_NAMES)}, or all.", autocompletion=complete_demos
    ),
    as_json: bool = VerdictsJsonOpt,
    evidence: bool = EvidenceOpt,
    quiet: bool = QuietOpt,
    record: Path | None = typer.Option(
        None,
        hidden=True,
        help="Write each exercise's change stream under this folder (DIR/NAME/changes.jsonl), for the golden tests.",
    ),
    parallel: int | None = typer.Option(
        None,
        "--parallel",
        min=1,
        help="Lessons at once, each in a partition of "
        "its own (local runtime; default 6 for all); 1: one after another.",
    ),
) -> None:
    """Run a built-in exercise (or all of them, or a lesson's variation) and check what KAI did against the lesson."""
    from kailab.lesson import variation_names

    names = list(EXERCISE_NAMES) if name == "all" else [name]
    for n in names:
        if n not in EXERCISE_NAMES and n not in variation_names():
            raise KailabError(
                f"No exercise named {n!r}.",
                hint=f"Choose one of: {', '.join([*EXERCISE_NAMES, *variation_names()])}, all.",
            )
    lab = Lab.open()
    at_once = side_by_side(lab, names, parallel, evidence or record is not None, quiet)
    if at_once > 1:
        verdicts = lab.session(Progress(quiet or as_json)).side_by_side(names, at_once)
        report(verdicts, as_json)
        return
    run_and_report(lab, [lab.exercise(n) for n in names], as_json, quiet, evidence, record)


def side_by_side(lab: Lab, names: list[str], parallel: int | None, sequential_only: bool, quiet: bool) -> int:
    """How many lessons to run at once (:func:`kailab.parallel.at_once`); one after another said, with why, when it
    was asked for or is the default being given up."""
    from kailab.parallel import at_once as how_many

    at_once, why = how_many(names, parallel, sequential_only, lab.side_by_side)
    if why and not quiet:
        stderr.print(f"Running the lessons one after another: {why}.", markup=False, highlight=False)
    return at_once


def demo_shortcut(name: str):
    """``kailab demo-NAME``: ``kailab demo NAME``."""

    def shortcut(as_json: bool = VerdictsJsonOpt, evidence: bool = EvidenceOpt, quiet: bool = QuietOpt) -> None:
        demo(name, as_json=as_json, evidence=evidence, quiet=quiet, record=None, parallel=None)

    shortcut.__doc__ = f"Shortcut for kailab demo {name}."
    return shortcut


def run_and_report(
    lab: Lab, scenarios: list[Scenario], as_json: bool, quiet: bool, evidence: bool = False, record: Path | None = None
) -> None:
    """Run the scenarios in a session of the lab, print their verdicts; exit 1 unless every one passed."""
    session = lab.session(Progress(quiet or as_json), record=record)
    report(session.run_all(scenarios, evidence=evidence, titles=not (quiet or as_json)), as_json)


def report(verdicts: list, as_json: bool) -> None:
    """The verdicts printed; the command's exit status theirs: 1 when one failed, 3 when one was undecided (README)."""
    from kailab.checks import exit_code

    render.print_verdicts(verdicts, as_json)
    if code := exit_code(verdicts):
        raise typer.Exit(code)


def lesson(
    name: str | None = typer.Argument(None, help="An exercise; none lists them.", autocompletion=complete_lessons),
    predict: list[str] = typer.Option(
        [], "--predict", metavar="KEY=VALUE", help="Answer a graded prediction without a prompt (repeat for each)."
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="No prompts (for CI and projectors): skip what --predict leaves."
    ),
    task: int | None = typer.Option(
        None,
        "--task",
        min=1,
        metavar="<N>",
        help="The lesson's task N: the first time, copies its starting file to kailab-tasks/ for you to edit; "
        "after that, runs your file and checks it against the task's goal.",
    ),
    file: Path | None = TaskFileOpt,
) -> None:
    """Walk through one exercise: the concept, your predictions, the run, the result graded, and why KAI did it."""
    from kailab.lesson import DEMO_ONLY_HINT, demo_only, lesson_names, load_lesson, run_lesson
    from kailab.paths import EXERCISES
    from kailab.predictions import given_options

    if name is None:  # in teaching order (the exercise list), then any an instructor added
        names = lesson_names()
        demo = _demo_only_lessons(names)
        render.named_lines(
            [
                (
                    n,
                    f"  {load_lesson(n).one_line}"
                    + ("  [demo-only in a class: your instructor shows it]" if n in demo else ""),
                )
                for n in names
            ],
            max(map(len, names)),
        )
        render.stdout.print("Start one: kailab lesson NAME — its task: kailab lesson NAME --task 1")
        return
    if name not in lesson_names():
        raise KailabError(f"No lesson named {name!r}.", hint=f"Lessons: {', '.join(lesson_names())}.")
    if file is not None and task is None:
        raise typer.BadParameter("--file is the file of a task: give --task N too.", param_hint="--file")
    if task is not None:
        from kailab.tasks import lesson_task

        if (lab := Lab.open()).learner is not None:  # a class's learner: the task is the class's, graded there
            hand_in(lab, "task", f"{name}-{task}", file)
            return
        set_or_check(lesson_task(name, task), file)
        return
    lab = Lab.open()
    les, scenario = load_lesson(name), lab.exercise(name)
    if why := demo_only(lab, scenario):
        render.stdout.print(
            f"{name} is demo-only in a class, not a lesson that failed: {why}. Nothing was run and nothing is "
            f"recorded against you. {DEMO_ONLY_HINT.format(name=name)}",
            markup=False,
            highlight=False,
        )
        return
    given = given_options(scenario.predictions, name, str(EXERCISES / f"{name}.yaml"), predict)  # wrong: nothing runs
    session = lab.session(Progress())  # no lab, or a folder that cannot keep the verdict: no lesson
    session.refuse([scenario])  # nor a lesson that would change another's queue, or use a node the fleet lacks

    def predictions() -> tuple[dict, str]:
        if yes:
            return given, "(skipped: --yes)"
        asking = sys.stdin is not None and sys.stdin.isatty()
        left = [p for p in scenario.predictions if p.key not in given]
        if left and not asking:
            stderr.print(
                "Not asked (no terminal): " + ", ".join(p.key for p in left) + " — give them with --predict KEY=VALUE",
                markup=False,
                highlight=False,
            )
        answers = {**given, **({p.key: v for p in left if (v := ask_prediction(p)) is not None} if asking else {})}
        return answers, ask("Anything else you predict (optional)")  # piped text answers this one

    if code := run_lesson(les, scenario, session, predictions, frame=lab.frame):
        raise typer.Exit(code)


def _demo_only_lessons(names: list[str]) -> set[str]:
    """The lessons this folder's class learner cannot run (the instructor's demos); none for a lab of one's own."""
    from kailab.lesson import demo_only

    try:
        lab = Lab.open()
        return {n for n in names if lab.learner is not None and demo_only(lab, lab.exercise(n))}
    except KailabError:  # no lab, or a damaged join: the list is the same for everyone
        return set()


def _complete_challenges(incomplete: str) -> list[tuple[str, str]]:
    from kailab.tasks import challenges

    try:
        return [(c.name, c.goal) for c in challenges() if c.name.startswith(incomplete)]
    except KailabError:  # an install without challenges: nothing to complete
        return []


def challenge(
    name: str | None = typer.Argument(None, help="A challenge; none lists them.", autocompletion=_complete_challenges),
    file: Path | None = TaskFileOpt,
) -> None:
    """Break and fix: a scenario that goes wrong, its cause hidden. Diagnose it with kailab explain, fix the file,
    and kailab checks it. The first time, your copy is written to kailab-tasks/; after that, it is run and checked."""
    from kailab import tasks

    lab = Lab.open()
    if name is None:
        if lab.learner is not None:  # a class's learner: the class's challenges
            from kailab.classroom.grading import class_challenges

            render.named_lines([(n, f" {goal}") for n, goal in class_challenges(lab.kube)], 10)
        else:
            render.named_lines([(c.name, f" {c.goal}") for c in tasks.challenges()], 10)
        render.stdout.print("Start one: kailab challenge NAME")
        return
    if lab.learner is not None:
        hand_in(lab, "challenge", name, file)
        return
    set_or_check(tasks.challenge(name), file)


def set_or_check(task: Task, file: Path | None) -> None:
    """A task or challenge: its goal; then the learner's copy written (the first time, without --file), or their
    file run with the hidden check after its steps — verdict printed, kept for evidence and in a class's records."""
    from kailab import tasks

    out = render.stdout
    file = goal_and_copy(task, task.kind, file, "check it")
    if file is None:
        return
    lab = Lab.open()
    scenario = lab.scenario(tasks.checked(task, file))  # the file is read and checked before the lab is asked
    session = lab.session(Progress())  # a class learner's keeps the verdict in the cluster, as a lesson's
    session.refuse([scenario])
    verdict = session.run(scenario)
    render.print_verdicts([verdict], as_json=False)
    if verdict.passed and task.runbook:
        out.print(f"Solved. The cause, and how to recognise it next time: {task.runbook}", markup=False)
    elif verdict.not_applicable:  # the check could not be made here: not a pass
        out.print(f"Not checked: this cluster cannot run this {task.kind} (above, why).", markup=False)
        raise typer.Exit(1)
    elif verdict.undecided:  # neither solved nor not: the host was too busy to tell
        out.print(f"Not decided: the host was too busy to tell (above, why). Check {file} again.", markup=False)
        raise typer.Exit(verdict.exit_code)
    elif not verdict.passed:
        out.print(f"Not yet: edit {file} and check it again.", markup=False)
        raise typer.Exit(1)


def goal_and_copy(task: Task, kind: str, file: Path | None, then: str) -> Path | None:
    """A task's goal shown; the file to run (``file``, or the learner's copy), or None when the copy was only just
    written for them (the first time: they edit it, then ``then``)."""
    from rich.panel import Panel

    from kailab import tasks

    render.stdout.print(
        Panel(Text(task.goal), title=Text(f"{kind.capitalize()} {task.name}"), title_align="left"), soft_wrap=False
    )
    if file is not None:
        return file
    file = task.copy_path()
    if tasks.give(task, file):
        shown = file.relative_to(Path.cwd())
        render.stdout.print(
            f"Your copy: {shown} — edit it to reach the goal, then {then}: {task.command}", markup=False
        )
        return None
    return file


def hand_in(lab: Lab, kind: str, name: str, file: Path | None) -> None:
    """A class learner's task (``kind`` "task", ``name`` quota-1) or challenge (ticket-3): its goal and starting file
    from the class (kailab/classroom/grading.py), their copy
    written the first time; after that their file played in their slice, watched as long as the hidden check would
    watch it, and handed in (their file and what the run saw) for their instructor's side to grade."""
    import tempfile

    from kailab import tasks
    from kailab.classroom import grading
    from kailab.classroom.records import record_object

    out = render.stdout
    with tempfile.TemporaryDirectory() as d:
        task = grading.class_task(lab.kube, kind, name, Path(d))
        file = goal_and_copy(task, kind, file, "run it")
        if file is None:
            return
        scenario = lab.scenario(tasks.checked(task, file))  # the file is read and checked before the lab is asked
        session = lab.session(Progress(), record=Path(d) / "run")
        session.refuse([scenario])
        verdict = session.run(scenario)
        streams = list((Path(d) / "run").glob("*/changes.jsonl"))  # none: it stopped before its first step
        if streams:
            lab.kube.apply(grading.submission(record_object(lab.learner, verdict, owner=lab.owner), file, streams[0]))
    if verdict.checks and not verdict.passed or verdict.error or not streams:
        render.print_verdicts([verdict], as_json=False)  # their own steps' expectations, or why the run stopped
    if not streams:
        out.print(
            f"Not handed in: the run stopped before it started (above, why). Run {task.command} again.", markup=False
        )
        raise typer.Exit(1)
    out.print(
        f"Handed in: your instructor's side grades this run against the {kind}'s goal. To hand in again: edit {file} "
        f"and run {task.command}",
        markup=False,
    )
    if verdict.error or verdict.not_applicable:
        raise typer.Exit(1)
