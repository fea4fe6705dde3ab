"""The kailab command line: each command parses its options, calls into the package, renders the result.

Errors are KailabError: printed once, with what to do, exit code 1; no tracebacks
unless ``KAILAB_DEBUG=1``.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from kailab import lab, render, versions
from kailab.errors import KailabError, NotRunning
from kailab.lesson import EXERCISE_NAMES
from kailab.progress import Progress, stderr

if TYPE_CHECKING:
    from kailab.tasks import Task

# The epilog stands for the hidden demo-NAME shortcuts (one line, not twelve commands).
app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="A lab that teaches GPU queue scheduling with KAI Scheduler on a fleet of fake GPUs.",
    epilog="demo-NAME   shortcut for demo NAME: kailab demo-quota, kailab demo-borrow, …",
)


def _flags_without_a_type() -> None:
    """Typer 0.29's rich help prints a type beside every option, flags too ("--help <bool>"), though a flag takes no
    value; its plain help does not. Flags get none here, for every command; options that take a value keep theirs."""
    from typer.core import TyperOption

    typed = getattr(TyperOption, "display_type_rich", None)
    if typed is None or hasattr(typed, "__wrapped__"):
        return  # a Typer without it, or replaced already

    @functools.wraps(typed)
    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:  # ctx: a click Context (Typer vendors click)
        return None if self.is_flag else typed(self, ctx)

    # Replacing Typer's method is the point here; mypy's method-assign is there to catch it done by mistake.
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_a_type()


QuietOpt = typer.Option(False, "--quiet", "-q", help="Print results only, no progress lines.")


def _complete_lessons(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion: the exercises (in teaching order), with their one-line summaries."""
    from kailab.lesson import load_lesson

    return [(n, load_lesson(n).one_line) for n in EXERCISE_NAMES if n.startswith(incomplete)]


def _complete_demos(incomplete: str) -> list[tuple[str, str]]:
    return _complete_lessons(incomplete) + [("all", "every exercise, in order")]


def _complete_scenario_files(incomplete: str) -> list[str]:
    """Shell completion: scenario files (.yaml, .yml) and folders under what is typed so far."""
    folder, _, stem = incomplete.rpartition("/")
    base = Path(folder or ".")
    if not base.is_dir():
        return []
    found = sorted(
        p
        for p in base.iterdir()
        if p.name.startswith(stem) and not p.name.startswith(".") and (p.is_dir() or p.suffix in (".yaml", ".yml"))
    )
    return [f"{folder}/{p.name}" if folder else p.name for p in found]


def _runtime_name(value: str) -> str:
    from kailab.runtimes import runtime_names

    if value != "auto" and value not in runtime_names():
        raise typer.BadParameter(f"{value!r} is not a runtime; choose auto, {', '.join(runtime_names())}.")
    return value


