"""This machine and kailab itself: ``bench`` (KAI against kube-scheduler on the lab), ``doctor``, ``version``."""

from __future__ import annotations

import typer

from kailab import render
from kailab.commands.options import JsonOpt
from kailab.errors import KailabError
from kailab.lab import Lab
from kailab.progress import Progress


def bench(
    nodes: int = typer.Option(4, min=1, max=5000, help="KWOK nodes to add for the run."),
    gpus_per_node: int = typer.Option(8, min=1, max=64, help="GPUs on each of them."),
    pods: int = typer.Option(32, min=1, max=100000, help="One-GPU pods in the Job (at most nodes × GPUs)."),
    scheduler: str = typer.Option("both", help="kai, default (kube-scheduler) or both."),
    as_json: bool = JsonOpt,
) -> None:
    """Time KAI binding one Job's pods, beside the default kube-scheduler, on the running lab: to all bound,
    to all Running, pods/s, and each stage (created → grouped → bound → Running) by the cluster's clock."""
    from kailab import bench as b

    lab = Lab.open()
    if lab.runtime is not None and not lab.runtime.traits.makes_cluster:
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
    b.check_size(nodes, gpus_per_node, pods, names)  # a size this machine cannot hold: refused, nothing made
    runs = b.run(lab.kube, names, pods, nodes, gpus_per_node, Progress(as_json), memory=lab.capabilities.memory)
    if as_json:
        render.print_json(render.bench_json(runs, nodes, gpus_per_node))
    else:
        render.stdout.print(render.bench_table(runs))
    if not all(r.finished for r in runs):
        raise typer.Exit(1)


def doctor() -> None:
    """Check the tools each runtime needs and say how to install what is missing."""
    from kailab.doctor import diagnose

    findings = diagnose()
    render.stdout.print(render.doctor_table(findings))
    usable = {rt for rt in ("kind runtime", "local runtime") if all(f.ok for f in findings if f.needed_for == rt)}
    render.stdout.print(f"Usable here: {', '.join(sorted(usable)) or 'none'}")
    if not usable:
        raise typer.Exit(1)


def version() -> None:
    """Print kailab's pinned versions."""
    from kailab import __version__, versions

    render.print_json({"kailab": __version__, **versions.as_dict()})
