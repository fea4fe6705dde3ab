"""Partitions of one cluster: a slice's names, nodes and owner labels, and the partitions a lab made and removes.

Each partition is a KAI node pool (docs/operator/scheduling-shards.md in KAI v0.17.0): its nodes, queues, workloads
and PodGroups carry ``kai.scheduler/node-pool=<partition>``, and a scheduler of its own, run for its SchedulingShard
(``kailab/shards.py``), sees only those (its lister selects by the label; the lab's own scheduler, started with an
empty value, selects what has no such label). The pod-grouper copies the label from the workload's top owner, or
else the pod, onto the PodGroup; the scheduler labels a pod it binds. Everything a partition's lesson applies carries
the label because it carries the partition's owner labels.

A class gives each learner a partition (``kailab/classroom/``); ``kailab demo`` side by side gives each lesson one
(``kailab/parallel.py``). What runs their schedulers is the runtime's (:class:`~kailab.runtimes.base.PartitionHost`:
the local runtime's supervisor, KAI's operator elsewhere); what a partition is, and how one is made and removed, is
here, the same on every runtime.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kailab import shards
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import (
    DEFAULT_SCHEDULER_NAME,
    KAI_SCHEDULER_NAME,
    LEARNER_LABEL,
    NODEPOOL_LABEL,
    PARTITION_TAINT_KEY,
    SHARD_API,
)
from kailab.labstate import DamagedState
from kailab.outfile import write_own
from kailab.ownership import CLUSTER_KINDS, Owner
from kailab.runtimes.base import PartitionHost, SchedulerControl
from kailab.scenarios.prefix import check_prefix, prefixed
from kailab.scheduler_settings import SchedulerSettings
from kailab.userfile import read_own_json

# A slice's names, owner and selectors are read by every command of a joined learner (their status, watch,
# explain): what only making, running or removing a partition needs is imported where it is used.
if TYPE_CHECKING:
    from kailab.fleet import Fleet
    from kailab.scenarios.live import LiveCluster
    from kailab.scenarios.model import Scenario

LAB_ID_PREFIX = "class-"
CLASS_STATE = "class.json"  # the class's partitions (its learners), in the host's folder


# -- a partition's slice, as pure data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionOwner(Owner):
    """A partition's objects: the owner labels of its own (lab id ``class-<partition>``) and its node-pool label."""

    node_pool: str = ""

    @property
    def labels(self) -> dict[str, str]:
        return {**super().labels, NODEPOOL_LABEL: self.node_pool}

    def confine(self, pod_spec: dict) -> None:
        """Every pod of the partition tolerates its nodes' taint (no one else's pod does: :func:`taint`); a pod for
        any scheduler but KAI's — the default kube-scheduler (no schedulerName), which knows no partitions, or one
        misspelled on purpose (a runbook's) — may go only to the partition's nodes, as the class's admission policy
        requires; KAI's pods need nothing more: their scheduler sees no other nodes."""
        tolerations = pod_spec.setdefault("tolerations", [])
        if toleration(self.node_pool) not in tolerations:
            tolerations.append(toleration(self.node_pool))
        if pod_spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) != KAI_SCHEDULER_NAME:
            pod_spec.setdefault("nodeSelector", {})[NODEPOOL_LABEL] = self.node_pool


def taint(partition: str) -> dict:
    """On each node of a partition: pods that do not tolerate it are not placed there, by either scheduler."""
    return {"key": PARTITION_TAINT_KEY, "value": partition, "effect": "NoSchedule"}


def toleration(partition: str) -> dict:
    """What every pod of a partition carries (:meth:`PartitionOwner.confine`): its own partition's taint, no other."""
    return {"key": PARTITION_TAINT_KEY, "operator": "Equal", "value": partition, "effect": "NoSchedule"}


def owner(partition: str) -> PartitionOwner:
    return PartitionOwner(lab_id=LAB_ID_PREFIX + partition, node_pool=partition)


def node_labels(partition: str) -> dict[str, str]:
    return {NODEPOOL_LABEL: partition, LEARNER_LABEL: partition, **owner(partition).labels}


def nodes(fleet: Fleet, partition: str) -> list[dict]:
    """The partition's fleet: the lesson fleet's nodes, named ``<partition>-kwok-…``, in the partition and tainted
    as its own."""
    from kailab.fleet import node_objects

    tainted = dataclasses.replace(fleet, taints=(*fleet.taints, taint(partition)))
    return node_objects(tainted, prefix=partition, labels=node_labels(partition))


