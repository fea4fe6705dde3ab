"""``kailab bench``: how fast KAI binds one Job's pods, next to the default kube-scheduler, on the running lab.

For the run it adds a pool of KWOK nodes (``kwok-bench-*``, labelled as kailab's fleet), submits
one Job of one-GPU pods per scheduler onto that pool, watches the pods to Running, and reads each
stage from the timestamps the cluster records: created → grouped (KAI's pod-grouper annotated the
pod) → bound → Running. Its Job, queue and nodes are deleted afterwards; its namespace (``kailab-bench``, empty)
is kept for the next run, and goes with ``kailab down``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from kubernetes import client

from kailab import gpus
from kailab.errors import KailabError
from kailab.fleet import Fleet, Pool, create_fleet, node_objects
from kailab.kube import Kube, as_json, wait_until
from kailab.labels import (
    BIND_REQUEST_API,
    DEFAULT_SCHEDULER_NAME,
    KAI_SCHEDULER_NAME,
    KWOK_TOLERATION,
    MANAGED,
    POD_GROUP_ANNOTATION,
    POOL_LABEL,
    QUEUE_API,
    QUEUE_LABEL,
    SCENARIO_LABEL,
)
from kailab.pods import api_time
from kailab.progress import Progress
from kailab.queues import queue_object, resource
from kailab.watched import Watched

NAMESPACE = "kailab-bench"
QUEUE = "kailab-bench"
POOL = "bench"
# Without it a lesson's pending pods took two of the bench's GPUs and its Job never finished (seen).
BENCH_TAINT = {"key": "kailab.io/bench", "value": "only", "effect": "NoSchedule"}
BENCH_TOLERATION = {"key": "kailab.io/bench", "operator": "Equal", "value": "only", "effect": "NoSchedule"}
SCHEDULERS = {"kai": KAI_SCHEDULER_NAME, "default": DEFAULT_SCHEDULER_NAME}


# A pod's way to Running, in order. "bind request": KAI's scheduler created the pod's BindRequest (its decision,
# which KAI's binder then carries out); kube-scheduler binds directly and has no such stage, nor "grouped".
STAGES = ("created", "grouped", "bind request", "bound", "Running")


@dataclass
class BenchRun:
    """One scheduler's run: seconds from submitting the Job, and the stages by the cluster's own clock."""

    scheduler: str
    pods: int
    to_bound: float = 0.0  # all pods bound (as watched)
    to_running: float = 0.0  # all pods Running (as watched)
    watched: dict[str, float] = field(
        default_factory=dict
    )  # stage → seconds after submitting until the last pod got there
    stages: dict[str, float] = field(default_factory=dict)  # the same from the cluster's timestamps (whole seconds)
    peak_memory_mib: float | None = None  # every lab process together, while this run ran (None: the runtime can't say)
    finished: bool = True

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.to_bound if self.to_bound else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "pods_per_second": round(self.pods_per_second, 1)}


class StageClock:
    """When each pod first reached each stage, as the watches reported it: pods from the pod watch, "bind request"
    from the BindRequest watch (``spec.podName``). Sub-second, where the cluster's own timestamps are whole seconds."""

    def __init__(self, start: float, clock=time.monotonic):
        self.start = start
        self.clock = clock
        self.first: dict[str, dict[str, float]] = {stage: {} for stage in STAGES}

    def saw(self, stage: str, pod: str) -> None:
        self.first[stage].setdefault(pod, self.clock() - self.start)  # dict.setdefault is atomic under the GIL

    def pod_changed(self, kind: str, pod: dict) -> None:
        if kind == "DELETED":
            return
        for stage in pod_stages(pod):
            self.saw(stage, pod["metadata"]["name"])

    def bind_request_changed(self, kind: str, obj: dict) -> None:
        pod = (obj.get("spec") or {}).get("podName")
        if kind != "DELETED" and pod:
            self.saw("bind request", pod)

    def last(self, pods: int) -> dict[str, float]:
        """Stage → when the last of ``pods`` pods reached it; stages not every pod reached are left out."""
        return {stage: round(max(seen.values()), 2) for stage, seen in self.first.items() if len(seen) >= pods}


