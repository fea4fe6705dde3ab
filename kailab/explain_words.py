"""The words ``kailab explain`` reads, as KAI v0.17.0 (and Kubernetes, whose filters KAI runs) writes them.

Each reason maps to what it means and the runbook to read; first match wins. KAI's words are read from
kailab/kai_strings.yaml (``kai_strings``: the one table of what KAI says, checked against the pinned KAI module's
source, with the file that writes each); Kubernetes' own filter words, run inside KAI, are written here.
"""

from __future__ import annotations

import re

from kailab.kai_strings import get, pattern


def _said(*keys: str) -> str:
    """A pattern matching any of these KAI messages, as written (no format verbs)."""
    return "|".join(re.escape(get(k)) for k in keys)


MIN_MEMBER = get("field.minMember")
GPU_MEMORY = get("annotation.gpu-memory")
PREEMPTION_DELAY = get("annotation.preemption-delay")

# KAI's binder, when a GPU-sharing pod's reservation pod got no GPU (in the BindingError of its BindRequest).
RESERVATION_FAILED = _said("message.reservation-wait", "message.reservation-not-created")
# KAI's StaleJob event on a running gang short of pods.
STALE = _said("message.job-stale")
# NonPreemptibleOverQuota: the message, then what it was checked for and which queue up the queue tree.
OVER_QUOTA = _said("message.non-preemptible-over-quota")
OVER_QUOTA_DETAILS = {
    "gpus": re.compile(pattern("message.over-quota-gpus", "requested", "queue")),
    "cpu": re.compile(pattern("message.over-quota-cpu", "requested", "queue")),
    "memory": re.compile(pattern("message.over-quota-memory", "requested", "queue")),
}
# The scheduler's ClusterInfo, on a PodGroup whose queue it does not know.
QUEUE_MISSING = re.compile(pattern("message.queue-missing", "queue"))
# KAI's admission webhook when GPU sharing is off.
SHARING_OFF = _said("message.gpu-sharing-off")
# The API server refusing a pod, in the Job controller's FailedCreate: a namespace's ResourceQuota
# (k8s.io/apiserver's resourcequota admission: "exceeded quota: …"), a webhook ("admission webhook … denied the
# request"), a ValidatingAdmissionPolicy ("… denied request").
REFUSED = r"exceeded quota|denied the request|denied request"
# A queue's limit: "<queue> quota has reached the allowable limit of <resource>. …"
_LIMIT = re.escape(get("message.limit-reached").split("%s")[1].strip())
PREEMPTED = re.compile(pattern("message.preempted", "namespace", "name"))


def over_quota_detail(message: str) -> tuple[str, str] | None:
    """(resource, queue) a NonPreemptibleOverQuota message names: the resource ("gpus", "cpu", "memory") and the
    queue, up the queue tree, whose quota it was checked against; None when it names none."""
    for resource, detail in OVER_QUOTA_DETAILS.items():
        m = detail.search(message)
        if m:
            return resource, m["queue"]
    return None


def preemptor(message: str) -> str | None:
    """The workload (namespace/name) that a "preempted by higher priority workload" message names."""
    m = PREEMPTED.search(message)
    return f"{m['namespace']}/{m['name']}" if m else None