def node_selector(partition: str) -> str:
    return f"{NODEPOOL_LABEL}={partition},{LEARNER_LABEL}={partition}"


def for_partition(scenario: Scenario, partition: str) -> Scenario:
    """The scenario as it runs in the partition: its prefix on the queues, classes and namespace, and on the names
    of the nodes it pins pods to, clears or requires (the partition's nodes are ``<partition>-kwok-…``)."""
    from kailab.scenarios.model import DeletePods, NodeStep, Wait

    out = prefixed(scenario, partition)

    def node(name: str | None) -> str | None:
        return f"{partition}-{name}" if name else name

    def step(s):
        if isinstance(s, (NodeStep, DeletePods)):
            return dataclasses.replace(s, node=node(s.node))
        if isinstance(s, Wait):
            return dataclasses.replace(
                s,
                expectations=tuple(
                    e.mapped(lambda x: dataclasses.replace(x, node=node(x.node))) for e in s.expectations
                ),
            )
        return s

    requires = out.requires
    if requires is not None and requires.nodeNames:
        requires = requires.model_copy(update={"nodeNames": [f"{partition}-{n}" for n in requires.nodeNames]})

    def on_node(e):
        return dataclasses.replace(e, node=node(e.node))

    return dataclasses.replace(
        out,
        workloads=tuple(w.model_copy(update={"node": node(w.node)}) for w in out.workloads),
        steps=tuple(step(s) for s in out.steps),
        requires=requires,
        predictions=tuple(p.renamed(on_node) for p in out.predictions),
    )


# -- the partitions a lab made --------------------------------------------------------------------------------------


