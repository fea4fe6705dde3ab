"""``kailab explain``: why a pod is where it is, in plain words, from what the schedulers wrote.

It reads KAI's PodGroup events (its reasons and its evictions) and conditions, the pod's own condition and
fields, and, for a Job with no pods, its controller's events; it does not re-derive KAI's decision.
:func:`explain_pod` and :func:`explain_podless_job` are pure (objects in, explanation out); :func:`gather`
fetches those objects.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace

from kailab import operators
from kailab.explain_facts import (
    nearest_node,
    never_preempting,
    owner_chain,
    parent_outside,
    priority_label,
    queue_standing,
    quotas_past_fleet,
    readable,
    rivals,
    selects,
)
from kailab.explain_operated import (
    Gang,
    apply_rules,
    crd_of,
    crd_served,
    gang_of,
    kind_named,
    no_pods,
    not_served,
    owned_pod_groups,
    served_kinds,
)
from kailab.explain_words import (
    FORBIDDEN_PRIORITY,
    KNOWN_REASONS,
    MIN_MEMBER,
    OVER_QUOTA,
    QUEUE_MISSING,
    REFUSED,
    RESERVATION_FAILED,
    SHARING_OFF,
    STALE,
    eviction_notes,
    over_quota_detail,
)
from kailab.kai_strings import get as kai
from kailab.kube import Kube
from kailab.labels import (
    BIND_REQUEST_API,
    DEFAULT_SCHEDULER_NAME,
    GPU,
    GPU_MEMORY_ANNOTATION,
    GPU_MEMORY_LABEL,
    NODEPOOL_LABEL,
    OLD_QUEUE_LABEL,
    POD_GROUP_ANNOTATION,
    PODGROUP_API,
    PRIORITY_CLASS_LABEL,
    QUEUE_API,
    QUEUE_LABEL,
    WORKLOAD_LABEL,
)
from kailab.labels import KAI_SCHEDULER_NAME as KAI
from kailab.pods import PodView, api_time, event_view, pod_view
from kailab.status import nodes_and_gpus
from kailab.status import queues as queue_rows

# KAI's words explain quotes (kailab/kai_strings.yaml)
STALENESS_GRACE_PERIOD = kai("field.stalenessGracePeriod")
RECLAIM_MIN_RUNTIME = kai("field.reclaimMinRuntime")
PARENT_QUEUE = kai("field.parentQueue")
EVICT = kai("event.evict")
USAGE_METRIC = kai("metric.queue-gpu-usage")
OPERATOR_MISSING = "runbooks/operator-not-installed.md"
RESOURCE_WORDS = {"gpus": "GPU", "cpu": "CPU", "memory": "memory"}  # explain_words.over_quota_detail's resources


@dataclass
class Explanation:
    pod: str
    state: str  # Bound | Pending | NoPods (a Job, or an operator's object, with no pods) | NotServed (its kind)
    summary: str
    reported: str = ""  # the scheduler's own words
    runbook: str = ""
    details: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Scope:
    """What an explanation sees beyond the namespace: a class learner's pods and nodes (None and "": the cluster's),
    each queue's fair share and recent GPU usage as KAI's scheduler publishes them (None: not known)."""

    fair_shares: dict[str, float] | None = None
    visible: list | None = None
    node_selector: str = ""
    usage: dict[str, float] | None = None


@dataclass(frozen=True)
class Facts:
    """What else the cluster says about a pod, beyond KAI's words: each gathered by :func:`explain_pods`."""

    finished: int = 0  # pods of its PodGroup that have succeeded
    queue_annotation: str = ""  # a kai.scheduler/queue annotation on the pod or its owner (KAI reads the label only)
    parent_outside: tuple[str, str, str] | None = None  # (its queue's parent, the parent's partition, its queue's)
    budgets: tuple[str, ...] = ()  # PodDisruptionBudgets that select it
    refused: str = ""  # the last FailedCreate its Job's controller reported: the API server refused a pod of it
    bind_request: str = ""  # the node of a BindRequest KAI made for it 10 s or more ago, while it is not bound
    # recent GPU usage (KAI's time-based fair share) of its queue and the sibling queues that hold or ask for GPUs
    usage: dict[str, float] | None = None
    quotas_past_fleet: tuple[float, float] | None = None  # (top-level GPU quotas, the fleet's GPUs) when more
    waiting_for: float = 0.0  # seconds since the pod was made (0: not known)
    memory_unknown: tuple[str, ...] = ()  # GPU nodes without nvidia.com/gpu.memory, when it asks for GPU memory
    gang: Gang | None = None  # the PodGroup KAI made for it, when an operator made it (explain_operated.py)


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
    facts: Facts = Facts(),
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
        facts: what else the cluster says about it (:class:`Facts`).
    """
    label = pod.queue  # its own label; an operator's gang is in its PodGroup's queue, which may not be the label's
    pod = replace(pod, queue=facts.gang.queue) if facts.gang else pod
    exp = _explain_now(pod, messages, queue_exists, is_leaf, nodes, standing, facts)
    if pod.scheduler == KAI and not pod.queue and pod.old_queue:
        exp.details.append(
            f"It has the old {OLD_QUEUE_LABEL} label ('{pod.old_queue}'), which KAI v0.17.0 does not read: "
            f"KAI reads {QUEUE_LABEL} only, so it is in default-queue."
        )
        exp.runbook = "runbooks/old-queue-label.md"
    elif pod.scheduler == KAI and not pod.queue and facts.queue_annotation:
        exp.details.append(
            f"Its queue is written as an annotation, {QUEUE_LABEL}: '{facts.queue_annotation}'. KAI reads only a "
            "label of that name, on its owner or the pod, so it is in default-queue (quota 0)."
        )
        exp.runbook = "runbooks/queue-annotation.md"
    elif pod.scheduler == KAI and not pod.queue and exp.state == "Pending":
        exp.details.append(f"It has no {QUEUE_LABEL} label, so KAI put it in default-queue (quota 0).")
    # An eviction, or a class KAI did not take, is the story of a pod that is bound, or waits only for room (on a
    # node, or for its whole gang): it names the runbook then.
    first = not exp.runbook or exp.runbook in (
        "runbooks/pod-pending-forever.md" if exp.summary.startswith("Pending because no node has room") else "",
        "runbooks/gang-not-binding.md",
    )
    if ignored_class:
        exp.details.append(class_note(*ignored_class, pod.priority_class))
        if first:
            exp.runbook, first = "runbooks/misspelt-priority-class.md", False
    notes = eviction_notes(evictions or [], never_preemptors)
    for detail, runbook in notes:
        exp.details.append(detail)
        if first:
            exp.runbook, first = runbook, False
    if notes and facts.budgets:
        exp.details.append(
            f"A PodDisruptionBudget covers it ({', '.join(facts.budgets)}), yet KAI evicted it: KAI deletes the pods "
            "it evicts instead of asking the Eviction API, which is what honours a budget."
        )
        exp.runbook = "runbooks/pdb-not-honoured.md"
    stale = [m for m in messages if re.search(STALE, m)]
    stale_evicted = any(rb == "runbooks/stale-gang.md" for _, rb in notes)
    if facts.finished and (stale or stale_evicted):
        exp.details.append(
            f"{facts.finished} pod(s) of its gang had finished (Succeeded). KAI v0.17.0 does not count finished pods "
            "(its scheduler's cache drops them), so it took the gang for short of pods and evicted the rest after "
            "the staleness grace period — a bug fixed after v0.17.0 (upstream #1968); give such gangs a longer "
            f"{STALENESS_GRACE_PERIOD}."
        )
        exp.runbook, first = "runbooks/completing-gang-evicted.md", False
    if first and stale and exp.state == "Pending":
        # Its Evict event may be missing: KAI reports StaleJob every cycle, and client-go drops an object's events
        # past a burst of 25, so after a 60 s grace period the Evict that follows is often lost.
        exp.details.append(
            f"Its gang ran before with fewer pods than its {MIN_MEMBER} (KAI: “{stale[-1]}”); after the staleness "
            "grace period KAI evicts such a gang's pods, and its Job makes them again: they wait for the whole gang."
        )
        exp.runbook = "runbooks/stale-gang.md"
    if notes and exp.state == "Bound" and (note := _time_note(q_of(pod), facts)):
        exp.details.append(note)  # its pods reclaimed: for a queue that used less of the fleet lately
        exp.runbook = "runbooks/time-based-fairshare.md"
    if facts.refused and exp.state == "Pending":
        exp.details.append(
            f"Its Job could not make all its pods: the API server refused one (“{facts.refused}”). KAI sees only "
            "the pods that exist."
        )
        if first or exp.runbook == "runbooks/gang-not-binding.md":
            exp.runbook = "runbooks/pods-refused.md"
    details, exp.runbook = apply_rules(exp.state, label, facts.gang, exp.runbook)
    exp.details[:0] = details
    return exp


def _explain_now(
    pod: PodView,
    messages: list[str],
    queue_exists: bool,
    is_leaf: bool,
    nodes: list[dict],
    standing: dict | None,
    facts: Facts = Facts(),
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
                f"KAI says its gang is stale: fewer pods than its {MIN_MEMBER} are left. Unless the missing pods "
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
            runbook="runbooks/kai-component-down.md",
        )
    if scheduler == KAI and facts.bind_request and not any(re.search(RESERVATION_FAILED, m) for m in messages):
        # A binder that tried and failed (a GPU reservation) is running: that is the reservation runbook, below.
        return Explanation(
            name,
            "Pending",
            f"KAI's scheduler chose {facts.bind_request} for it (a BindRequest), but its binder has not bound it: "
            "is kai-binder running? kailab status.",
            runbook="runbooks/kai-component-down.md",
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
    missing = QUEUE_MISSING.search(last)
    if scheduler == KAI and missing and queue_exists and facts.parent_outside:
        parent, theirs, ours = facts.parent_outside
        return Explanation(
            name,
            "Pending",
            f"Pending because its queue '{q}' exists, but its parent '{parent}' is in another partition "
            f"({_partition(theirs)}, its queue's is {_partition(ours)}): the scheduler of its queue's partition does "
            "not see the parent, and drops the queue with it.",
            reported=last,
            runbook="runbooks/partition-parent.md",
        )
    over = over_quota_detail(last) if re.search(OVER_QUOTA, last) else None
    if over and over != ("gpus", q):
        resource, queue = over
        what = (
            f"its queue's {RESOURCE_WORDS[resource]} quota"
            if queue == q
            else f"the quota of '{queue}', a queue above its own,"
        )
        return Explanation(
            name,
            "Pending",
            f"Pending because it is non-preemptible and {what} is used up: non-preemptible work may never go over "
            f"quota, for any resource and at any level of the queue tree (queue '{q}').",
            reported=last,
            runbook="runbooks/non-preemptible-capped.md",
        )
    for pattern, meaning, runbook in KNOWN_REASONS:
        if re.search(pattern, last):
            exp = Explanation(
                name, "Pending", f"Pending because {meaning} (queue '{q}').", reported=last, runbook=runbook
            )
            if meaning.startswith("no node has room"):
                exp.details.append(nearest_node(nodes, pod.gpus))
                _room_notes(exp, q, standing, facts)
            if runbook == "runbooks/gpu-memory-label.md" and facts.memory_unknown:
                exp.details.append(
                    f"GPU nodes without the {GPU_MEMORY_LABEL} label: {', '.join(facts.memory_unknown)} — KAI takes "
                    "each of their GPUs for 100 MiB (pkg/scheduler/api/node_info/node_info.go)."
                )
            return exp
    if last:
        return Explanation(name, "Pending", f"Pending (queue '{q}'); the scheduler says:", reported=last)
    if scheduler == KAI and facts.waiting_for >= QUIET_SCHEDULER:
        return Explanation(
            name,
            "Pending",
            f"Pending for {facts.waiting_for:.0f}s, it has a PodGroup, and KAI's scheduler has not said a word about "
            "it: is kai-scheduler running? kailab status.",
            runbook="runbooks/kai-component-down.md",
        )
    return Explanation(
        name, "Pending", "Pending, and no scheduler has reported on it yet; look again in a few seconds."
    )


# A KAI pod with a PodGroup that KAI's scheduler has not reported on for this long: it reports at every cycle (1 s
# by default), so the scheduler is likely down, or not serving its partition.
QUIET_SCHEDULER = 10.0


def _partition(value: str) -> str:
    return f"partition '{value}'" if value else "the default partition"


def q_of(pod: PodView) -> str:
    """The queue KAI puts the pod in: its label's, else default-queue."""
    return pod.queue or "default-queue"


