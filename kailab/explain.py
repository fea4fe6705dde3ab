"""``kailab explain``: why a pod is where it is, in plain words, from what the schedulers wrote.

It reads KAI's PodGroup events (its reasons and its evictions) and conditions, the pod's own condition and
fields, and, for a Job with no pods, its controller's events; it does not re-derive KAI's decision.
:func:`explain_pod` and :func:`explain_podless_job` are pure (objects in, explanation out); :func:`gather`
fetches those objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kailab.gpus import is_fraction
from kailab.kube import Kube
from kailab.labels import (
    DEFAULT_SCHEDULER_NAME,
    NODEPOOL_LABEL,
    OLD_QUEUE_LABEL,
    POD_GROUP_ANNOTATION,
    PODGROUP_API,
    PRIORITY_CLASS_LABEL,
    QUEUE_API,
    QUEUE_LABEL,
)
from kailab.labels import KAI_SCHEDULER_NAME as KAI
from kailab.pods import PodView, event_view, pod_view
from kailab.status import nodes_and_gpus
from kailab.status import queues as queue_rows

# KAI's binder, when a GPU-sharing pod's reservation pod got no GPU (pkg/binder/binding/resourcereservation/
# resource_reservation.go, in the BindingError of pkg/binder/controllers/bindrequest_controller.go).
RESERVATION_FAILED = r"GPU reservation pod|could not create reservation pod"

# KAI's StaleJob event on a running gang short of pods (pkg/scheduler/cache/status_updater/default_status_updater.go).
STALE = r"Job is stale"

# KAI's words → (what it means, runbook). First match wins. Where KAI writes them (v0.17.0):
# pkg/scheduler/cache/cluster_info/cluster_info.go (queue), pkg/scheduler/api/unschedule_info.go (over quota,
# limit), pkg/scheduler/actions/common/allocate.go and cache/status_updater (gang, stale gang),
# actions/utils/input_jobs.go (preemption delay), k8s_internal/predicates/maxNodeResources.go (bigger than any
# node), pkg/binder/binding/resourcereservation/resource_reservation.go and pkg/binder/controllers/
# bindrequest_controller.go (GPU sharing), k8s_internal/predicates (Kubernetes' node filters, run inside KAI) and
# kube-scheduler (node constraints, no room).
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
        r"available in a single node in the .* node-pool is topped at|No node in the .* node-pool has",
        "it asks for more in one pod than any node has: no node can ever hold it",
        "runbooks/too-big.md",
    ),
    (
        STALE,
        "its gang ran with fewer pods than its minMember (stale): KAI evicts a stale gang's pods after the "
        "staleness grace period, and a Job makes them again — they wait for the whole gang",
        "runbooks/stale-gang.md",
    ),
    (
        r"required for gang scheduling|not ready for scheduling",
        "its gang cannot start whole yet",
        "runbooks/gang-not-binding.md",
    ),
    (
        RESERVATION_FAILED,
        "KAI chose a GPU to share, but its binder could not reserve it: the GPU reservation pod got no GPU",
        "runbooks/gpu-sharing-reservation.md",
    ),
    (
        r"node affinity/selector|untolerated taint|node\(s\) had taint",
        "no node both matches its node selector, affinity and tolerations and has room for it",
        "runbooks/node-constraints.md",
    ),
    (r"enough resources|Insufficient", "no node has room for it", "runbooks/pod-pending-forever.md"),
]

# KAI's eviction words (Evict events on the PodGroup; pkg/scheduler/api/unschedule_info.go: consolidation,
# reclaim, stale gang) → (what happened,
# runbook). Read for pods that run again or wait again after KAI moved or evicted them.
KNOWN_EVICTIONS = [
    (
        r"resource consolidation",
        "KAI moved a pod of it to another node to make room for a bigger job (consolidation); the moved pod "
        "restarted from the beginning",
        "runbooks/consolidation.md",
    ),
    (
        r"was preempted by workload ",
        "KAI reclaimed a pod of it for another queue: its queue held more than its quota or fair share, and "
        "the other queue less than its own",
        "runbooks/reclaim-not-happening.md",
    ),
    (
        r"doesn't meet the minimum required number of pods",
        "KAI evicted the rest of its gang: fewer pods than its minMember were left (a stale gang)",
        "runbooks/stale-gang.md",
    ),
]
PREEMPTED_BY = re.compile(r"was preempted by higher priority workload ([\w.-]+/[\w.-]+)")
FORBIDDEN_PRIORITY = re.compile(r"no PriorityClass with name (\S+) was found")


@dataclass
class Explanation:
    pod: str
    state: str  # Bound | Pending | NoPods (a Job the API server gave no pods)
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
    evictions: list[str] | None = None,
    never_preemptors: frozenset[str] = frozenset(),
    ignored_class: tuple[str, str] | None = None,
) -> Explanation:
    """Decide the explanation from plain data.

    Args:
        pod: the pod.
        messages: what schedulers reported for it, oldest first (PodGroup events, pod condition).
        queue: the pod's queue label value and the Queue object, if any ({"name", "object"}).
        queue_exists / is_leaf: facts about that queue.
        nodes: rows of ``status.nodes_and_gpus``.
        standing: the pod's queue's row of ``status.queues`` (quota, allocated, fair share), if known.
        evictions: KAI's Evict messages on the pod's PodGroup, oldest first.
        never_preemptors: workloads ("ns/name") whose priority class says ``preemptionPolicy: Never``.
        ignored_class: (the priorityClassName label on the pod or its owner, the class its PodGroup got) when
            no PriorityClass has the label's name.
    """
    exp = _explain_now(pod, messages, queue_exists, is_leaf, nodes, standing)
    if pod.scheduler == KAI and not pod.queue and pod.old_queue:
        exp.details.append(
            f"It has the old {OLD_QUEUE_LABEL} label ('{pod.old_queue}'), which KAI v0.17.0 does not read: "
            f"KAI reads {QUEUE_LABEL} only, so it is in default-queue."
        )
        exp.runbook = "runbooks/old-queue-label.md"
    elif pod.scheduler == KAI and not pod.queue and exp.state == "Pending":
        exp.details.append(f"It has no {QUEUE_LABEL} label, so KAI put it in default-queue (quota 0).")
    # An eviction, or a class KAI did not take, is the story of a pod that is bound, or waits only for room (on a
    # node, or for its whole gang): it names the runbook then.
    first = (
        not exp.runbook
        or exp.summary.startswith("Pending because no node has room")
        or exp.runbook == "runbooks/gang-not-binding.md"
    )
    if ignored_class:
        exp.details.append(class_note(*ignored_class, pod.priority_class))
        if first:
            exp.runbook, first = "runbooks/misspelt-priority-class.md", False
    for detail, runbook in eviction_notes(evictions or [], never_preemptors):
        exp.details.append(detail)
        if first:
            exp.runbook, first = runbook, False
    stale = [m for m in messages if re.search(STALE, m)]
    if first and stale and exp.state == "Pending":
        # Its Evict event may be missing: KAI reports StaleJob every cycle, and client-go drops an object's events
        # past a burst of 25, so after a 60 s grace period the Evict that follows is often lost.
        exp.details.append(
            f"Its gang ran before with fewer pods than its minMember (KAI: “{stale[-1]}”); after the staleness "
            "grace period KAI evicts such a gang's pods, and its Job makes them again: they wait for the whole gang."
        )
        exp.runbook = "runbooks/stale-gang.md"
    return exp


def _explain_now(
    pod: PodView, messages: list[str], queue_exists: bool, is_leaf: bool, nodes: list[dict], standing: dict | None
) -> Explanation:
    """Why the pod is where it is now, from its scheduler's last words and its own fields."""
    name = f"{pod.namespace}/{pod.name}"
    scheduler = pod.scheduler
    last = messages[-1] if messages else ""
    if pod.node:
        by = "KAI Scheduler" if scheduler == KAI else f"the {scheduler}"
        exp = Explanation(name, "Bound", f"Bound to {pod.node} by {by}; phase {pod.phase}.")
        failed = [m for m in messages if re.search(RESERVATION_FAILED, m)]
        if re.search(STALE, last):
            exp.reported, exp.runbook = last, "runbooks/stale-gang.md"
            exp.details.append(
                "KAI says its gang is stale: fewer pods than its minMember are left. Unless the missing pods "
                "come back, KAI evicts the rest after the staleness grace period (60 s by default)."
            )
        elif failed:
            exp.reported, exp.runbook = failed[-1], "runbooks/gpu-sharing-reservation.md"
            exp.details.append(
                f"It bound late: KAI's binder failed {len(failed)} time(s) before, as the GPU reservation pod of "
                "the GPU it shares got no GPU in time (from the GPU operator; kailab's GPU ledger on the lab)."
            )
        return exp
    if pod.gates:
        return Explanation(
            name,
            "Pending",
            f"It has scheduling gates ({', '.join(pod.gates)}): no scheduler places it until whatever added "
            "them removes them all.",
            runbook="runbooks/scheduling-gate.md",
        )
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
    if scheduler == KAI and pod.node_pool and not last:
        return Explanation(
            name,
            "Pending",
            f"Its {NODEPOOL_LABEL} label is '{pod.node_pool}': only a KAI scheduler started for that node pool "
            "looks at it, and none has said a word about it. If no scheduler serves that pool, none ever will.",
            runbook="runbooks/node-pool-unserved.md",
        )
    for pattern, meaning, runbook in KNOWN_REASONS:
        if re.search(pattern, last):
            exp = Explanation(
                name, "Pending", f"Pending because {meaning} (queue '{q}').", reported=last, runbook=runbook
            )
            if meaning.startswith("no node has room"):
                exp.details.append(nearest_node(nodes, pod.gpus))
                if standing:
                    exp.details.append(queue_standing(standing))
            return exp
    if last:
        return Explanation(name, "Pending", f"Pending (queue '{q}'); the scheduler says:", reported=last)
    return Explanation(
        name, "Pending", "Pending, and no scheduler has reported on it yet; look again in a few seconds."
    )


