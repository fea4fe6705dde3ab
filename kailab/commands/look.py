"""Looking at the lab: ``explain``, ``watch``, ``serve`` and ``evidence``."""

from __future__ import annotations

from pathlib import Path

import typer

from kailab import render
from kailab.commands.options import JsonOpt
from kailab.errors import KailabError
from kailab.lab import Lab
from kailab.progress import Progress, stderr
from kailab.view import learner_view


def explain(
    name: str = typer.Argument(
        ...,
        help="A pod, a Job, a scenario's workload, or an operator's object (a RayCluster, PyTorchJob, JobSet or "
        "LeaderWorkerSet; KIND/NAME to say which): explains each of its pods.",
    ),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Namespace, as kubectl's -n."),
    as_json: bool = JsonOpt,
) -> None:
    """Say in plain words why a pod is where it is, from what KAI reported, and which runbook to read."""
    from dataclasses import asdict

    found = Lab.open().explain(name, namespace)
    if not found:
        raise KailabError(
            f"No pod or Job named {name!r} in namespace {namespace}.",
            hint="Name the namespace with -n (the exercises use kailab-<exercise>, after your "
            "lab's prefix and a '-' if it has one).",
        )
    if as_json:
        render.print_json([asdict(e) for e in found])
        return
    render.explanations(found)


def watch(
    once: bool = typer.Option(False, "--once", help="Print one frame and exit."),
    learner: str | None = typer.Option(
        None,
        "--learner",
        help="The instructor's: one learner's slice of the class — their queues with the fair shares KAI gives them, "
        "their nodes and pods.",
    ),
) -> None:
    """Live view: queues (quota, limit, weight, allocated, pending) and every GPU, coloured by queue. Ctrl-C ends it."""
    lab = Lab.open()
    view = None
    if learner is not None:
        from kailab.classroom.joined import slice_line

        lab.klass().known(learner)  # the instructor's class, and one of its learners
        view = learner_view(lab.kube, learner)
        stderr.print(slice_line(learner), markup=False, highlight=False)
    if once:
        render.stdout.print(lab.frame(view))
        return
    lab.watch(render.stdout, view)


def serve(
    address: str = typer.Option("127.0.0.1", "--address", help="Where to listen; 0.0.0.0 shows the page to the room."),
    port: int = typer.Option(8390, "--port", min=0, max=65535, help="The port (0: any free one)."),
) -> None:
    """A live page of this lab (or of your slice of a class): queues with KAI's fair shares, every GPU coloured by
    queue, the lesson's expectations as KAI decides them; click a pod for kailab explain's answer. Ctrl-C ends it."""
    from kailab.web.serve import serve_lab

    serve_lab(Lab.open(), address, port, lambda line: render.stdout.print(line, markup=False, highlight=False))


def evidence(
    out: Path | None = typer.Option(None, help="Write the snapshot here instead of evidence/<UTC timestamp>/."),
) -> None:
    """Snapshot the running lab into evidence/<UTC timestamp>/: objects, events, verdicts, report.md, timeline.png."""
    path = Lab.open().capture(Progress(), "of the lab", out=out)
    render.stdout.print(f"Evidence written: {path}/report.md")
