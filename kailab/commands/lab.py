"""The lab itself: ``up``, ``down``, ``status``, ``kubeconfig``, ``queues`` and a learner's ``join``."""

from __future__ import annotations

from pathlib import Path

import typer

from kailab import render
from kailab.commands.options import JsonOpt, QuietOpt
from kailab.errors import KailabError
from kailab.lab import Lab
from kailab.progress import Progress, stderr


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
    address: str | None = typer.Option(
        None,
        "--address",
        metavar="<ip>",
        help="Local and kind runtimes: also open the lab's API server (and nothing else) at this address of this "
        "machine, for a class whose learners join from their own laptops (default: this machine's loopback only).",
    ),
    quiet: bool = QuietOpt,
) -> None:
    """Bring up the lab: a cluster, 32 fake GPUs and KAI Scheduler — or adopt a cluster you have (--runtime existing)."""
    from kailab.fleet import load_fleet
    from kailab.runtimes.base import UpOptions

    spec = load_fleet(fleet)
    if pool:
        spec = spec.with_counts(pool_counts(pool))
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
        address=address,
    )
    info = Lab.open().up(
        options, runtime, Progress(quiet), show_findings=lambda found: render.stdout.print(render.findings_table(found))
    )
    render.stdout.print(
        info.summary
        or f"Lab is up: {spec.total_gpus} GPUs on {spec.node_count} KWOK nodes. "
        f"kubectl --kubeconfig {info.kubeconfig} get nodes"
    )


def pool_counts(items: list[str]) -> dict[str, int]:
    """``--pool NAME=COUNT`` given once per pool."""
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


def down(quiet: bool = QuietOpt) -> None:
    """Stop the lab and remove everything it made (uncaptured verdicts are kept for kailab evidence)."""
    from kailab.classroom.joined import DamagedJoin, forget
    from kailab.paths import lab_home

    progress = Progress(quiet)
    lab = None
    try:
        lab = Lab.open()
    except DamagedJoin as e:  # a join whose record cannot be read: the record goes, nothing on the cluster
        forget(lab_home(), progress, e)
    else:
        lab.remove(progress)
    if (joined := getattr(lab, "joined", None)) is not None:  # a class's learner: their slice stays
        render.stdout.print(
            "Left the class: your lesson records stay for your instructor, your slice for your next lesson. "
            f"Back in: kailab join {joined.kubeconfig}",
            markup=False,
            highlight=False,
        )
        return
    render.stdout.print("Lab removed.")


def status(
    queues: bool = typer.Option(
        False, "--queues", help="Also list queues: quota, limit, weight, fair share, GPUs allocated, pods pending."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Show the lab's components, GPU nodes (used/free) and queues."""
    result = Lab.open().status(with_queues=queues or as_json)
    if as_json:
        render.print_json(result)
    else:
        for table in render.status_tables(result):
            render.stdout.print(table)
    if not result["healthy"]:
        raise typer.Exit(1)


def kubeconfig() -> None:
    """Print the path of the lab's kubeconfig (for kubectl --kubeconfig)."""
    lab = Lab.open()
    print(lab.kubeconfig())
    if ctx := lab.context():
        stderr.print(f'The lab uses its context {ctx}: kubectl --kubeconfig "$(kailab kubeconfig)" --context {ctx} …')


def apply_queues(quiet: bool = QuietOpt) -> None:
    """Apply the lesson's queue hierarchy from manifests/queues.yaml."""
    render.stdout.print(render.queue_table(Lab.open().apply_lesson_queues(Progress(quiet))))


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
