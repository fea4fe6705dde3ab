"""``kailab bench``: how fast KAI binds one Job's pods, next to the default kube-scheduler, on the running lab.

For the run it adds a pool of KWOK nodes (``kwok-bench-*``, labelled as kailab's fleet), submits
one Job of one-GPU pods per scheduler onto that pool, watches the pods to Running, and reads each
stage from the timestamps the cluster records: created → grouped (KAI's pod-grouper annotated the
pod) → bound → Running. Everything it added is deleted afterwards.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime

from kailab.fleet import Fleet, Pool, create_fleet, node_objects
from kailab.kube import Kube, Watched, wait_until
from kailab.labels import (
    KAI_SCHEDULER,
    KWOK_TOLERATION,
    MANAGED,
    POD_GROUP_ANNOTATION,
    POOL_LABEL,
    QUEUE_API,
    QUEUE_LABEL,
    SCENARIO_LABEL,
)
from kailab.progress import Progress

NAMESPACE = "kailab-bench"
QUEUE = "kailab-bench"
POOL = "bench"
SCHEDULERS = {"kai": KAI_SCHEDULER, "default": "default-scheduler"}


@dataclass
class BenchRun:
    """One scheduler's run: seconds from submitting the Job, and the stages by the cluster's own clock."""

    scheduler: str
    pods: int
    to_bound: float = 0.0  # all pods bound (as watched)
    to_running: float = 0.0  # all pods Running (as watched)
    stages: dict[str, float] = field(default_factory=dict)  # stage → seconds after the first pod was created
    finished: bool = True

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.to_bound if self.to_bound else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "pods_per_second": round(self.pods_per_second, 1)}


def _time(text: str | None) -> float | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


def stage_times(pods: list[dict]) -> dict[str, float]:
    """When the last pod reached each stage, in seconds after the first pod was created (1 s resolution:
    Kubernetes records seconds). ``grouped`` is when KAI's pod-grouper wrote the pod-group-name annotation."""
    created, grouped, bound, running = [], [], [], []
    for p in pods:
        meta, status = p["metadata"], p.get("status") or {}
        created.append(_time(meta.get("creationTimestamp")))
        for mf in meta.get("managedFields") or []:
            if f"f:{POD_GROUP_ANNOTATION}" in str(mf.get("fieldsV1", {})):
                grouped.append(_time(mf.get("time")))
        conds = {c["type"]: c for c in status.get("conditions") or [] if c.get("status") == "True"}
        bound.append(_time((conds.get("PodScheduled") or {}).get("lastTransitionTime")))
        running.append(_time((conds.get("Ready") or {}).get("lastTransitionTime")))
    first = min((t for t in created if t is not None), default=None)
    if first is None:
        return {}
    out = {"created": max(t for t in created if t is not None) - first}
    for name, times in (("grouped", grouped), ("bound", bound), ("running", running)):
        if times and all(t is not None for t in times) and len(times) == len(pods):
            out[name] = max(times) - first
    return out


def job(scheduler: str, pods: int) -> dict:
    """One Job of ``pods`` one-GPU pods for ``scheduler``, pinned to the bench pool."""
    labels = {**MANAGED, SCENARIO_LABEL: "bench", **({QUEUE_LABEL: QUEUE} if scheduler == KAI_SCHEDULER else {})}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"bench-{scheduler}", "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "parallelism": pods, "completions": pods, "backoffLimit": 100000,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": scheduler, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                    "nodeSelector": {POOL_LABEL: POOL}, "tolerations": [dict(KWOK_TOLERATION)],
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                },
            },
        },
    }


def bench_fleet(nodes: int, gpus_per_node: int) -> Fleet:
    return Fleet((Pool(POOL, nodes, gpus_per_node, "NVIDIA-A100-SXM4-80GB", 81920),))


def run_one(kube: Kube, scheduler: str, pods: int, timeout: float, progress: Progress) -> BenchRun:
    """Submit one Job, watch it to all Running, read its stages; the Job is deleted at the end."""
    result = BenchRun(scheduler=scheduler, pods=pods)
    cond = threading.Condition()
    watched = Watched(kube.core.list_namespaced_pod, NAMESPACE, cond=cond, label_selector=f"job-name=bench-{scheduler}")
    watched.start()
    try:
        with progress.step(f"{scheduler}: {pods} one-GPU pods to Running") as st:
            start = time.monotonic()
            kube.apply(job(scheduler, pods))

            def count(pred) -> int:
                return sum(1 for p in watched.snapshot() if pred(p))

            def bound() -> bool:
                n = count(lambda p: bool(p.spec.node_name))
                st.note(f"{n}/{pods} bound")
                return n >= pods

            def running() -> bool:
                n = count(lambda p: p.status.phase == "Running")
                st.note(f"{n}/{pods} Running")
                return n >= pods

            result.finished = wait_until(cond, bound, timeout)
            result.to_bound = time.monotonic() - start
            result.finished = result.finished and wait_until(cond, running, max(1.0, timeout - result.to_bound))
            result.to_running = time.monotonic() - start
            st.note(f"{result.to_running:.1f}s" if result.finished else f"not all Running within {timeout:.0f}s")
        listing = kube.core.list_namespaced_pod(NAMESPACE, label_selector=f"job-name=bench-{scheduler}")
        result.stages = stage_times([kube.api.sanitize_for_serialization(p) for p in listing.items])
    finally:
        watched.stop()
        kube.delete("batch/v1", "Job", f"bench-{scheduler}", NAMESPACE)
    return result


def run(kube: Kube, schedulers: list[str], pods: int, nodes: int, gpus_per_node: int, progress: Progress,
        timeout: float = 600) -> list[BenchRun]:
    """The bench: a pool of its own, a queue for KAI, one run per scheduler; everything removed after."""
    fleet = bench_fleet(nodes, gpus_per_node)
    names = [n["metadata"]["name"] for n in node_objects(fleet)]
    runs = []
    try:
        with progress.step(f"Adding {nodes} bench nodes × {gpus_per_node} GPUs"):
            create_fleet(kube, fleet)
        kube.ensure_namespace(NAMESPACE, {SCENARIO_LABEL: "bench"})
        # Its quota covers every bench pod: KAI binds them as deserved, not as a share of spare GPUs that
        # other queues (a lesson left running) may be asking for too.
        unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
        kube.apply({"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": QUEUE, "labels": dict(MANAGED)},
                    "spec": {"resources": {"gpu": {"quota": pods, "limit": -1, "overQuotaWeight": 1},
                                           "cpu": unlimited, "memory": unlimited}}})
        for name in schedulers:
            kube.empty_namespace(NAMESPACE)
            runs.append(run_one(kube, name, pods, timeout, progress))
    finally:
        with progress.step("Removing the bench's Job, queue and nodes"):
            kube.empty_namespace(NAMESPACE, timeout=max(60.0, pods / 20))
            kube.delete(QUEUE_API, "Queue", QUEUE)
            for name in names:
                kube.delete("v1", "Node", name)
    return runs