def _room_notes(exp: Explanation, queue: str, standing: dict | None, facts: Facts) -> None:
    """Why a pod that waits for room does not get it: where its queue stands — unless the quotas add up to more than
    the fleet, or time-based fair share counts its queue's past usage, which say more."""
    note = _time_note(queue, facts)
    if facts.quotas_past_fleet:
        quotas, fleet = facts.quotas_past_fleet
        exp.details.append(
            f"The top-level queues' GPU quotas add up to {quotas:g}, more than the fleet's {fleet:g} GPUs: KAI cannot "
            "give every queue its quota, and reclaims for a queue below its quota only from queues above their own."
        )
        exp.runbook = "runbooks/quotas-past-fleet.md"
    elif standing:
        exp.details.append(queue_standing(standing))
    if note:
        exp.details.append(note)
        exp.runbook = "runbooks/time-based-fairshare.md"


def _time_note(queue: str, facts: Facts) -> str:
    """What time-based fair share does to the queue: "" unless KAI weighs past usage (it publishes some) and, of the
    sibling queues that want GPUs, this one used the most of the fleet lately — KAI splits a level's spare GPUs by
    ``nWeight + kValue × (nWeight − nUsage)`` (``calcShareWeights``, resource_division.go)."""
    usage = facts.usage or {}
    mine = usage.get(queue, 0.0)
    if mine > 0 and mine == max(usage.values()) and any(u < mine for q, u in usage.items() if q != queue):
        return (
            f"KAI's time-based fair share is on: queue '{queue}' used {mine:.2f} of the fleet lately (KAI's "
            f"{USAGE_METRIC}), more than other queues, so it gets a smaller part of the spare GPUs until that "
            "fades."
        )
    return ""


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
    if re.search(SHARING_OFF, last):
        return Explanation(
            name,
            "NoPods",
            "The Job has no pods: KAI's admission webhook refuses them, as they ask for a fraction of a GPU and GPU "
            "sharing is off in this KAI installation. KAI's scheduler never sees them.",
            reported=last,
            runbook="runbooks/gpu-sharing-off.md",
        )
    if re.search(REFUSED, last):
        return Explanation(
            name,
            "NoPods",
            "The Job has no pods: the API server refuses them (a namespace's ResourceQuota, an admission webhook or "
            "policy). KAI never sees them.",
            reported=last,
            runbook="runbooks/pods-refused.md",
        )
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


