"""The words ``kailab explain`` reads, as KAI v0.17.0 (and Kubernetes, whose filters KAI runs) writes them.

Each pattern says where KAI writes it; each reason maps to what it means and the runbook to read. First match wins.
Every KAI string here is a row of kailab/kai_strings.yaml, which tests/unit/test_kai_strings.py finds in the pinned
KAI module's source (Kubernetes' own filter words, run inside KAI, are not KAI's and are not rows).
"""

from __future__ import annotations

import re

# KAI's binder, when a GPU-sharing pod's reservation pod got no GPU (pkg/binder/binding/resourcereservation/
# resource_reservation.go, in the BindingError of pkg/binder/controllers/bindrequest_controller.go).
RESERVATION_FAILED = r"GPU reservation pod|could not create reservation pod"

# KAI's StaleJob event on a running gang short of pods (pkg/scheduler/cache/status_updater/default_status_updater.go).
STALE = r"Job is stale"

# -- The words this module reads, as KAI v0.17.0 (and Kubernetes, whose filters KAI runs inside itself) writes them,
# each with where: one place, so that a table checked against the pinned source can take them over.
# NonPreemptibleOverQuota names the queue and the resource it was checked for, up the queue tree
# (pkg/scheduler/api/unschedule_info.go, getOverCapacityMessageDetails; quota_check.go).
OVER_QUOTA_DETAIL = re.compile(
    r"Workload requested \S+ (?P<resource>GPUs|CPU cores|GB memory), but (?P<queue>\S+) quota is"
)
# The scheduler's ClusterInfo (pkg/scheduler/cache/cluster_info/cluster_info.go, validatePodgroupQueue).
QUEUE_MISSING = re.compile(r"Queue '(?P<queue>[^']*)' does not exist")
# KAI's admission webhook when GPU sharing is off (pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go).
SHARING_OFF = r"with gpu sharing request, while GPU sharing is disabled"
# The API server refusing a pod, in the Job controller's FailedCreate: a namespace's ResourceQuota
# (k8s.io/apiserver's resourcequota admission: "exceeded quota: …"), a webhook ("admission webhook … denied the
# request"), a ValidatingAdmissionPolicy ("… denied request").
REFUSED = r"exceeded quota|denied the request|denied request"

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
        r"couldn't be satisfied|Requested topology .* does not exist",
        "its topology constraint cannot be met: no domain of the required level can hold the whole gang "
        "(or the Topology it names does not exist)",
        "runbooks/topology-unmet.md",
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
        # A gpu-memory request: pkg/scheduler/api/common_info/pod_errors.go (a node whose GPUs have too little, or
        # without the nvidia.com/gpu.memory label: 100 MiB to KAI) and pkg/scheduler/plugins/predicates/predicates.go
        r"didn't have enough resources: GPU memory|gpu memory count on the node was not synced",
        "it asks for GPU memory (gpu-memory), and no node it may use has that much free on one GPU — as KAI "
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
