"""``kailab explain``: why a pod is where it is, in plain words, from what the schedulers wrote.

It reads KAI's PodGroup events and conditions and the pod's own condition; it does not
re-derive KAI's decision. :func:`explain_pod` is pure (objects in, explanation out);
:func:`gather` fetches those objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kailab.gpus import is_fraction
from kailab.kube import Kube
from kailab.labels import DEFAULT_SCHEDULER_NAME, QUEUE_API, QUEUE_LABEL
from kailab.labels import KAI_SCHEDULER_NAME as KAI
from kailab.pods import PodView, event_view, pod_view
from kailab.status import nodes_and_gpus
from kailab.status import queues as queue_rows

# KAI's words → (what it means, runbook). First match wins. Where KAI writes them (v0.17.0):
# pkg/scheduler/cache/cluster_info/cluster_info.go (queue), pkg/scheduler/api/unschedule_info.go (over quota,
# limit), pkg/scheduler/actions/common/allocate.go and cache/status_updater (gang), actions/utils/input_jobs.go
# (preemption delay), k8s_internal/k8s_internal.go and kube-scheduler (no room).
KNOWN_REASONS = [
    (r"Queue '.*' does not exist", "the queue it names does not exist", "runbooks/pod-pending-forever.md"),
    (
        r"Non-preemptible workload is over quota",
        "it is non-preemptible and its queue is at its quota; non-preemptible work may never go over quota",
        "runbooks/borrowing-not-happening.md",
    ),
    (
        r"allowable limit of (CPU|memory)",
        "its queue's CPU or memory limit is reached — an unset limit is 0 to KAI",
        "runbooks/pod-pending-forever.md",
    ),
    (
        r"allowable limit",
        "its queue, or the queue above it that KAI names, is at its GPU limit",
        "runbooks/borrowing-not-happening.md",
    ),
    (
        r"within its preemption delay window",
        "it has a preemption delay (kai.scheduler/preemption-delay) that has "
        "not elapsed: until then it may take only free GPUs, not evict anyone",
        "runbooks/reclaim-not-happening.md",
    ),
    (
        r"required for gang scheduling|not ready for scheduling",
        "its gang cannot start whole yet",
        "runbooks/gang-not-binding.md",
    ),
    (r"enough resources|Insufficient", "no node has room for it", "runbooks/pod-pending-forever.md"),
]


@dataclass
class Explanation:
    pod: str
    state: str  # Bound | Pending
    summary: str
    reported: str = ""  # the scheduler's own words
    runbook: str = ""
    details: list[str] = field(default_factory=list)


def explain_pod(
    pod: PodView,
    messages: list[str],
    queue: dict | None,
    queue_exists: bool,
    is_leaf: bool,
    nodes: list[dict],
    standing: dict | None = None,
) -> Explanation:
    """Decide the explanation from plain data.

    Args:
        pod: the pod.
        messages: what schedulers reported for it, oldest first (PodGroup events, pod condition).
        queue: the pod's queue label value and the Queue object, if any ({"name", "object"}).
        queue_exists / is_leaf: facts about that queue.
        nodes: rows of ``status.nodes_and_gpus``.
        standing: the pod's queue's row of ``status.queues`` (quota, allocated, fair share), if known.
    """
    name = f"{pod.namespace}/{pod.name}"
    scheduler = pod.scheduler
    if pod.node:
        by = "KAI Scheduler" if scheduler == KAI else f"the {scheduler}"
        return Explanation(name, "Bound", f"Bound to {pod.node} by {by}; phase {pod.phase}.")
    last = messages[-1] if messages else ""
    if scheduler not in (KAI, DEFAULT_SCHEDULER_NAME):
        return Explanation(
            name,
            "Pending",
            f"No scheduler named '{scheduler}' runs here, so nothing will ever place it (KAI's is '{KAI}').",
            runbook="runbooks/pod-pending-forever.md",
        )
    if scheduler == KAI and not pod.pod_group:
        return Explanation(
            name,
            "Pending",
            "KAI's pod-grouper has not given it a PodGroup yet (is kai-podgrouper running? kailab status).",
            runbook="runbooks/pod-pending-forever.md",
        )
    q = pod.queue or "default-queue"
    if scheduler == KAI and queue_exists and not is_leaf:
        return Explanation(
            name,
            "Pending",
            f"Its queue '{q}' is a parent queue; KAI skips jobs in non-leaf queues "
            "and says nothing. Submit to a leaf queue.",
            runbook="runbooks/pod-pending-forever.md",
        )
    for pattern, meaning, runbook in KNOWN_REASONS:
        if re.search(pattern, last):
            exp = Explanation(
                name, "Pending", f"Pending because {meaning} (queue '{q}').", reported=last, runbook=runbook
            )
            if "room" in meaning:
                exp.details.append(nearest_node(nodes, pod.gpus))
                if standing:
                    exp.details.append(queue_standing(standing))
            if not pod.queue and scheduler == KAI:
                exp.details.append(f"It has no {QUEUE_LABEL} label, so KAI put it in default-queue (quota 0).")
            return exp
    if last:
        return Explanation(name, "Pending", f"Pending (queue '{q}'); the scheduler says:", reported=last)
    return Explanation(
        name, "Pending", "Pending, and no scheduler has reported on it yet; look again in a few seconds."
    )


def queue_standing(row: dict) -> str:
    """Why a full fleet may or may not make room: where the queue stands against its quota and fair share."""
    name, held, quota, share = row["name"], row["allocated"], row.get("quota"), row.get("fair_share")
    if share is not None and held >= share:
        return (
            f"Its queue '{name}' holds {held:g} GPUs, its fair share is {share:g}: the spare GPUs are "
            "other queues' share now, so KAI will not reclaim for it."
        )
    below_quota = quota is not None and quota >= 0 and held < quota
    if below_quota or (share is not None and held < share):
        where = f"{held:g} of its quota {quota:g}" if below_quota else f"{held:g} GPUs, below its fair share {share:g}"
        return (
            f"Its queue '{name}' holds {where}: KAI reclaims for it from queues over their quota or fair "
            "share — unless their pods are non-preemptible or inside their queue's reclaimMinRuntime."
        )
    return f"Its queue '{name}' holds {held:g} GPUs" + (f" (fair share {share:g})." if share is not None else ".")


def nearest_node(nodes: list[dict], need: float) -> str:
    """The node closest to fitting the pod (most free GPUs, a shared GPU not free: :mod:`kailab.gpus`), and what it lacks."""
    if not nodes:
        return "There are no nodes."
    best = max(nodes, key=lambda n: n["free"])
    wants = f"a {need:g} fraction of one GPU" if is_fraction(need) else f"{need:g}"
    return (
        f"Nearest node: {best['name']} ({best['pool']}) has {best['free']} free GPU(s) of {best['gpus']}; "
        f"the pod needs {wants}."
    )


def gather(
    kube: Kube,
    name: str,
    namespace: str,
    fair_shares: dict[str, float] | None = None,
    visible: list | None = None,
    node_selector: str = "",
) -> list[Explanation]:
    """Explanations for a pod, or for every pod of a Job of that name; ``visible`` and ``node_selector``: the pods
    and nodes a class learner may see (None and "": the cluster's)."""

    def owned_by(p) -> bool:
        refs = p.metadata.owner_references or []
        return any(r.kind == "ReplicaSet" and r.name.startswith(f"{name}-") for r in refs)

    pods = [
        p
        for p in kube.core.list_namespaced_pod(namespace).items
        if p.metadata.name == name or (p.metadata.labels or {}).get("job-name") == name or owned_by(p)
    ]
    return explain_pods(kube, pods, namespace, fair_shares, visible, node_selector)


def explain_pods(
    kube: Kube,
    pods: list,
    namespace: str,
    fair_shares: dict[str, float] | None = None,
    visible: list | None = None,
    node_selector: str = "",
) -> list[Explanation]:
    """Explanations for these pods of one namespace (the client's objects), from its events, the queues and the
    nodes (``visible``, ``node_selector``: as :func:`gather`)."""
    if not pods:
        return []
    events = sorted((event_view(e) for e in kube.core.list_namespaced_event(namespace).items), key=lambda e: e.time)
    queues = {q["metadata"]["name"]: q for q in kube.list(QUEUE_API, "Queue")}
    parents = {q.get("spec", {}).get("parentQueue") for q in queues.values()}
    nodes = nodes_and_gpus(kube, visible, node_selector)  # a class learner: their pods and nodes
    standing = {row["name"]: row for row in queue_rows(kube, visible, fair_shares)}
    out = []
    for p in map(pod_view, pods):
        messages = [e.message for e in events if e.says_why_waiting and e.name in (p.name, p.pod_group)]
        if p.waiting:
            messages.append(p.waiting)
        q = p.queue or "default-queue"
        out.append(explain_pod(p, messages, queues.get(q), q in queues, q not in parents, nodes, standing.get(q)))
    return out