class Partitions:
    """The partitions a lab made, kept by name in a state file in the host's folder (so that what a failure or a
    killed run left is found again), and the way each is made and removed: its fleet, then its SchedulingShard, run
    by what the runtime's ``host`` runs shards with."""

    def __init__(self, host: PartitionHost, state: str = CLASS_STATE):
        self.host = host
        self.state_file = host.folder / state

    def names(self) -> list[str]:
        """The partitions' names, from the state file; [] without one; DamagedState (naming the file and
        ``kailab down``) when it cannot be read."""
        data = read_own_json(self.state_file, self._damaged)
        if data is None:
            return []
        names = data.get("learners") if isinstance(data, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise self._damaged("it holds no list of names")
        for name in names:  # a name goes into paths and label selectors: only a learner's name will do
            try:
                check_prefix(name)
            except ValueError:
                raise self._damaged(f"{name[:80]!r} is not a partition's name") from None
        return names

    def _damaged(self, why: str) -> DamagedState:
        return DamagedState(
            f"The state file of this lab's partitions {self.state_file} is damaged: {why}.",
            hint="Remove the lab, its class with it, and start again: kailab down && kailab up",
        )

    def write(self, names: list[str]) -> None:
        if not names:  # no partition: no file (the lab's down then finds only what it wrote)
            self.forget()
            return
        self.host.folder.mkdir(parents=True, exist_ok=True)
        write_own(self.state_file, json.dumps({"learners": names}, indent=1), root=self.host.home)

    def forget(self) -> None:
        """The state file gone: for partitions whose cluster goes with them (kind, local), or when there are none."""
        self.state_file.unlink(missing_ok=True)

    def control(self, partition: str, kube: Kube) -> SchedulerControl:
        """The partition's scheduler, through its SchedulingShard."""
        return self.host.control(kube, partition)

    def cluster(self, partition: str, kube: Kube) -> LiveCluster:
        """The engine's view of the partition: its owner labels, nodes and scheduler."""
        from kailab.scenarios.live import LiveCluster

        control = self.control(partition, kube)
        return LiveCluster(
            kube, control, owner=owner(partition), metrics=control.metrics, node_selector=node_selector(partition)
        )

    def make(self, kube: Kube, fleet: Fleet, partition: str) -> None:
        """A partition: its fleet (labelled with its node pool), then its shard, until its scheduler runs."""
        _make_nodes(kube, fleet, partition)
        self.host.ready(kube)
        kube.apply(shards.shard_object(partition, owner(partition).labels))
        self.control(partition, kube).start()

    def reset(self, kube: Kube, fleet: Fleet, partition: str) -> None:
        """A partition back to clean, as made: its scheduler running with the lab's defaults (its shard made again if
        it is gone), its lesson namespaces emptied (the namespaces, and the lesson records in them, stay), its queues,
        priority classes and topologies deleted, its nodes made again as the fleet has them (a lesson cut short may
        have cordoned, tainted or relabelled one)."""
        from kailab.operators import delete_workloads

        selector = owner(partition).selector()
        self.host.ready(kube)
        if kube.get(SHARD_API, shards.KIND, shards.shard_name(partition)) is None:
            kube.apply(shards.shard_object(partition, owner(partition).labels))
        self.control(partition, kube).start(SchedulerSettings())
        for ns in kube.core.list_namespace(label_selector=selector).items:
            delete_workloads(kube, ns.metadata.name)  # first: an operator would make their pods again
            kube.empty_namespace(ns.metadata.name)
        for api, kind in CLUSTER_KINDS:
            for obj in kube.list(api, kind, label_selector=selector):
                kube.delete(api, kind, obj["metadata"]["name"])
        delete_nodes(kube, f"{node_selector(partition)},{selector}")
        if not wait_until_gone(
            lambda: kube.core.list_node(label_selector=f"{node_selector(partition)},{selector}").items, 60
        ):
            raise KailabError(f"{partition}'s nodes were not deleted within 60s.", hint="See: kubectl get nodes")
        _make_nodes(kube, fleet, partition)

    def stop_scheduler(self, kube: Kube, partition: str) -> None:
        """The partition's scheduler gone at once: its shard deleted (what ran it stops it), and what the host keeps
        of it removed."""
        kube.delete(SHARD_API, shards.KIND, shards.shard_name(partition))
        self.host.stopped(kube, partition)

    def remove(self, kube: Kube, partition: str, wait: bool = True) -> None:
        """A partition gone: its shard (so its scheduler), its objects and nodes; ``wait=False`` leaves its
        namespaces terminating."""
        self.stop_scheduler(kube, partition)
        remove_partition(kube, partition, wait=wait)


def remove_partition(kube: Kube, partition: str, timeout: float = 120, wait: bool = True) -> None:
    """Delete every object of the partition's (by its owner labels) and its nodes; with ``wait``, until its
    namespaces are gone."""
    from kailab.operators import delete_workloads

    selector = owner(partition).selector()
    namespaces = [ns.metadata.name for ns in kube.core.list_namespace(label_selector=selector).items]
    for name in namespaces:
        delete_workloads(kube, name)  # first: an operator would make their pods again
        kube.empty_namespace(name)
        kube.delete("v1", "Namespace", name)
    for api, kind in CLUSTER_KINDS:
        for obj in kube.list(api, kind, label_selector=selector):
            kube.delete(api, kind, obj["metadata"]["name"])
    delete_nodes(kube, f"{node_selector(partition)},{selector}")
    # Gone, not only going: a class up right after (the same learner again) would find them terminating.
    if wait and not wait_until_gone(lambda: kube.core.list_namespace(label_selector=selector).items, timeout):
        raise KailabError(
            f"{partition}'s namespaces were not deleted within {timeout:.0f}s.",
            hint=f"See what is left: kubectl get namespaces -l {selector}",
        )


AT_ONCE = 8  # partitions made or removed at the same time (a class holds up to roster.MAX_LEARNERS)


def each(names: list[str], work: Callable[[str], None]) -> None:
    """``work(name)`` for the names, AT_ONCE at a time, each in a thread; the first error is raised once all have
    ended."""
    if len(names) <= 1:
        for name in names:
            work(name)
        return
    with ThreadPoolExecutor(max_workers=min(AT_ONCE, len(names))) as pool:
        for future in [pool.submit(work, name) for name in names]:
            future.result()


def delete_nodes(kube: Kube, selector: str) -> None:
    """Delete the nodes ``selector`` selects; the answer (every node deleted, whole) is read, not made into the
    client's objects (a partition's removal made five typed nodes it never used)."""
    kube.core.delete_collection_node(label_selector=selector, _preload_content=False).read()


def wait_until_gone(listing: Callable[[], list], timeout: float) -> bool:
    """Poll ``listing`` until it is empty; False at the timeout (the namespace controller deletes in rounds)."""
    deadline = time.monotonic() + timeout
    while listing():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _make_nodes(kube: Kube, fleet: Fleet, partition: str) -> None:
    """The partition's KWOK nodes as the fleet has them (labelled with its node pool), until they are Ready."""
    from kailab.fleet import create_fleet

    create_fleet(
        kube,
        fleet,
        timeout=60,
        nodes=nodes(fleet, partition),
        logs_hint="Is the KWOK controller running? See: kailab status",
    )
