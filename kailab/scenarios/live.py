"""The engine's cluster when it is a real one: calls through the client, changes from watches, the lab's pace.

Kubernetes calls go through :class:`~kailab.kube.Kube`; changes come from watches of the scenario's pods and
events, handed over through a queue — each with the cluster's time of it (:func:`kailab.pods.object_time`, an
event's time), and every second a reading of how fast the lab answers (:mod:`kailab.pace`) with the API server's
time of its answer."""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, ExitStack
from urllib.parse import quote

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from kailab import fairshare, operators, pace
from kailab.api_paths import api_request, path_lister
from kailab.checks import FleetNode
from kailab.collector import settle
from kailab.errors import KailabError
from kailab.gpus import node_gpus
from kailab.kube import FIELD_MANAGER, METADATA_LIST, Kube, as_json
from kailab.labels import PODGROUP_API, QUEUE_API, SCENARIO_LABEL, TOPOLOGY_API, WORKLOAD_LABEL
from kailab.lean_lines import lean_watch, with_write_times
from kailab.ownership import Owner, foreign, stamped
from kailab.pods import (
    UNREAD_EVENTS,
    api_time,
    event_view,
    node_view,
    object_time,
    pod_view,
    podgroup_view,
    queue_view,
)
from kailab.progress import Progress
from kailab.quantity import amount
from kailab.queues import queue_ref
from kailab.scenarios.fold import Change
from kailab.scheduler_settings import SchedulerSettings
from kailab.watched import Watched


