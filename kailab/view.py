"""What a lab sees of its cluster: its queues, nodes, pod namespaces and fair shares; a class learner's slice of it.

A :class:`View` travels with the lab (:attr:`kailab.lab.Lab.view`) to ``status``, ``watch``, ``explain`` and the pages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kailab.kube import Kube
    from kailab.pods import PodView


@dataclass(frozen=True)
class View:
    """What a lab sees of its cluster: the queues and nodes it shows (label selectors, "" every one), the nodes that
    are its fleet for the engine (None every node), the namespaces whose pods it may see (None every one) and a
    reader of its scheduler's metrics (None: no fair shares here)."""

    queues: str = ""
    nodes: str = ""
    fleet: str | None = None
    namespaces: Callable[[Kube], list[str]] | None = None
    metrics: Callable[[], str | None] | None = None

    def fair_shares(self) -> dict[str, float] | None:
        """Each queue's fair share of GPUs now, as KAI's scheduler publishes it; None when this lab cannot say."""
        return self.per_queue("gpu")

    def per_queue(self, figure: str) -> dict[str, float] | None:
        """A figure KAI's scheduler publishes per queue (a FairShare field: ``gpu``, ``usage``…); None: unknown."""
        from kailab import fairshare

        try:
            text = self.metrics() if self.metrics is not None else None
        except Exception:  # no figure is no reason to fail a status, a watch or an explanation
            return None
        return {q: getattr(s, figure) for q, s in fairshare.parse(text).items()} if text else None

    def pod_namespaces(self, kube: Kube) -> list[str] | None:
        """The namespaces whose pods this lab may see (those that exist); None: every one."""
        return None if self.namespaces is None else self.namespaces(kube)

    def pods(self, kube: Kube) -> list[PodView]:
        """Every pod this lab may see."""
        from kailab.pods import pod_view
        from kailab.status import all_pods

        namespaces = self.pod_namespaces(kube)
        if namespaces is None:
            return all_pods(kube)
        return [pod_view(p) for n in namespaces for p in kube.pods(n)]


def learner_view(kube: Kube, learner: str) -> View:
    """A class learner's slice: their queues and nodes, the pods of their lesson namespaces, and the fair shares their
    SchedulingShard's scheduler gives their queues, read through the API server with ``kube``'s credential — the
    learner's own (their ``watch``, ``status``, pages), or the instructor's (``kailab watch --learner NAME``)."""
    from kailab.classroom.access import lesson_namespaces
    from kailab.labels import NODEPOOL_LABEL
    from kailab.partitions import node_selector, owner
    from kailab.shards import ShardSchedulerControl

    def namespaces(kube: Kube) -> list[str]:  # their lesson namespaces that exist
        made = {ns.metadata.name for ns in kube.core.list_namespace(label_selector=owner(learner).selector()).items}
        return [n for n in lesson_namespaces(learner) if n in made]

    nodes = node_selector(learner)
    return View(
        queues=f"{NODEPOOL_LABEL}={learner}",
        nodes=nodes,
        fleet=nodes,
        namespaces=namespaces,
        metrics=ShardSchedulerControl(kube, learner).metrics,
    )