def pod_stages(pod: dict) -> list[str]:
    """The stages a pod (as the API sends it: JSON) has reached, as it is now."""
    out = ["created"]
    if POD_GROUP_ANNOTATION in (pod["metadata"].get("annotations") or {}):
        out.append("grouped")
    if (pod.get("spec") or {}).get("nodeName"):
        out.append("bound")
    if (pod.get("status") or {}).get("phase") == "Running":
        out.append("Running")
    return out


def stage_times(pods: list[dict]) -> dict[str, float]:
    """When the last pod reached each stage, in seconds after the first pod was created (1 s resolution:
    Kubernetes records seconds). ``grouped`` is when KAI's pod-grouper wrote the pod-group-name annotation."""
    created, grouped, bound, running = [], [], [], []
    for p in pods:
        meta, status = p["metadata"], p.get("status") or {}
        created.append(api_time(meta.get("creationTimestamp")))
        for mf in meta.get("managedFields") or []:
            if f"f:{POD_GROUP_ANNOTATION}" in str(mf.get("fieldsV1", {})):
                grouped.append(api_time(mf.get("time")))
        conds = {c["type"]: c for c in status.get("conditions") or [] if c.get("status") == "True"}
        bound.append(api_time((conds.get("PodScheduled") or {}).get("lastTransitionTime")))
        running.append(api_time((conds.get("Ready") or {}).get("lastTransitionTime")))
    first = min((t for t in created if t is not None), default=None)
    if first is None:
        return {}
    out = {"created": max(t for t in created if t is not None) - first}
    for name, times in (("grouped", grouped), ("bound", bound), ("running", running)):
        known = [t for t in times if t is not None]
        if times and len(known) == len(times) == len(pods):
            out[name] = max(known) - first
    return out


class PeakMemory:
    """Samples ``memory()`` (MiB of every lab process, or None) twice a second in a thread; ``peak`` is the highest."""

    def __init__(self, memory: Callable[[], float | None] | None):
        self.memory = memory
        self.peak: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        if self.memory is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        memory = self.memory
        if memory is None:
            return  # not started without one
        while True:
            now = memory()
            if now is not None:
                self.peak = max(self.peak or 0.0, now)
            if self._stop.wait(0.5):
                return


def job(scheduler: str, pods: int) -> dict:
    """One Job of ``pods`` one-GPU pods for ``scheduler``, pinned to the bench pool."""
    labels = {**MANAGED, SCENARIO_LABEL: "bench", **({QUEUE_LABEL: QUEUE} if scheduler == KAI_SCHEDULER_NAME else {})}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"bench-{scheduler}", "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 100000,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": scheduler,
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "nodeSelector": {POOL_LABEL: POOL},
                    "tolerations": [dict(KWOK_TOLERATION), dict(BENCH_TOLERATION)],
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"limits": gpus.request(1)[0]},
                        }
                    ],
                },
            },
        },
    }


def bench_fleet(nodes: int, gpus_per_node: int) -> Fleet:
    """The bench's own nodes, tainted: a lesson's pods left running (or pending) cannot take their GPUs."""
    return Fleet((Pool(POOL, nodes, gpus_per_node, "NVIDIA-A100-SXM4-80GB", 81920),), taints=(BENCH_TAINT,))


def _bind_requests(kube: Kube) -> Watched | None:
    """A watch of the bench namespace's BindRequests (KAI's scheduling decisions); None on a cluster without KAI."""
    try:
        kube.resource(BIND_REQUEST_API, "BindRequest")
    except Exception:
        return None
    group, version = BIND_REQUEST_API.split("/")
    api = client.CustomObjectsApi(kube.api)
    return Watched(
        lambda namespace, **kw: api.list_namespaced_custom_object(group, version, namespace, "bindrequests", **kw),
        NAMESPACE,
    )