class LiveChanges:
    """Watches of one namespace's pods, events and PodGroups and of the scenario's Queue objects (``queue_selector``:
    the labels of the lab's own queues, which the scenario's are), and a poll of the scheduler's fair shares and the
    lab's pace; their threads only put changes on a queue."""

    POLL = 1.0  # seconds between reads of fair shares and the pace; KAI divides fair shares once per cycle (250 ms in
    # kailab's labs, 1 s KAI's default)

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        clock,
        metrics: Callable[[], str | None] | None = None,
        queues: Iterable[str] = (),
        node_labels: tuple[str, ...] = (),
        node_selector: str | None = None,
        queue_selector: str = "",
        watching: AbstractContextManager | None = None,
    ):
        # (C's queue: handing over each of a lesson's thousands of changes through queue.Queue's Python-made
        # locking cost more than the change's reading)
        self._queue: queue.SimpleQueue[Change] = queue.SimpleQueue()
        settle()  # the process's first lesson: its modules are loaded (kailab/collector.py)
        self._open = ExitStack()
        self._clock = clock
        self._kube, self._namespace = kube, namespace
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        if node_labels:  # the fleet's nodes with the labels the conditions ask about, first (they do not change)
            for node in as_json(kube.core.list_node)(label_selector=node_selector or "")["items"]:
                self._queue.put(Change("ADDED", node=node_view(node, node_labels), t=clock()))
        self._watches = [
            self._watch(
                Watched(as_json(lean_watch(kube.core.list_namespaced_pod, with_write_times)), namespace),
                lambda kind, o: Change(kind, pod=pod_view(o)),
            ),
            self._watch(
                Watched(as_json(kube.core.list_namespaced_event), namespace, field_selector=UNREAD_EVENTS),
                _event_change,
            ),
        ]
        if serves(kube, PODGROUP_API, "PodGroup"):  # a cluster without KAI has none
            groups = path_lister(kube.api, f"/apis/{PODGROUP_API}/namespaces/{quote(namespace, safe='')}/podgroups")
            pod_groups = as_json(lean_watch(groups, with_write_times))
            self._watches.append(self._watch(Watched(pod_groups), lambda kind, o: Change(kind, group=podgroup_view(o))))
        wanted = frozenset(queues)
        if wanted and serves(kube, QUEUE_API, "Queue"):
            all_queues = as_json(lean_watch(path_lister(kube.api, f"/apis/{QUEUE_API}/queues"), with_write_times))
            self._watches.append(
                self._watch(
                    Watched(all_queues, label_selector=queue_selector),  # the lab's: not every lesson's, side by side
                    lambda kind, o: Change(kind, queue=queue_view(o)),
                    keep=lambda o: (o.get("metadata") or {}).get("name") in wanted,  # the scenario's queues only
                )
            )
        try:
            for w in self._watches:
                w.start()
            if watching is not None:  # the scheduler control's watch of what ``metrics`` reads (its shard)
                self._open.enter_context(watching)
        except BaseException:
            self.close()
            raise
        self._poller = threading.Thread(target=self._poll, args=(metrics,), daemon=True)
        self._poller.start()

    def _poll(self, metrics: Callable[[], str | None] | None) -> None:
        """Every POLL seconds: each queue's fair share from the scheduler's metrics, as a change whenever it moves;
        and the lab's pace (KAI's last cycle from the same text, one API round trip), as a PACE change."""
        last: dict = {}
        while not self._stop.is_set():
            text = None
            if metrics is not None:
                try:
                    text = metrics()
                except Exception:  # a scheduler being restarted has no metrics for a moment
                    text = None
            for q, share in fairshare.parse(text or "").items():
                if last.get(q) != share:
                    last[q] = share
                    self._queue.put(Change("MODIFIED", share=share, t=self._clock()))
            read = None if metrics is None else (lambda said=text: said)  # the text just read: no second request
            reading, server = pace.sample(self._kube, self._namespace, read)
            self._queue.put(Change("PACE", pace=reading, at=server, t=self._clock()))
            self._stop.wait(self.POLL)

    def note(self, change: Change) -> None:
        self._queue.put(change)

    def _watch(self, watched: Watched, change, keep: Callable[[dict], bool] = lambda o: True) -> Watched:
        def put(kind: str, obj) -> None:
            if keep(obj):
                made = change(kind, obj)
                at = made.at if made.at is not None else object_time(obj) if isinstance(obj, dict) else None
                self._queue.put(dataclasses.replace(made, t=self._clock(), at=at))  # kailab's clock on arrival

        watched.on_change(put)
        return watched

    def next(self, timeout: float) -> Change | None:
        for w in self._watches:
            w.check()  # a watch that keeps failing ends the scenario with its reason
        try:
            return self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get(block=False)
        except queue.Empty:
            return None

    def close(self) -> None:
        self._stop.set()
        for w in self._watches:
            w.stop()
        if self._poller is not None:
            self._poller.join(5)
        self._open.close()


def _event_change(kind: str, obj: dict) -> Change:
    """An event's change, at the event's own time (its last, else first, time: the cluster's)."""
    ev = event_view(obj)
    return Change(kind, event=ev, at=ev.time or None)


def written_at(obj: dict | None) -> float | None:
    """The cluster's time of kailab's latest write of an object (its server-side apply's ``managedFields`` entry),
    or its creation; None when the answer has neither."""
    meta = (obj or {}).get("metadata") or {}
    times = [api_time(m.get("time")) for m in meta.get("managedFields") or () if m.get("manager") == FIELD_MANAGER]
    known = [t for t in [*times, api_time(meta.get("creationTimestamp"))] if t is not None]
    return max(known) if known else None


def serves(kube: Kube, api_version: str, kind: str) -> bool:
    try:
        kube.resource(api_version, kind)
        return True
    except ResourceNotFoundError:
        return False