# KAI's words → (what it means, runbook). First match wins.
KNOWN_REASONS = [
    (QUEUE_MISSING.pattern, "the queue it names does not exist", "runbooks/pod-pending-forever.md"),
    (
        OVER_QUOTA,
        "it is non-preemptible and its queue is at its quota; non-preemptible work may never go over quota",
        "runbooks/borrowing-not-happening.md",
    ),
    (
        rf"{_LIMIT} (CPU|memory)",
        "its queue's CPU or memory limit is reached — an unset limit is 0 to KAI",
        "runbooks/pod-pending-forever.md",
    ),
    (
        _LIMIT,
        "its queue, or the queue above it that KAI names, is at its GPU limit",
        "runbooks/borrowing-not-happening.md",
    ),
    (
        _said("message.preemption-delay-window"),
        f"it has a preemption delay ({PREEMPTION_DELAY}) that has "
        "not elapsed: until then it may take only free GPUs, not evict anyone",
        "runbooks/reclaim-not-happening.md",
    ),
    (
        f"{pattern('message.max-node-resources')}|{pattern('message.no-node-has')}",
        "it asks for more in one pod than any node has: no node can ever hold it",
        "runbooks/too-big.md",
    ),
    (
        f"{_said('message.topology-unsatisfied')}|{pattern('message.topology-missing')}",
        "its topology constraint cannot be met: no domain of the required level can hold the whole gang "
        "(or the Topology it names does not exist)",
        "runbooks/topology-unmet.md",
    ),
    (
        STALE,
        f"its gang ran with fewer pods than its {MIN_MEMBER} (stale): KAI evicts a stale gang's pods after the "
        "staleness grace period, and a Job makes them again — they wait for the whole gang",
        "runbooks/stale-gang.md",
    ),
    (
        _said("message.gang-short", "message.job-not-ready"),
        "its gang cannot start whole yet",
        "runbooks/gang-not-binding.md",
    ),
    (
        RESERVATION_FAILED,
        "KAI chose a GPU to share, but its binder could not reserve it: the GPU reservation pod got no GPU",
        "runbooks/gpu-sharing-reservation.md",
    ),
    (
        # A gpu-memory request on a node whose GPUs have too little (or without the nvidia.com/gpu.memory label:
        # 100 MiB to KAI)
        _said("message.gpu-memory-short", "message.gpu-memory-not-synced"),
        f"it asks for GPU memory ({GPU_MEMORY}), and no node it may use has that much free on one GPU — as KAI "
        "knows it: from the node's nvidia.com/gpu.memory label",
        "runbooks/gpu-memory-label.md",
    ),
    (
        # Kubernetes' InterPodAffinity filter (k8s.io/kubernetes .../interpodaffinity), run by KAI
        r"didn't match pod (anti-)?affinity rules|didn't satisfy existing pods anti-affinity rules",
        "its pod affinity or anti-affinity cannot be met on any node",
        "runbooks/pod-affinity.md",
    ),
    (
        # Kubernetes' VolumeBinding filter (k8s.io/kubernetes .../volumebinding), run by KAI
        r"unbound immediate PersistentVolumeClaims|persistentvolumeclaim \S+ not found|"
        r"didn't find available persistent volumes",
        "a volume claim it mounts is not bound (or does not exist), and nothing will bind it",
        "runbooks/unbound-volume.md",
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
        _said("message.consolidation"),
        "KAI moved a pod of it to another node to make room for a bigger job (consolidation); the moved pod "
        "restarted from the beginning",
        "runbooks/consolidation.md",
    ),
    (
        _said("message.reclaimed"),
        "KAI reclaimed a pod of it for another queue: its queue held more than its quota or fair share, and "
        "the other queue less than its own",
        "runbooks/reclaim-not-happening.md",
    ),
    (
        _said("message.gang-short-evicted"),
        f"KAI evicted the rest of its gang: fewer pods than its {MIN_MEMBER} were left (a stale gang)",
        "runbooks/stale-gang.md",
    ),
]

FORBIDDEN_PRIORITY = re.compile(r"no PriorityClass with name (\S+) was found")


def eviction_notes(evictions: list[str], never_preemptors: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(what happened, runbook) for each kind of eviction KAI reported on a pod's PodGroup, latest message of each."""
    latest: dict[str, tuple[str, str]] = {}
    for message in evictions:
        for said, meaning, runbook in KNOWN_EVICTIONS:
            if re.search(said, message):
                latest[said] = (f"{meaning}: “{message}”", runbook)
        who = preemptor(message)
        if who and who in never_preemptors:
            latest["never"] = (
                f"KAI preempted a pod of it for {who}, whose priority class says preemptionPolicy: Never "
                f"— KAI v0.17.0 does not read that field: “{message}”",
                "runbooks/preemption-policy-never.md",
            )
    return list(latest.values())