def eviction_notes(evictions: list[str], never_preemptors: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(what happened, runbook) for each kind of eviction KAI reported on a pod's PodGroup, latest message of each."""
    latest: dict[str, tuple[str, str]] = {}
    for message in evictions:
        for pattern, meaning, runbook in KNOWN_EVICTIONS:
            if re.search(pattern, message):
                latest[pattern] = (f"{meaning}: “{message}”", runbook)
        m = PREEMPTED_BY.search(message)
        if m and m.group(1) in never_preemptors:
            latest["never"] = (
                f"KAI preempted a pod of it for {m.group(1)}, whose priority class says preemptionPolicy: Never "
                f"— KAI v0.17.0 does not read that field: “{message}”",
                "runbooks/preemption-policy-never.md",
            )
    return list(latest.values())


def class_note(label: str, used: str, spec: str) -> str:
    """What KAI's pod-grouper did with a priorityClassName label that names no PriorityClass (v0.17.0,
    pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go, calcPriorityClassWithDefaults)."""
    given = f"'{used}'" if used else "its default for the workload's kind"
    unlike = f", not the '{spec}' of its spec" if spec and spec != used else ""
    return (
        f"Its {PRIORITY_CLASS_LABEL} label names '{label}', and no PriorityClass has that name (a misspelt one?): "
        f"KAI's pod-grouper ignored the label, and its PodGroup got {given}{unlike}. Nobody reports this."
    )


def explain_podless_job(job: str, namespace: str, messages: list[str]) -> Explanation:
    """A Job with no pods: what its controller reported (FailedCreate events), oldest first."""
    name = f"{namespace}/{job}"
    last = messages[-1] if messages else ""
    m = FORBIDDEN_PRIORITY.search(last)
    if m:
        return Explanation(
            name,
            "NoPods",
            f"The Job has no pods: the API server refuses them, as no priority class '{m.group(1)}' exists "
            "(a misspelt name?). KAI never sees them.",
            reported=last,
            runbook="runbooks/misspelt-priority-class.md",
        )
    if last:
        return Explanation(name, "NoPods", "The Job has no pods; its controller says:", reported=last)
    return Explanation(name, "NoPods", "The Job has no pods yet, and its controller has reported nothing.")


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
    """Explanations for a pod, or for every pod of a Job or PodGroup of that name (or for a Job that has none);
    ``visible`` and ``node_selector``: the pods and nodes a class learner may see (None and "": the cluster's)."""

    def owned_by(meta: dict) -> bool:
        refs = meta.get("ownerReferences") or []
        return any(r.get("kind") == "ReplicaSet" and r.get("name", "").startswith(f"{name}-") for r in refs)

    def named(p: dict) -> bool:
        meta = p.get("metadata") or {}
        return (
            meta.get("name") == name
            or (meta.get("labels") or {}).get("job-name") == name
            or (meta.get("annotations") or {}).get(POD_GROUP_ANNOTATION) == name
            or owned_by(meta)
        )

    pods = [p for p in kube.pods(namespace) if named(p)]
    if pods:
        return explain_pods(kube, pods, namespace, fair_shares, visible, node_selector)
    if kube.get("batch/v1", "Job", name, namespace) is None:
        return []
    events = [event_view(e) for e in kube.events(namespace)]
    said = [
        e.message
        for e in sorted(events, key=lambda e: e.time)
        if e.kind == "Job" and e.name == name and e.says_why_waiting
    ]
    return [explain_podless_job(name, namespace, said)]


def explain_pods(
    kube: Kube,
    pods: list,
    namespace: str,
    fair_shares: dict[str, float] | None = None,
    visible: list | None = None,
    node_selector: str = "",
) -> list[Explanation]:
    """Explanations for these pods of one namespace (the API's JSON), from its events, the queues and the
    nodes (``visible``, ``node_selector``: as :func:`gather`)."""
    if not pods:
        return []
    events = sorted((event_view(e) for e in kube.events(namespace)), key=lambda e: e.time)
    queues = {q["metadata"]["name"]: q for q in kube.list(QUEUE_API, "Queue")}
    parents = {q.get("spec", {}).get("parentQueue") for q in queues.values()}
    nodes = nodes_and_gpus(kube, visible, node_selector)  # a class learner: their pods and nodes
    standing = {row["name"]: row for row in queue_rows(kube, visible, fair_shares)}
    out = []
    classes = {c["metadata"]["name"] for c in kube.list("scheduling.k8s.io/v1", "PriorityClass")}
    for raw, p in zip(pods, map(pod_view, pods), strict=True):
        messages = [e.message for e in events if e.says_why_waiting and e.name in (p.name, p.pod_group)]
        if p.waiting:
            messages.append(p.waiting)
        evictions = [
            e.message for e in events if e.reason == "Evict" and e.kind == "PodGroup" and e.name == p.pod_group
        ]
        q = p.queue or "default-queue"
        label = priority_label(kube, raw)
        ignored = None
        if label and label not in classes:
            group = kube.get(PODGROUP_API, "PodGroup", p.pod_group, namespace) if p.pod_group else None
            ignored = (label, ((group or {}).get("spec") or {}).get("priorityClassName") or "")
        out.append(
            explain_pod(
                p,
                messages,
                queues.get(q),
                q in queues,
                q not in parents,
                nodes,
                standing.get(q),
                evictions,
                never_preempting(kube, evictions),
                ignored,
            )
        )
    return out


def priority_label(kube: Kube, pod: dict) -> str:
    """The priorityClassName label KAI's pod-grouper reads first: on the pod's top owner (a Job, a Deployment
    through its ReplicaSet), else on the pod; "" when neither has one."""
    meta = pod.get("metadata") or {}
    found = (meta.get("labels") or {}).get(PRIORITY_CLASS_LABEL, "")
    refs = meta.get("ownerReferences") or []
    for _ in range(2):  # a ReplicaSet's owner is the Deployment
        ref = next((r for r in refs if r.get("controller")), None)
        owner = kube.get(ref["apiVersion"], ref["kind"], ref["name"], meta.get("namespace")) if ref else None
        if owner is None:
            break
        owner_meta = owner.get("metadata") or {}
        found = (owner_meta.get("labels") or {}).get(PRIORITY_CLASS_LABEL, found)
        refs = owner_meta.get("ownerReferences") or []
    return found


def never_preempting(kube: Kube, evictions: list[str]) -> frozenset[str]:
    """The preemptors named in these messages ("ns/podgroup") whose priority class says preemptionPolicy: Never."""
    out = set()
    for preemptor in {m.group(1) for m in map(PREEMPTED_BY.search, evictions) if m}:
        ns, pg = preemptor.split("/", 1)
        group = kube.get(PODGROUP_API, "PodGroup", pg, ns) or {}
        pc = (group.get("spec") or {}).get("priorityClassName")
        cls = kube.get("scheduling.k8s.io/v1", "PriorityClass", pc) if pc else None
        if cls and cls.get("preemptionPolicy") == "Never":
            out.add(preemptor)
    return frozenset(out)