class LiveCluster:
    """A running lab, as the engine sees it.

    ``scheduler``: the runtime's control of KAI's scheduler, if it has one; ``metrics``: a reader of the scheduler's
    metrics (by default the control's); ``owner``: whose objects this lab's are — every object applied here carries
    its labels, and every cleanup selects by them; ``gpu_sharing``: whether KAI's GPU sharing is on;
    ``node_selector``: the nodes that are this lab's fleet (its KAI partition's), None every node; ``gpu_ledger``:
    the runtime's control of what gives KAI's GPU reservation pods their GPU, if it has one; ``operators``: the
    runtime's workload operators (KubeRay …), if it has them.
    """

    def __init__(
        self,
        kube: Kube,
        scheduler=None,
        owner: Owner = Owner(),
        metrics: Callable[[], str | None] | None = None,
        gpu_sharing: bool = True,
        node_selector: str | None = None,
        gpu_ledger=None,
        operators: operators.OperatorControl | None = None,
    ):
        self.kube = kube
        self.operators = operators
        self.gpu_ledger = gpu_ledger
        self.node_selector = node_selector
        self.scheduler = scheduler
        self.owner = owner
        self.metrics = metrics if metrics is not None else getattr(scheduler, "metrics", None)
        self.gpu_sharing = gpu_sharing

    def clock(self) -> float:
        return time.monotonic()

    def pace(self, namespace: str = "default") -> pace.Pace | None:
        return pace.measure(self.kube, self.metrics, namespace, gap=0.5)

    def abilities(self) -> frozenset[str]:
        return frozenset(
            name
            for name, has in (
                ("scheduler-control", self.scheduler is not None),
                ("fair-share", self.metrics is not None),
                ("gpu-sharing", self.gpu_sharing),
                ("gpu-ledger-control", self.gpu_ledger is not None),
                ("usage-db", bool(getattr(self.scheduler, "runs_usage_db", False))),
            )
            if has
        ) | {f"operator:{kind}" for kind in (self.operators.kinds() if self.operators is not None else ())}

    def ensure_operators(self, objects: list[dict], progress: Progress) -> None:
        if self.operators is None:
            raise KailabError("This lab runs no workload operators (KubeRay, JobSet, …).")
        self.operators.ensure_for(objects, progress)

    def clear_scenarios(self, namespace: str = "") -> list[str]:
        return clear_scenarios(self.kube, self.owner, also=(namespace,) if namespace else ())

    def ensure_namespace(self, name: str, labels: dict[str, str]) -> None:
        self.kube.ensure_namespace(name, {**self.owner.labels, **labels})

    def apply(self, obj: dict) -> float | None:
        return written_at(self.kube.apply(stamped(obj, self.owner)))

    def foreign(self, objects: list[dict]) -> list[str]:
        found = {}
        for o in objects:
            try:
                got = self.kube.get(o["apiVersion"], o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
            except ResourceNotFoundError:  # the cluster does not serve the kind: no such object
                got = None
            found[f"{o['kind']} {o['metadata']['name']}"] = (
                None if got is None else (got["metadata"].get("labels") or {})
            )
        return foreign(found, self.owner)

    def delete(self, obj: dict) -> float | None:
        meta = obj["metadata"]
        gone = self.kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        return object_time(gone) if gone and (gone.get("metadata") or {}).get("deletionTimestamp") else None

    def delete_pods(self, namespace: str, workload: str) -> None:
        # ReplicaSets too: until the garbage collector gets to them, one would replace the pods deleted here.
        selector = f"{WORKLOAD_LABEL}={workload}"
        # The answers (every object deleted) are read, not made into the client's objects: nothing of them is used.
        # (by the API's path: the typed client of apps/v1 costs 0.1 s to import, and a lesson needs no more of it)
        replica_sets = f"/apis/apps/v1/namespaces/{quote(namespace, safe='')}/replicasets"
        api_request(
            self.kube.api, "DELETE", replica_sets, [("labelSelector", selector), ("propagationPolicy", "Background")]
        ).read()
        self.kube.core.delete_collection_namespaced_pod(
            namespace, label_selector=selector, grace_period_seconds=0, _preload_content=False
        ).read()

    def changes(self, namespace: str, queues: Iterable[str] = (), node_labels: tuple[str, ...] = ()) -> LiveChanges:
        return LiveChanges(
            self.kube,
            namespace,
            self.clock,
            self.metrics,
            queues,
            node_labels,
            self.node_selector,
            self.owner.selector(),
            self.scheduler.watching() if self.scheduler is not None else None,
        )

    def fleet_nodes(self) -> list[FleetNode]:
        nodes = as_json(self.kube.core.list_node)(label_selector=self.node_selector or "")["items"]
        return [
            FleetNode(
                n["metadata"]["name"],
                node_gpus(allocatable := (n.get("status") or {}).get("allocatable") or {}),
                amount(allocatable.get("cpu", "0") or "0"),
                dict(n["metadata"].get("labels") or {}),
            )
            for n in nodes
        ]

    def node_names(self) -> list[str]:
        # the nodes' metadata alone: their names are all that is read (a whole node's JSON is several KB)
        return [
            n["metadata"]["name"]
            for n in as_json(self.kube.core.list_node)(_headers={"Accept": METADATA_LIST})["items"]
        ]

    def scenario_objects(self) -> list[dict]:
        selector = self.owner.selector(SCENARIO_LABEL)
        out = [queue_ref(q["metadata"]["name"]) for q in self.kube.list(QUEUE_API, "Queue", label_selector=selector)]
        classes = self.kube.list("scheduling.k8s.io/v1", "PriorityClass", label_selector=selector)
        topologies = (
            self.kube.list(TOPOLOGY_API, "Topology", label_selector=selector)
            if serves(self.kube, TOPOLOGY_API, "Topology")
            else []
        )
        return (
            out
            + [
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": p["metadata"]["name"]},
                }
                for p in classes
            ]
            + [
                {"apiVersion": TOPOLOGY_API, "kind": "Topology", "metadata": {"name": t["metadata"]["name"]}}
                for t in topologies
            ]
        )

    def stop_scheduler(self) -> None:
        self._needed("scheduler").stop()

    def start_scheduler(self, settings: SchedulerSettings) -> None:
        self._needed("scheduler").start(settings)

    def stop_gpu_ledger(self) -> None:
        self._needed("gpu_ledger").stop()

    def start_gpu_ledger(self) -> None:
        self._needed("gpu_ledger").start()

    def _needed(self, part: str):
        """The runtime's control that a scenario's step stops or starts (``scheduler``, ``gpu_ledger``); an error
        naming what it controls when this lab has none."""
        control = getattr(self, part)
        if control is None:
            what, hint = CONTROLS[part]
            raise KailabError(f"This lab cannot stop or start {what} from a scenario.", hint=hint)
        return control