def run_one(
    kube: Kube,
    scheduler: str,
    pods: int,
    timeout: float,
    progress: Progress,
    memory: Callable[[], float | None] | None = None,
) -> BenchRun:
    """Submit one Job, watch it to all Running, read its stages; the Job is deleted at the end."""
    result = BenchRun(scheduler=scheduler, pods=pods)
    cond = threading.Condition()
    # the API's JSON: turning 8,000 pods' every change into client objects kept the bench's own watch minutes behind
    # the cluster (and took a core from the lab it measures)
    watched = Watched(
        as_json(kube.core.list_namespaced_pod), NAMESPACE, cond=cond, label_selector=f"job-name=bench-{scheduler}"
    )
    requests = _bind_requests(kube) if scheduler == KAI_SCHEDULER_NAME else None
    stages = StageClock(time.monotonic())
    watched.on_change(stages.pod_changed)
    if requests is not None:
        requests.on_change(stages.bind_request_changed)
    try:
        for w in (watched, requests):
            if w is not None:
                w.start()
        with progress.step(f"{scheduler}: {pods} one-GPU pods to Running") as st, PeakMemory(memory) as peak:
            start = stages.start = time.monotonic()
            kube.apply(job(scheduler, pods))

            def reached(stage: str) -> bool:
                n = len(stages.first[stage])
                st.note(f"{n}/{pods} {stage}")
                return n >= pods

            result.finished = wait_until(cond, lambda: reached("bound"), timeout)
            result.to_bound = round(time.monotonic() - start, 2)  # as StageClock.last rounds what the watches saw
            result.finished = result.finished and wait_until(
                cond, lambda: reached("Running"), max(1.0, timeout - result.to_bound)
            )
            result.to_running = round(time.monotonic() - start, 2)
            if result.finished:
                st.note(f"{result.to_running:.1f}s")
            else:  # a wait that did not hold is ✗, with what was seen
                st.fail(
                    f"not all Running within {timeout:.0f}s: {len(stages.first['bound'])} bound, "
                    f"{len(stages.first['Running'])} Running of {pods}"
                )
        result.peak_memory_mib = peak.peak
        result.watched = stages.last(pods)
        result.stages = stage_times(kube.pods(NAMESPACE, label_selector=f"job-name=bench-{scheduler}"))
    finally:
        for w in (watched, requests):
            if w is not None:
                w.stop()
        with contextlib.suppress(Exception):  # the bench's clean-up (run) empties the namespace all the same
            kube.delete("batch/v1", "Job", f"bench-{scheduler}", NAMESPACE)
    return result


def run(
    kube: Kube,
    schedulers: list[str],
    pods: int,
    nodes: int,
    gpus_per_node: int,
    progress: Progress,
    timeout: float = 600,
    memory: Callable[[], float | None] | None = None,
) -> list[BenchRun]:
    """The bench: a pool of its own, a queue for KAI, one run per scheduler; everything removed after.

    ``memory``: MiB of every lab process now (the runtime's ``Capabilities.memory``; None where it cannot say)."""
    fleet = bench_fleet(nodes, gpus_per_node)
    names = [n["metadata"]["name"] for n in node_objects(fleet)]
    runs = []
    try:
        with progress.step(f"Adding {nodes} bench nodes × {gpus_per_node} GPUs"):
            create_fleet(kube, fleet, timeout=max(120.0, nodes / 10))
        kube.ensure_namespace(NAMESPACE, {SCENARIO_LABEL: "bench"})
        # Its quota covers every bench pod: KAI binds them as deserved, not as a share of spare GPUs that
        # other queues (a lesson left running) may be asking for too.
        kube.apply(queue_object(QUEUE, gpu=resource(pods)))
        for name in schedulers:
            kube.empty_namespace(NAMESPACE, timeout=max(60.0, pods / 20))
            runs.append(run_one(kube, name, pods, timeout, progress, memory))
    finally:
        clean_up(kube, names, pods, progress)
    return runs


