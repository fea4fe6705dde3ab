"""Partitions on kind and existing clusters: KAI's operator runs each SchedulingShard as a scheduler Deployment.

KWOK's controller (which kind's lab and ``--kwok`` install) runs the partitions' nodes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kailab.errors import KailabError, RosterError
from kailab.kube import Kube
from kailab.labels import KAI_NAMESPACE, KAI_OPERATOR, KAI_SCHEDULER_NAME, KWOK_CONTROLLER
from kailab.runtimes.base import Runtime
from kailab.scheduler_settings import SchedulerSettings
from kailab.shards import CRD, ShardSchedulerControl, serves_shards


class OperatorPartitions:
    """What KAI's operator runs; ``usage_db`` (settings, partition) → a shard's usageDBConfig, the lab's Prometheus
    deployed first (kind: kailab/runtimes/kind_usage_db.py; None where kailab runs none)."""

    def __init__(
        self,
        runtime: Runtime,
        usage_db: Callable[[SchedulerSettings, str], dict] | None = None,
        usage_db_url: str | None = None,
    ):
        self.rt = runtime
        self.home: Path = runtime.home
        self.folder: Path = runtime.home
        self.usage_db = usage_db
        self._usage_db_url = usage_db_url

    def usage_db_url(self) -> str | None:
        """The lab's usage database a learner's shard may name (kind: the lab's Prometheus in the cluster; an
        existing cluster has none of the lab's)."""
        return self._usage_db_url

    def cores_short(self, partitions: int) -> str:
        """Never short here: the nodes' room for each scheduler is counted instead (:meth:`check`)."""
        return ""

    def open_beyond_loopback(self) -> list[tuple[str, str, int]]:
        """None the runtime can tell of: kind publishes its API server's port alone (Docker's port mapping of the
        control-plane node); an existing cluster is the user's."""
        return []

    def side_by_side(self, available: int | None = None) -> tuple[int, str]:
        return 0, f"on the {self.rt.traits.name} runtime kailab starts no partition schedulers"

    def check(self, kube: Kube, adding: int, available: int | None) -> None:
        if missing := operator_missing(kube):
            raise KailabError(
                f"A class on the {self.rt.traits.name} runtime needs {missing}. Nothing was applied.",
                hint="Install KAI Scheduler v0.17.0 with its Helm chart (its operator runs SchedulingShards), "
                "and KWOK (kailab up --runtime existing --kwok), then kailab class up again.",
            )
        fit, each = schedulers_that_fit(kube)
        if fit is not None and adding > fit:
            raise RosterError(
                f"The cluster's nodes have room for {fit} more scheduler{'s' if fit != 1 else ''}, and each learner "
                f"needs one ({each}, as KAI's operator asks for every shard's scheduler). Nothing was applied.",
                hint=(f"Add at most {fit} learner{'s' if fit != 1 else ''} now" if fit else "Free room on the nodes")
                + ", or hold the class on a machine (kind) or cluster with more CPU and memory, "
                "or on the local runtime (about 0.2 GiB a learner).",
            )

    def ready(self, kube: Kube) -> None:
        """KAI's operator runs already (:meth:`check` refuses a cluster without it)."""

    def control(self, kube: Kube, partition: str) -> ShardSchedulerControl:
        return ShardSchedulerControl(kube, partition, usage_db=self.usage_db)

    def stopped(self, kube: Kube, partition: str) -> None:
        """KAI's operator removes the shard's Deployment itself."""


def operator_missing(kube: Kube) -> str:
    """What a class on a cluster kailab does not run KAI on needs and the cluster lacks, in words ("" nothing): the
    SchedulingShard CRD, KAI's operator (a Deployment ``kai-operator``, as KAI's chart names it) and KWOK's
    controller (``kube-system/kwok-controller``) for the learners' nodes."""
    if not serves_shards(kube):
        return f"KAI's SchedulingShard CRD ({CRD}), which this cluster does not serve"
    operators = kube.apps.list_deployment_for_all_namespaces(field_selector=f"metadata.name={KAI_OPERATOR}").items
    if not any((d.status.ready_replicas or 0) > 0 for d in operators):
        return f"KAI's operator (a Deployment {KAI_OPERATOR}, Ready), which turns SchedulingShards into schedulers"
    namespace, name = KWOK_CONTROLLER
    kwok = kube.apps.list_namespaced_deployment(namespace, field_selector=f"metadata.name={name}").items
    if not kwok:
        return f"KWOK's controller ({namespace}/{name}), which runs the learners' nodes"
    return ""


def schedulers_that_fit(kube: Kube) -> tuple[int | None, str]:
    """How many more shard schedulers the cluster's nodes have room for, as kube-scheduler counts room (allocatable
    CPU and memory less the requests of the pods there, on nodes whose taints the scheduler's pod tolerates), and
    one scheduler's requests in words; (None, "") when no shard's scheduler runs yet to read its requests from."""
    from kailab.quantity import amount

    made = [  # kai-scheduler-<shard> (shards.shard_scheduler): the chart's default shard's at least
        d
        for d in kube.apps.list_namespaced_deployment(KAI_NAMESPACE).items
        if d.metadata.name.startswith(KAI_SCHEDULER_NAME + "-")
    ]
    if not made:
        return None, ""
    pod = made[0].spec.template.spec
    want = {"cpu": 0.0, "memory": 0.0}
    for c in pod.containers:
        for r in want:
            want[r] += amount(str(((c.resources and c.resources.requests) or {}).get(r, "0")))
    if not any(want.values()):
        return None, ""
    fit = 0
    for node in kube.core.list_node().items:
        if node.spec.unschedulable or not _tolerated(node.spec.taints or [], pod.tolerations or []):
            continue
        free = {r: amount(str((node.status.allocatable or {}).get(r, "0"))) for r in want}
        on_node = kube.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.metadata.name}").items
        for p in on_node:
            if p.status.phase in ("Succeeded", "Failed"):
                continue
            for c in p.spec.containers:
                for r in want:
                    free[r] -= amount(str(((c.resources and c.resources.requests) or {}).get(r, "0")))
        fit += max(0, int(min(free[r] // want[r] for r in want if want[r])))
    each = f"{want['cpu']:g} CPU and {want['memory'] / 2**30:.2g} GiB"
    return fit, each


def _tolerated(taints, tolerations) -> bool:
    """Every NoSchedule or NoExecute taint is tolerated (by key, value or Exists, and effect)."""

    def tolerates(t, taint) -> bool:
        if t.effect and t.effect != taint.effect:
            return False
        if not t.key:
            return t.operator == "Exists"
        return t.key == taint.key and (t.operator == "Exists" or (t.value or "") == (taint.value or ""))

    return all(
        any(tolerates(t, taint) for t in tolerations) for taint in taints if taint.effect in ("NoSchedule", "NoExecute")
    )