CONTROLS = {  # a control a lab may lack: what it stops and starts, and where a scenario that needs it runs
    "scheduler": ("KAI's scheduler", "Run the scenario on a lab made by kailab up (local or kind runtime)."),
    "gpu_ledger": (
        "what gives KAI's GPU reservation pods their GPU",
        "Run the scenario on a lab the local runtime made (kailab up --runtime local).",
    ),
}


def clear_scenarios(kube: Kube, owner: Owner = Owner(), also: tuple[str, ...] = ()) -> list[str]:
    """Empty every scenario namespace of this lab that has pods (workloads, pods, PodGroups, events) so the
    fleet is free, and the namespaces ``also`` names (the next scenario's: no old Job or event is left in it);
    the ones that had pods.

    Only the lab's own namespaces, by its labels: another lab's on the same cluster are left alone. A namespace
    without pods holds no GPU; emptying all twelve every time cost a second or more per lesson.
    """
    namespaces = [
        ns.metadata.name for ns in kube.core.list_namespace(label_selector=owner.selector(SCENARIO_LABEL)).items
    ]
    busy = [n for n in namespaces if kube.core.list_namespaced_pod(n, limit=1).items]
    for name in dict.fromkeys([*busy, *(n for n in also if n in namespaces)]):
        operators.delete_workloads(kube, name)  # first: an operator would make their pods again
        kube.empty_namespace(name)
    return busy