def clean_up(kube: Kube, names: list[str], pods: int, progress: Progress) -> None:
    """Remove the bench's Job and pods, queue and nodes: each part tried whatever happened to the others (a part
    that fails is said once, with what is left), so a clean-up that fails half-way still removes the rest."""
    left = []
    with progress.step("Removing the bench's Job, queue and nodes") as st:
        for what, remove in (
            (
                f"its Job and pods in namespace {NAMESPACE}",
                lambda: kube.empty_namespace(NAMESPACE, timeout=max(60.0, pods / 20)),
            ),
            (f"its queue {QUEUE}", lambda: kube.delete(QUEUE_API, "Queue", QUEUE)),
            (f"{{n}} of its nodes kwok-{POOL}-*", lambda: delete_nodes(kube, names)),
        ):
            try:
                remove()
            except KeyboardInterrupt:
                raise
            except Exception as e:  # noqa: BLE001 (said below, with what is left)
                count = len(e.args[0]) if isinstance(e, NodesLeft) else len(names)
                left.append(f"{what.format(n=count)} ({_words(e)})")
        if left:
            st.fail(f"some of the bench's objects are left: {'; '.join(left)}")
    if left:
        progress.console.print(
            "Run kailab bench again (it reuses and removes what is left) or kailab down.", style="yellow"
        )


def _cores(cores: int | None) -> str:
    n = cores or os.cpu_count() or 1
    return f"{n} core{'s' if n != 1 else ''}"


class NodesLeft(Exception):
    """Nodes the bench could not delete (their names in ``args[0]``)."""


def _words(e: Exception) -> str:
    if isinstance(e, NodesLeft):
        return f"the API server refused or did not answer: {e.args[1]}"
    return getattr(e, "message", None) or f"{type(e).__name__}: {str(e)[:200]}"


def delete_nodes(kube: Kube, names: list[str]) -> None:
    """Delete the bench's nodes, 16 at a time (a thousand one by one took minutes); each node is tried (twice) whatever
    happens to the others, and the ones left are raised together (NodesLeft)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(name: str) -> str | None:
        for _ in range(2):
            try:
                kube.delete("v1", "Node", name)
                return None
            except Exception as e:  # noqa: BLE001 (tried again, then said with the others)
                why = f"{type(e).__name__}: {str(e)[:120]}"
        return why

    with ThreadPoolExecutor(max_workers=16) as pool:
        failed = {n: why for n, why in zip(names, pool.map(one, names), strict=True) if why}
    if failed:
        raise NodesLeft(sorted(failed), next(iter(failed.values())))


def check_size(
    nodes: int,
    gpus_per_node: int,
    pods: int,
    schedulers: list[str],
    timeout: float = 600,
    available_mib: float | None = None,
    cores: int | None = None,
) -> None:
    """Refuse, before anything is made, a bench this machine cannot hold: more memory than it has for the nodes and
    the pods of every run (kailab/sizing.py's figures), or more pods than a scheduler binds within the run's
    ``timeout`` many times over."""
    from kailab import sizing

    if short := sizing.memory_shortfall(nodes, pods, len(schedulers), available_mib=available_mib):
        room = (sizing.free_mib() if available_mib is None else available_mib) - sizing.RESERVE_MIB
        most = max(0, int((room - nodes * sizing.MIB_PER_NODE) / (sizing.MIB_PER_POD * len(schedulers))))
        raise KailabError(
            f"This machine cannot hold this bench: {short}. Nothing was made.",
            hint=f"Fewer pods or nodes: about {most:,} pods fit beside {nodes:,} nodes now (--pods N)."
            if most
            else "Fewer nodes (--nodes N), or a machine with more memory.",
        )
    for name in schedulers:
        seconds = sizing.binding_seconds(pods, name, cores)
        if seconds > 2 * timeout:
            per_core = sizing.PODS_PER_SECOND_PER_CORE[name]
            most = int(timeout * per_core * (cores or os.cpu_count() or 1))
            raise KailabError(
                f"{pods:,} pods are more than the bench can time here: {name} binds about {per_core:g} pods a second "
                f"per core (measured), so on this machine's {_cores(cores)} they would take about "
                f"{seconds / 60:,.0f} minutes, and the bench stops each run after {timeout / 60:.0f}. Nothing was made.",
                hint=f"At most about {most:,} pods (--pods N), or a machine with more cores.",
            )