def _prefix(value: str | None) -> str | None:
    from kailab.scenarios.prefix import check_prefix

    try:
        return None if value is None else check_prefix(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e


@app.command()
def up(
    runtime: str = typer.Option(
        "auto",
        callback=_runtime_name,
        help="auto (kind when Docker answers, else local), local, kind, or existing "
        "(adopt a cluster you already have; never chosen by auto).",
    ),
    fleet: Path | None = typer.Option(None, help="A fleet file (see manifests/fleet.yaml)."),
    pool: list[str] = typer.Option([], metavar="<pool=count>", help="Resize a pool: --pool a100=3 (repeatable)."),
    no_kai: bool = typer.Option(
        False, "--no-kai", help="Local runtime: the fleet without KAI (only the default kube-scheduler)."
    ),
    apiserver_port: int | None = typer.Option(
        None,
        min=1,
        max=65535,
        metavar="<port>",
        help="Local runtime: a fixed port for kube-apiserver (default: a free one).",
    ),
    retain: bool = typer.Option(
        False,
        "--retain",
        help="Local runtime: keep a half-made lab after a failure, to debug "
        "it (the kind and existing runtimes always keep it).",
    ),
    kubeconfig_path: Path | None = typer.Option(
        None,
        "--kubeconfig",
        help="Existing runtime: the cluster's kubeconfig (default: $KUBECONFIG "
        "or ~/.kube/config); used where it is, never copied.",
    ),
    context: str | None = typer.Option(None, help="Existing runtime: a context of that kubeconfig."),
    kwok: bool = typer.Option(
        False,
        "--kwok",
        help="Existing runtime: install KWOK and kailab's fleet of fake GPUs there "
        "(labelled as this lab's; down removes them).",
    ),
    prefix: str | None = typer.Option(
        None,
        callback=_prefix,
        help="Existing runtime: NAME- in front of every queue and namespace of this "
        "lab, so several labs share one cluster.",
    ),
    offline: bool = typer.Option(
        False,
        "--offline",
        help="Kind runtime: pull nothing; build the node image, KAI's and KWOK's images, kind and helm here "
        "(automatic when no image registry answers). First time about 15 minutes; cached after.",
    ),
    quiet: bool = QuietOpt,
) -> None:
    """Bring up the lab: a cluster, 32 fake GPUs and KAI Scheduler — or adopt a cluster you have (--runtime existing)."""
    from kailab.fleet import load_fleet
    from kailab.runtimes import check_options, choose_runtime, get_runtime
    from kailab.runtimes.base import UpOptions

    progress = Progress(quiet)
    spec = load_fleet(fleet)
    if pool:
        spec = spec.with_counts(_pool_counts(pool))
    options = UpOptions(
        fleet=spec,
        with_kai=not no_kai,
        retain=retain,
        apiserver_port=apiserver_port,
        fleet_given=bool(fleet or pool),
        kubeconfig=kubeconfig_path,
        context=context,
        kwok=kwok,
        prefix=prefix,
        offline=offline,
    )
    running = lab.state()
    if running and runtime not in ("auto", running.runtime):
        raise KailabError(
            f"A lab is already running on the {running.runtime} runtime.", hint="Remove it first: kailab down"
        )
    if running and running.shape and running.shape != spec.describe():
        raise KailabError(
            f"The lab that is up has another fleet ({running.shape}); "
            f"kailab up does not change a running lab's fleet to {spec.describe()}.",
            hint="Start again with the new fleet: kailab down && kailab up "
            + " ".join(a for a in sys.argv[2:] if a not in ("-q", "--quiet")),
        )
    if running:
        cls, why = get_runtime(running.runtime), "the lab that is running"
    else:
        cls, why = choose_runtime(runtime)
    check_options(cls, options)
    progress.info(Text.assemble("Runtime: ", (cls.name, "bold"), f" ({why})"))
    rt = cls()
    found = rt.preflight(options)  # an adopted cluster is checked, and said, before anything changes
    if found:
        render.stdout.print(render.findings_table(found))
    info = rt.up(options, progress)
    render.stdout.print(
        info.summary
        or f"Lab is up: {spec.total_gpus} GPUs on {spec.node_count} KWOK nodes. "
        f"kubectl --kubeconfig {info.kubeconfig} get nodes"
    )


@app.command()
def down(quiet: bool = QuietOpt) -> None:
    """Stop the lab and remove everything it made (uncaptured verdicts are kept for kailab evidence)."""
    lab.remove(Progress(quiet))
    render.stdout.print("Lab removed.")


@app.command()
def status(
    queues: bool = typer.Option(
        False, "--queues", help="Also list queues: quota, limit, weight, fair share, GPUs allocated, pods pending."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the lab's components, GPU nodes (used/free) and queues."""
    from kailab.status import lab_status

    rt = lab.current_runtime()
    info = rt.info() if rt else None
    if info is None:
        raise NotRunning("No lab is running.", hint="Start one: kailab up")
    kube = None
    try:
        kube = lab.connect()
    except NotRunning:
        pass
    with_queues = queues or as_json
    result = lab_status(
        info, kube, with_queues, lab.fair_shares() if with_queues and kube else None, lab.scheduler_metrics()
    )
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        for table in render.status_tables(result):
            render.stdout.print(table)
    if not result["healthy"]:
        raise typer.Exit(1)


@app.command()
def kubeconfig() -> None:
    """Print the path of the lab's kubeconfig (for kubectl --kubeconfig)."""
    print(lab.kubeconfig())
    if ctx := lab.context():
        stderr.print(f'The lab uses its context {ctx}: kubectl --kubeconfig "$(kailab kubeconfig)" --context {ctx} …')


@app.command("queues")
def apply_queues(quiet: bool = QuietOpt) -> None:
    """Apply the lesson's queue hierarchy from manifests/queues.yaml."""
    from kailab import ownership
    from kailab.scenarios.loader import LESSON_QUEUES, load_queue_file
    from kailab.scenarios.manifests import queue_object
    from kailab.scenarios.prefix import prefixed_queues
    from kailab.status import queues as list_queues

    kube = lab.connect()
    specs = load_queue_file(LESSON_QUEUES)
    state, joined = lab.state(), lab.joined()
    if prefix := joined.learner if joined else state.prefix if state else "":  # a learner's queues are <learner>-…
        specs = prefixed_queues(specs, prefix)
    objects = [queue_object(q) for q in specs]
    cluster = lab.live_cluster(kube)
    if taken := cluster.foreign(objects):
        raise ownership.refused(taken)
    with Progress(quiet).step(f"Applying {len(specs)} queues from {LESSON_QUEUES.name}"):
        for obj in objects:
            cluster.apply(obj)
    queues_selector = lab.slice_selectors()[0]  # a learner: their queues, counted from their pods
    shown = list_queues(kube, lab.pods(kube), lab.fair_shares(), queues_selector)
    render.stdout.print(render.queue_table(shown))


@app.command()
def run(
    files: list[Path] = typer.Argument(..., help="Scenario files.", autocompletion=_complete_scenario_files),
    as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
    quiet: bool = QuietOpt,
) -> None:
    """Run scenario files (an instructor's own, or a built-in one) and print their verdicts."""
    from kailab.scenarios.loader import load_scenario

    scenarios = [lab.for_this_lab(load_scenario(f)) for f in files]  # all checked before anything is applied
    _run_and_report(scenarios, as_json, quiet)


@app.command()
def demo(
    name: str = typer.Argument(
        ..., help=f"One of: {', '.join(EXERCISE_NAMES)}, or all.", autocompletion=_complete_demos
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
    evidence: bool = typer.Option(False, "--evidence", help="Capture evidence before and after the exercise."),
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
    from kailab.lesson import scenario_file, variation_names
    from kailab.scenarios.loader import load_scenario

    names = list(EXERCISE_NAMES) if name == "all" else [name]
    for n in names:
        if n not in EXERCISE_NAMES and n not in variation_names():
            raise KailabError(
                f"No exercise named {n!r}.",
                hint=f"Choose one of: {', '.join([*EXERCISE_NAMES, *variation_names()])}, all.",
            )
    at_once = _side_by_side(names, parallel, evidence or record is not None, quiet)
    if at_once > 1:
        _side_by_side_report(names, at_once, as_json, quiet)
        return
    scenarios = [lab.for_this_lab(load_scenario(scenario_file(n))) for n in names]
    _run_and_report(scenarios, as_json, quiet, evidence, record)


def _side_by_side(names: list[str], parallel: int | None, sequential_only: bool, quiet: bool) -> int:
    """How many lessons to run at once: side by side by default for several on a lab that can; 1 otherwise,
    said when it was asked for or is the default being given up."""
    import psutil

    from kailab.classroom import plan, side_by_side

    wanted = parallel if parallel is not None else (side_by_side.DEFAULT_PARALLEL if len(names) > 1 else 1)
    if wanted <= 1 or len(names) <= 1:
        return 1
    s = lab.state()
    why = (
        "--evidence and the golden recordings need the lab's own names"
        if sequential_only
        else (
            "you run a class learner's slice"
            if lab.joined()
            else side_by_side.unavailable(lab.current_runtime(), s.prefix if s else "")
        )
    )
    fit = plan.partitions_that_fit(psutil.virtual_memory().available)
    if not why and fit < 2:
        why = f"this machine has memory for {fit} lesson partition{'s' if fit != 1 else ''} now"
    if why:
        if not quiet:
            stderr.print(f"Running the lessons one after another: {why}.", markup=False, highlight=False)
        return 1
    return min(wanted, fit, len(names))


def _side_by_side_report(names: list[str], at_once: int, as_json: bool, quiet: bool) -> None:
    from kailab import evidence as ev
    from kailab.classroom.side_by_side import SideBySide
    from kailab.fleet import load_fleet
    from kailab.kube import Kube
    from kailab.paths import lab_home

    lab.connect()  # the lab answers, or a clear error before anything is made
    ev.check_recordable(lab_home())
    rt = lab.current_runtime()
    if rt is None:
        raise NotRunning("No lab is running.", hint="Start one: kailab up")
    kubeconfig = rt.kubeconfig()
    run = SideBySide(
        rt, load_fleet(), lambda: Kube(kubeconfig), Progress(quiet or as_json), at_once, own=lab.live_cluster
    )
    verdicts = run.run(names)
    for v in verdicts:
        ev.record_verdict(lab_home(), v.to_record())
    render.print_verdicts(verdicts, as_json)
    from kailab.checks import exit_code

    if code := exit_code(verdicts):  # 1 failed, 3 undecided (README)
        raise typer.Exit(code)


def _demo_shortcut(name: str):
    def shortcut(
        as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
        evidence: bool = typer.Option(False, "--evidence", help="Capture evidence before and after the exercise."),
        quiet: bool = QuietOpt,
    ) -> None:
        demo(name, as_json=as_json, evidence=evidence, quiet=quiet, record=None, parallel=None)

    shortcut.__doc__ = f"Shortcut for kailab demo {name}."
    return shortcut


for _name in EXERCISE_NAMES:  # kailab demo-quota, demo-borrow …: one per exercise, listed once in --help (the epilog)
    app.command(f"demo-{_name}", hidden=True)(_demo_shortcut(_name))


def _run_and_report(scenarios, as_json: bool, quiet: bool, evidence: bool = False, record: Path | None = None) -> None:
    from kailab import evidence as ev
    from kailab.paths import lab_home

    kube = lab.connect()
    ev.check_recordable(lab_home())  # before the run: a verdict is never lost for want of a place to keep it
    progress = Progress(quiet or as_json)
    engine = lab.engine(kube, progress, record=record)
    engine.refuse_foreign(scenarios)  # another's queue or priority class of the same name: nothing is applied
    engine.refuse_unknown_nodes(scenarios)  # a node the fleet does not have: nothing is applied
    verdicts = []
    if evidence:
        _capture(kube, progress, "before the exercise", allow_empty=True)
    for s in scenarios:
        if not (quiet or as_json):
            stderr.rule(Text(f"{s.title} ({s.path})"))
        v = engine.run(s)
        ev.record_verdict(lab_home(), v.to_record())
        verdicts.append(v)
    if evidence:
        _capture(kube, progress, "after the exercise")
    render.print_verdicts(verdicts, as_json)
    from kailab.checks import exit_code

    if code := exit_code(verdicts):  # 1 failed, 3 undecided (README)
        raise typer.Exit(code)


@app.command()
def explain(
    name: str = typer.Argument(..., help="A pod, a Job or a scenario's workload (explains each of its pods)."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Namespace, as kubectl's -n."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Say in plain words why a pod is where it is, from what KAI reported, and which runbook to read."""
    from dataclasses import asdict

    from kailab.explain import gather

    kube = lab.connect()
    _, nodes = lab.slice_selectors()
    found = gather(
        kube, name, namespace, lab.fair_shares(), lab.pods(kube) if nodes else None, nodes, lab.queue_usage()
    )
    if not found:
        raise KailabError(
            f"No pod or Job named {name!r} in namespace {namespace}.",
            hint="Name the namespace with -n (the exercises use kailab-<exercise>, after your "
            "lab's prefix and a '-' if it has one).",
        )
    if as_json:
        print(json.dumps([asdict(e) for e in found], indent=2))
        return
    for e in found:
        render.stdout.print(Text.assemble((e.pod, "bold"), f" — {e.state}: {e.summary}"))
        if e.reported:
            render.stdout.print(f"  the scheduler says: “{e.reported}”")
        for d in e.details:
            render.stdout.print(f"  {d}")
        if e.runbook:
            render.stdout.print(f"  read: {e.runbook}")


@app.command()
def watch(once: bool = typer.Option(False, "--once", help="Print one frame and exit.")) -> None:
    """Live view: queues (quota, limit, weight, allocated, pending) and every GPU, coloured by queue. Ctrl-C ends it."""
    from kailab import watch as live

    kube = lab.connect()
    if once:
        render.stdout.print(live.current_frame(kube, lab.pods(kube), lab.fair_shares(), *lab.slice_selectors()))
        return
    live.run(
        kube,
        render.stdout,
        fair_shares=lab.fair_shares,
        namespaces=lab.pod_namespaces(kube),
        selectors=lab.slice_selectors(),
    )


TaskFileOpt = typer.Option(
    None,
    "--file",
    help="Check this file instead of your copy in kailab-tasks/.",
    autocompletion=_complete_scenario_files,
)


@app.command()
def lesson(
    name: str | None = typer.Argument(None, help="An exercise; none lists them.", autocompletion=_complete_lessons),
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
    from kailab.lesson import lesson_names, load_lesson, run_lesson
    from kailab.paths import EXERCISES
    from kailab.predictions import given_options
    from kailab.scenarios.loader import load_scenario
    from kailab.watch import current_frame

    if name is None:  # in teaching order (the exercise list), then any an instructor added
        names = lesson_names()
        width = max(map(len, names))
        for n in names:
            render.stdout.print(Text.assemble((f"{n:<{width}}", "bold"), f"  {load_lesson(n).one_line}"))
        render.stdout.print("Start one: kailab lesson NAME — its task: kailab lesson NAME --task 1")
        return
    if name not in lesson_names():
        raise KailabError(f"No lesson named {name!r}.", hint=f"Lessons: {', '.join(lesson_names())}.")
    if file is not None and task is None:
        raise typer.BadParameter("--file is the file of a task: give --task N too.", param_hint="--file")
    if task is not None:
        from kailab.tasks import lesson_task

        _set_or_check(lesson_task(name, task), file)
        return
    path = EXERCISES / f"{name}.yaml"
    les, scenario = load_lesson(name), lab.for_this_lab(load_scenario(path))
    given = given_options(scenario.predictions, name, str(path), predict)  # a wrong answer: nothing runs
    kube = lab.connect()  # before asking for a prediction: no lab, no lesson
    from kailab import evidence
    from kailab.paths import lab_home

    evidence.check_recordable(lab_home())  # nor a lesson whose verdict could not be kept
    engine = lab.engine(kube, Progress())
    engine.refuse_foreign([scenario])  # nor a lesson that would change another's queue
    engine.refuse_unknown_nodes([scenario])  # a node the fleet does not have: nothing is applied

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
        answers = {**given, **({p.key: v for p in left if (v := _ask_prediction(p)) is not None} if asking else {})}
        return answers, _ask("Anything else you predict (optional)")  # piped text answers this one

    if code := run_lesson(
        les,
        scenario,
        engine,
        predictions,
        frame=lambda: current_frame(kube, lab.pods(kube), lab.fair_shares(), *lab.slice_selectors()),
        keep=lambda verdict, prediction, graded: lab.record_in_class(kube, verdict, prediction, graded),
    ):
        raise typer.Exit(code)


def _complete_challenges(incomplete: str) -> list[tuple[str, str]]:
    from kailab.tasks import challenges

    return [(c.name, c.goal) for c in challenges() if c.name.startswith(incomplete)]


@app.command()
def challenge(
    name: str | None = typer.Argument(None, help="A challenge; none lists them.", autocompletion=_complete_challenges),
    file: Path | None = TaskFileOpt,
) -> None:
    """Break and fix: a scenario that goes wrong, its cause hidden. Diagnose it with kailab explain, fix the file,
    and kailab checks it. The first time, your copy is written to kailab-tasks/; after that, it is run and checked."""
    from kailab import tasks

    if name is None:
        for c in tasks.challenges():
            render.stdout.print(Text.assemble((f"{c.name:<10}", "bold"), f" {c.goal}"))
        render.stdout.print("Start one: kailab challenge NAME")
        return
    _set_or_check(tasks.challenge(name), file)


def _set_or_check(task: Task, file: Path | None) -> None:
    """A task or challenge: its goal; then the learner's copy written (the first time, without --file), or their
    file run with the hidden check after its steps — verdict printed, kept for evidence and in a class's records."""
    from rich.panel import Panel

    from kailab import evidence, tasks
    from kailab.paths import lab_home

    out = render.stdout
    out.print(
        Panel(Text(task.goal), title=Text(f"{task.kind.capitalize()} {task.name}"), title_align="left"), soft_wrap=False
    )
    if file is None:
        file = task.copy_path()
        if tasks.give(task, file):
            shown = file.relative_to(Path.cwd())
            out.print(f"Your copy: {shown} — edit it to reach the goal, then check it: {task.command}", markup=False)
            return
    scenario = lab.for_this_lab(tasks.checked(task, file))  # the file is read and checked before the lab is asked
    kube = lab.connect()
    evidence.check_recordable(lab_home())
    engine = lab.engine(kube, Progress())  # a class learner's keeps the verdict in the cluster, as a lesson's
    engine.refuse_foreign([scenario])
    engine.refuse_unknown_nodes([scenario])
    verdict = engine.run(scenario)
    render.print_verdicts([verdict], as_json=False)
    evidence.record_verdict(lab_home(), verdict.to_record())
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


@app.command("evidence")
def evidence_cmd(
    out: Path | None = typer.Option(None, help="Write the snapshot here instead of evidence/<UTC timestamp>/."),
) -> None:
    """Snapshot the running lab into evidence/<UTC timestamp>/: objects, events, verdicts, report.md, timeline.png."""
    path = _capture(lab.connect(), Progress(), "of the lab", out=out)
    render.stdout.print(f"Evidence written: {path}/report.md")


def _capture(kube, progress: Progress, what: str, out: Path | None = None, allow_empty: bool = False) -> Path | None:
    from kailab import evidence as ev
    from kailab.labels import SCENARIO_LABEL
    from kailab.paths import lab_home

    try:
        with progress.step(f"Capturing evidence {what}") as step:
            path = ev.capture(
                kube,
                lab_home(),
                Path.cwd() / "evidence",
                out,
                lab.fair_shares(),
                namespaces=lab.owner().selector(SCENARIO_LABEL),
                slice_of=lab.slice_selectors(),
            )
            step.note(str(path))
    except ev.NothingToCapture as e:
        if allow_empty:
            progress.info(f"Nothing to capture {what}: {e}")
            return None
        raise KailabError(f"Nothing captured: {e}", hint="Run an exercise first, e.g. kailab demo quota") from e
    except OSError as e:  # --out that exists, under a file, in /proc, on a full disk
        if isinstance(e, FileExistsError) and e.errno is None:  # write_snapshot's own: it never overwrites
            raise KailabError(f"Nothing captured: {e}.", hint="Choose another --out.") from e
        why = "a file is in the way" if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror or str(e)
        raise KailabError(
            f"Nothing captured: cannot write {e.filename or out or 'the evidence folder'}: {why}.",
            hint="Choose an --out in a folder you can write.",
        ) from None
    return path


@app.command()
def bench(
    nodes: int = typer.Option(4, min=1, max=5000, help="KWOK nodes to add for the run."),
    gpus_per_node: int = typer.Option(8, min=1, max=64, help="GPUs on each of them."),
    pods: int = typer.Option(32, min=1, max=100000, help="One-GPU pods in the Job (at most nodes × GPUs)."),
    scheduler: str = typer.Option("both", help="kai, default (kube-scheduler) or both."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Time KAI binding one Job's pods, beside the default kube-scheduler, on the running lab: to all bound,
    to all Running, pods/s, and each stage (created → grouped → bound → Running) by the cluster's clock."""
    from kailab import bench as b

    rt = lab.current_runtime()
    if rt is not None and not rt.makes_cluster:
        raise KailabError(
            "kailab bench adds nodes and a queue of its own names for its run, so it runs only on a "
            "cluster kailab made, not on an adopted one.",
            hint="Run it on a lab of its own: KAILAB_HOME=/tmp/bench-lab kailab up && "
            "KAILAB_HOME=/tmp/bench-lab kailab bench",
        )
    if scheduler not in ("kai", "default", "both"):
        raise typer.BadParameter(f"{scheduler!r}: choose kai, default or both.", param_hint="--scheduler")
    if pods > nodes * gpus_per_node:
        raise typer.BadParameter(f"{pods} pods do not fit on {nodes} × {gpus_per_node} GPUs.", param_hint="--pods")
    names = [b.SCHEDULERS[s] for s in (("default", "kai") if scheduler == "both" else (scheduler,))]
    runs = b.run(
        lab.connect(),
        names,
        pods,
        nodes,
        gpus_per_node,
        Progress(as_json),
        memory=rt.memory_mib if rt is not None else None,
    )
    if as_json:
        print(
            json.dumps(
                {
                    "nodes": nodes,
                    "gpus_per_node": gpus_per_node,
                    "runs": [r.to_dict() for r in runs],
                    "kai_vs_default": render.ratio(runs),
                },
                indent=2,
            )
        )
    else:
        render.stdout.print(render.bench_table(runs))
    if not all(r.finished for r in runs):
        raise typer.Exit(1)


@app.command()
def doctor() -> None:
    """Check the tools each runtime needs and say how to install what is missing."""
    from rich.table import Table

    from kailab.doctor import diagnose

    findings = diagnose()
    table = Table(title="kailab doctor", title_justify="left")
    for col in ("", "tool", "found", "needed for", "how to fix"):
        table.add_column(col)
    for f in findings:
        table.add_row(
            Text("✓", style="green") if f.ok else Text("✗", style="red"), f.tool, f.found, f.needed_for, f.fix
        )
    render.stdout.print(table)
    usable = {rt for rt in ("kind runtime", "local runtime") if all(f.ok for f in findings if f.needed_for == rt)}
    render.stdout.print(f"Usable here: {', '.join(sorted(usable)) or 'none'}")
    if not usable:
        raise typer.Exit(1)


@app.command()
def version() -> None:
    """Print kailab's pinned versions."""
    from kailab import __version__

    print(json.dumps({"kailab": __version__, **versions.as_dict()}, indent=2))


def _pool_counts(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        name, _, count = item.partition("=")
        if not (count.isascii() and count.isdigit()):  # "٣" and "²" are digits to Python, not to a fleet
            raise KailabError(f"--pool {item!r} is not POOL=COUNT.", hint="Example: --pool a100=3")
        if name in out:
            raise KailabError(
                f"--pool gives pool {name!r} twice ({name}={out[name]} and {item}).",
                hint=f"Give each pool once: --pool {name}={count}",
            )
        out[name] = int(count)
    return out


def _ask(question: str) -> str:
    """A prompt that reads a closed or non-interactive stdin as 'no answer', not as an error."""
    if not sys.stdin or not sys.stdin.isatty():
        line = sys.stdin.readline() if sys.stdin else ""
        return line.strip() or "(no prediction given)"
    return typer.prompt(question, default="(no prediction given)", show_default=False)


def _ask_prediction(p):
    """A graded prediction's answer from the terminal, asked again until it is one; None if left empty."""
    from kailab.predictions import how_to_answer, parse

    while True:
        text = typer.prompt(f"{p.ask} ({how_to_answer(p)}; Enter skips)", default="", show_default=False)
        if not text.strip():
            return None
        try:
            return parse(p, text)
        except ValueError as e:
            stderr.print(Text.assemble(("✗", "red"), f" {e}"))


@app.command()
def join(file: Path = typer.Argument(..., help="The kubeconfig your instructor handed out (NAME.kubeconfig).")) -> None:
    """Join a class with your credential: kailab's commands then act on your slice of the class's cluster."""
    from kailab.classroom.joined import join as join_class
    from kailab.paths import lab_home

    j = join_class(file, lab_home())
    render.stdout.print(
        f"Joined as {j.learner}. Try: kailab lesson quota — kailab down leaves the class.",
        markup=False,
        highlight=False,
    )


@app.callback()
def _slice() -> None:
    """Every command of a learner who joined a class first says whose slice it acts on."""
    try:
        j = lab.joined()
    except Exception:  # noqa: BLE001 (a damaged file: the command itself says what is wrong)
        j = None
    if j is not None:
        from kailab.classroom.lessons import slice_line

        stderr.print(slice_line(j.learner), markup=False, highlight=False)


def _add_class_commands() -> None:
    from kailab.classroom.cli import app as class_app

    app.add_typer(class_app, name="class")


_add_class_commands()


def _api_refused(e) -> None:
    """An API error no command turned into words: what the server said, and for 403 what to ask for."""
    from kailab.kube import api_error_words

    stderr.print(
        Text.assemble(("✗ Error:", "red"), f" The cluster's API server refused a request: {api_error_words(e)}.")
    )
    hint = (
        "The kubeconfig's user lacks that permission (the verb, resource and API group above): ask the "
        "cluster's admin to grant it, or use a kubeconfig with those rights."
        if e.status == 403
        else "See: kailab status"
    )
    stderr.print(Text.assemble(("→", "yellow"), f" {hint}"))
    sys.exit(1)


def _os_failed(e: OSError) -> None:
    """A write the system refused: to the output (a full device, a closed pipe) or to a named file."""
    import errno

    try:
        sys.stdout = open(os.devnull, "w")  # the interpreter's own last flush must not fail again
    except OSError:
        pass
    if e.errno == errno.EPIPE:  # `kailab status | head -1`: the reader has all it wanted
        sys.exit(1)
    where = f"{e.filename}" if e.filename else "kailab's output"
    try:
        stderr.print(Text.assemble(("✗ Error:", "red"), f" Cannot write {where}: {e.strerror or e}."))
        stderr.print(
            Text.assemble(
                ("→", "yellow"),
                " Free some space or choose another place, then run again."
                if e.errno in (errno.ENOSPC, errno.EDQUOT)
                else " Choose a place you can write.",
            )
        )
    except OSError:
        pass  # stderr too is full or closed: the exit code says it
    sys.exit(1)


def _stop_like_ctrl_c(signum, frame) -> None:
    raise KeyboardInterrupt  # the same clean-up as Ctrl-C: a half-made lab, the bench's nodes, are removed


def main() -> None:
    """Entry point. Typer reports usage errors itself (exit 2); a KailabError is printed once, exit 1.
    SIGTERM (a CI timeout, ``kill``) stops a command as Ctrl-C does, so its clean-up runs."""
    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)
    try:
        try:
            app()  # standalone: usage errors, --help and Ctrl-C are Typer's; it ends with SystemExit
        finally:
            sys.stdout.flush()  # here, where a full disk or a closed pipe is said, not at the interpreter's exit
    except KailabError as e:
        if os.environ.get("KAILAB_DEBUG"):
            raise
        stderr.print(Text.assemble(("✗ Error:", "red"), f" {e.message}"))
        if e.details:
            stderr.print(e.details)
        if e.hint:
            stderr.print(Text.assemble(("→", "yellow"), f" {e.hint}"))
        sys.exit(e.exit_code)
    except OSError as e:  # output to a full disk or a closed pipe, a folder that cannot be written
        if os.environ.get("KAILAB_DEBUG"):
            raise
        _os_failed(e)
    except Exception as e:  # API errors, bugs: one line, not a traceback
        if os.environ.get("KAILAB_DEBUG"):
            raise
        if getattr(e, "status", None) == 401:  # kubernetes' ApiException and the dynamic client's errors carry it
            stderr.print(
                Text.assemble(
                    ("✗ Error:", "red"),
                    " The cluster no longer accepts this lab's credential (401 "
                    "Unauthorized). A class credential: your class has ended or your credential "
                    "was revoked.",
                )
            )
            stderr.print(
                Text.assemble(
                    ("→", "yellow"), " Ask your instructor for a new kubeconfig; for a lab of your own: kailab up"
                )
            )
            sys.exit(1)
        from kubernetes.client.exceptions import ApiException

        if isinstance(e, ApiException):
            _api_refused(e)
        stderr.print(Text.assemble(("✗ Unexpected error:", "red"), f" {type(e).__name__}: {str(e).strip()[:600]}"))
        stderr.print(
            Text.assemble(("→", "yellow"), " Run again with KAILAB_DEBUG=1 for the traceback, and please report it.")
        )
        sys.exit(1)