def gather(kube: Kube, name: str, namespace: str, scope: Scope = Scope()) -> list[Explanation]:
    """Explanations for a pod, or for every pod of a Job, PodGroup or scenario workload of that name (or for a Job
    that has none), as far as ``scope`` sees."""

    def owned_by(meta: dict) -> bool:
        refs = meta.get("ownerReferences") or []
        return any(r.get("kind") == "ReplicaSet" and r.get("name", "").startswith(f"{name}-") for r in refs)

    def named(p: dict) -> bool:
        meta = p.get("metadata") or {}
        return (
            meta.get("name") == name
            or (meta.get("labels") or {}).get("job-name") == name
            or (meta.get("labels") or {}).get(WORKLOAD_LABEL) == name  # a scenario's workload (its Jobs, pods)
            or (meta.get("annotations") or {}).get(POD_GROUP_ANNOTATION) == name
            or owned_by(meta)
        )

    asked = kind_named(name)
    if asked is not None:  # RayCluster/NAME …: that object, if its kind is served here
        op, api_version, kind = asked
        name = name.split("/", 1)[1]
        crd = crd_of(api_version, kind)
        if not crd_served(kube, crd):
            summary = not_served(op, kind, [crd], operators.lessons_of(op))
            return [Explanation(f"{namespace}/{name}", "NotServed", summary, runbook=OPERATOR_MISSING)]
    everyone = kube.pods(namespace)
    pods = [p for p in everyone if named(p)]
    owners = served_kinds(kube, namespace, name, asked[2] if asked else None) if not pods else []
    if owners:  # an operator's object: the pods of the PodGroups it owns (KAI's gang of it)
        op, _, kind = owners[0]
        groups = owned_pod_groups(kube, kind, name, namespace)
        pods = [
            p
            for p in everyone
            if ((p.get("metadata") or {}).get("annotations") or {}).get(POD_GROUP_ANNOTATION) in groups
        ]
        if not pods:
            return [Explanation(f"{namespace}/{name}", "NoPods", no_pods(op, kind), runbook=OPERATOR_MISSING)]
    if pods:
        return explain_pods(kube, pods, namespace, scope, everyone)
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
    kube: Kube, pods: list, namespace: str, scope: Scope = Scope(), everyone: list | None = None
) -> list[Explanation]:
    """Explanations for these pods of one namespace (the API's JSON), from its events, the queues and the nodes
    ``scope`` sees (``everyone``: the namespace's pods, if already read)."""
    if not pods:
        return []
    events = sorted((event_view(e) for e in kube.events(namespace)), key=lambda e: e.time)
    queues = {q["metadata"]["name"]: q for q in kube.list(QUEUE_API, "Queue")}
    parents = {q.get("spec", {}).get(PARENT_QUEUE) for q in queues.values()}
    nodes = nodes_and_gpus(kube, scope.visible, scope.node_selector)  # a class learner: their pods and nodes
    standing = {row["name"]: row for row in queue_rows(kube, scope.visible, scope.fair_shares)}
    out = []
    classes = {c["metadata"]["name"] for c in kube.list("scheduling.k8s.io/v1", "PriorityClass")}
    everyone = everyone if everyone is not None else kube.pods(namespace)
    peers, gangs = [pod_view(o) for o in everyone], {}  # type: ignore[var-annotated]
    finished: dict[str, int] = {}
    for other in peers:
        if other.pod_group and other.phase == "Succeeded":
            finished[other.pod_group] = finished.get(other.pod_group, 0) + 1
    budgets = readable(kube, "policy/v1", "PodDisruptionBudget", namespace)
    now = time.time()
    binds = {  # a binder takes a BindRequest within a second: one left for longer says the binder is not there
        (b.get("spec") or {}).get("podName"): (b.get("spec") or {}).get("selectedNode", "")
        for b in readable(kube, BIND_REQUEST_API, "BindRequest", namespace)
        if now - (api_time((b.get("metadata") or {}).get("creationTimestamp")) or now) >= QUIET_SCHEDULER
    }
    refusals = {
        e.name: e.message
        for e in events
        if e.kind == "Job" and e.reason == "FailedCreate" and re.search(f"{REFUSED}|{SHARING_OFF}", e.message)
    }
    over_fleet = quotas_past_fleet(list(queues.values()), nodes)
    memory_unknown: tuple[str, ...] | None = None  # read once, for the first pod that asks for GPU memory
    for raw, p in zip(pods, map(pod_view, pods), strict=True):
        messages = [e.message for e in events if e.says_why_waiting and e.name in (p.name, p.pod_group)]
        if p.waiting:
            messages.append(p.waiting)
        evictions = [e.message for e in events if e.reason == EVICT and e.kind == "PodGroup" and e.name == p.pod_group]
        gang = gang_of(kube, p.pod_group, namespace, peers, nodes, gangs)
        q = gang.queue if gang else p.queue or "default-queue"
        chain = owner_chain(kube, raw)
        label = priority_label(kube, raw, chain)
        ignored = None
        if label and label not in classes:
            group = kube.get(PODGROUP_API, "PodGroup", p.pod_group, namespace) if p.pod_group else None
            ignored = (label, ((group or {}).get("spec") or {}).get("priorityClassName") or "")
        meta = raw.get("metadata") or {}
        if memory_unknown is None and GPU_MEMORY_ANNOTATION in (meta.get("annotations") or {}):
            memory_unknown = tuple(
                n.metadata.name
                for n in kube.core.list_node(label_selector=scope.node_selector).items
                if float((n.status.allocatable or {}).get(GPU, 0) or 0) > 0
                and GPU_MEMORY_LABEL not in (n.metadata.labels or {})
            )
        facts = Facts(
            finished=finished.get(p.pod_group, 0) if p.pod_group else 0,
            queue_annotation=next(
                (a[QUEUE_LABEL] for m in chain if QUEUE_LABEL in (a := m.get("annotations") or {})), ""
            ),
            parent_outside=parent_outside(queues.get(q), queues),
            budgets=tuple(
                b["metadata"]["name"] for b in budgets if selects((b.get("spec") or {}).get("selector"), meta)
            ),
            refused=refusals.get((meta.get("labels") or {}).get("job-name", ""), ""),
            bind_request=binds.get(p.name, "") if not p.node else "",
            usage=rivals(q, queues, standing, scope.usage),
            quotas_past_fleet=over_fleet,
            waiting_for=max(0.0, now - (api_time(meta.get("creationTimestamp")) or now)),
            memory_unknown=memory_unknown or (),
            gang=gang,
        )
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
                facts,
            )
        )
    return out
