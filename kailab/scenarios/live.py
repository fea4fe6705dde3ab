"""The engine's cluster when it is a real one: Kubernetes calls through :class:`~kailab.kube.Kube`,
changes from watches of the scenario's pods and events, handed over through a queue."""

from __future__ import annotations

import queue
import time

from kailab.kube import Kube, Watched
from kailab.labels import SCENARIO_LABEL, WORKLOAD_LABEL
from kailab.pods import event_view, pod_view
from kailab.scenarios.fold import Change


class LiveChanges:
    """Watches of one namespace's pods and events; their threads only put changes on a queue."""

    def __init__(self, kube: Kube, namespace: str, clock):
        self._queue: queue.Queue[Change] = queue.Queue()
        self._clock = clock
        self._pods = Watched(kube.core.list_namespaced_pod, namespace)
        self._events = Watched(kube.core.list_namespaced_event, namespace)
        self._pods.on_change(lambda kind, obj: self._queue.put(Change(kind, pod=pod_view(obj), t=self._clock())))
        self._events.on_change(lambda kind, obj: self._queue.put(Change(kind, event=event_view(obj), t=self._clock())))
        try:
            self._pods.start()
            self._events.start()
        except BaseException:
            self.close()
            raise

    def next(self, timeout: float) -> Change | None:
        self._pods.check()  # a watch that keeps failing ends the scenario with its reason
        self._events.check()
        try:
            return self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None

    def close(self) -> None:
        self._pods.stop()
        self._events.stop()


class LiveCluster:
    """A running lab, as the engine sees it."""

    def __init__(self, kube: Kube):
        self.kube = kube

    def clock(self) -> float:
        return time.monotonic()

    def clear_scenarios(self) -> list[str]:
        return clear_scenarios(self.kube)

    def ensure_namespace(self, name: str, labels: dict[str, str]) -> None:
        self.kube.ensure_namespace(name, labels)

    def apply(self, obj: dict) -> None:
        self.kube.apply(obj)

    def delete(self, obj: dict) -> None:
        meta = obj["metadata"]
        self.kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))

    def delete_pods(self, namespace: str, workload: str) -> None:
        # ReplicaSets too: until the garbage collector gets to them, one would replace the pods deleted here.
        selector = f"{WORKLOAD_LABEL}={workload}"
        self.kube.apps.delete_collection_namespaced_replica_set(namespace, label_selector=selector,
                                                               propagation_policy="Background")
        self.kube.core.delete_collection_namespaced_pod(namespace, label_selector=selector, grace_period_seconds=0)

    def changes(self, namespace: str) -> LiveChanges:
        return LiveChanges(self.kube, namespace, self.clock)


def clear_scenarios(kube: Kube) -> list[str]:
    """Empty every scenario namespace (workloads, pods, events) so the fleet is free; the ones that had pods."""
    namespaces = [ns.metadata.name for ns in kube.core.list_namespace(label_selector=SCENARIO_LABEL).items]
    busy = [n for n in namespaces if kube.core.list_namespaced_pod(n, limit=1).items]
    for name in namespaces:
        kube.empty_namespace(name)
    return busy
