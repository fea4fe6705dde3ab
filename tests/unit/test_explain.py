"""explain_pod: from what the schedulers wrote to plain words and a runbook."""

from kailab.explain import explain_pod, explain_podless_job
from kailab.pods import PodView, pod_view

NODES = [
    {"name": "kwok-a100-0", "pool": "a100", "gpus": 8, "free": 2},
    {"name": "kwok-l40s-0", "pool": "l40s", "gpus": 4, "free": 0},
]


def pod(scheduler="kai-scheduler", queue="team-a", node=None, gpus=1, grouped=True):
    return PodView(
        "p",
        namespace="ns",
        queue=queue or "",
        scheduler=scheduler,
        node=node or "",
        gpus=gpus,
        phase="Running" if node else "Pending",
        pod_group="pg-p" if grouped else "",
    )


def test_bound_pod_names_node_and_scheduler():
    e = explain_pod(pod(node="kwok-a100-0"), [], None, True, True, NODES)
    assert e.state == "Bound" and "kwok-a100-0 by KAI Scheduler" in e.summary


def test_each_kai_reason_maps_to_its_runbook():
    cases = {
        "QueueDoesNotExist: Queue 'x' does not exist.": ("does not exist", "pod-pending-forever"),
        "NonPreemptibleOverQuota: Non-preemptible workload is over quota.": (
            "non-preemptible",
            "borrowing-not-happening",
        ),
        "OverLimit: q quota has reached the allowable limit of GPUs.": ("GPU limit", "borrowing-not-happening"),
        "OverLimit: q quota has reached the allowable limit of CPU cores.": ("CPU or memory", "pod-pending-forever"),
        "Resources were found for 4 pods while 6 are required for gang scheduling.": ("gang", "gang-not-binding"),
        # KAI v0.17.0's words, pkg/scheduler/actions/utils/input_jobs.go (recordPreemptionDelayFitError)
        "PreemptionDelayNotElapsed: Workload is within its preemption delay window (2m0s) and may not trigger "
        "evictions before 2026-07-12T10:33:43Z": ("preemption delay", "reclaim-not-happening"),
    }
    for message, (words, runbook) in cases.items():
        e = explain_pod(pod(), ["older message", message], None, True, True, NODES)
        assert words in e.summary and runbook in e.runbook and e.reported == message


def test_no_room_names_the_nearest_node():
    e = explain_pod(
        pod(scheduler="default-scheduler", queue=None, gpus=4),
        ["0/5 nodes are available: 5 Insufficient nvidia.com/gpu."],
        None,
        False,
        True,
        NODES,
    )
    assert e.details == ["Nearest node: kwok-a100-0 (a100) has 2 free GPU(s) of 8; the pod needs 4."]


def test_silent_cases_are_explained_by_kailab():
    assert (
        "No scheduler named 'kai-schedular'"
        in explain_pod(pod(scheduler="kai-schedular"), [], None, True, True, NODES).summary
    )
    assert "parent queue" in explain_pod(pod(queue="org"), ["Unable to schedule pod"], None, True, False, NODES).summary
    assert "pod-grouper" in explain_pod(pod(grouped=False), [], None, True, True, NODES).summary
    e = explain_pod(pod(queue=None), ["Non-preemptible workload is over quota."], None, True, True, NODES)
    assert any("default-queue" in d for d in e.details)


def test_no_room_says_where_the_queue_stands():
    reason = ["no nodes with enough resources were found: 5 node(s) didn't have enough resources: GPUs."]
    owed = explain_pod(
        pod(), reason, None, True, True, NODES, {"name": "team-a", "allocated": 0, "quota": 8, "fair_share": 8}
    )
    assert "holds 0 of its quota 8" in owed.details[-1] and "reclaimMinRuntime" in owed.details[-1]
    full = explain_pod(
        pod(), reason, None, True, True, NODES, {"name": "team-a", "allocated": 10, "quota": 4, "fair_share": 10}
    )
    assert "its fair share is 10" in full.details[-1] and "will not reclaim" in full.details[-1]


def test_below_its_fair_share_but_past_its_quota_a_queue_is_still_owed_a_reclaim():
    reason = ["no nodes with enough resources were found: 5 node(s) didn't have enough resources: GPUs."]
    e = explain_pod(
        pod(), reason, None, True, True, NODES, {"name": "team-a", "allocated": 12, "quota": 8, "fair_share": 16}
    )
    assert "below its fair share 16" in e.details[-1] and "reclaimMinRuntime" in e.details[-1]
    assert "preemptMinRuntime" not in e.details[-1]  # a window of preemption inside a queue, not of reclaim


# The causes of runbooks/why-pending.md, each on a pod built as the API returns it (through pod_view) and with
# the words KAI v0.17.0 writes (its source file named beside each).


def api_pod(labels=None, gates=(), node="", priority_class=None, pod_group="pg-p"):
    from kubernetes.client import ApiClient, V1Container, V1ObjectMeta, V1Pod, V1PodSchedulingGate, V1PodSpec

    meta = V1ObjectMeta(
        name="p", namespace="ns", labels=labels or {}, annotations={"pod-group-name": pod_group} if pod_group else {}
    )
    spec = V1PodSpec(
        containers=[V1Container(name="main")],
        scheduler_name="kai-scheduler",
        node_name=node or None,
        scheduling_gates=[V1PodSchedulingGate(name=g) for g in gates] or None,
        priority_class_name=priority_class,
    )
    return pod_view(ApiClient().sanitize_for_serialization(V1Pod(metadata=meta, spec=spec)))  # the API's JSON


def test_the_old_runai_queue_label_is_named_as_the_cause():
    p = api_pod(labels={"runai/queue": "team-a"})
    assert p.queue == "" and p.old_queue == "team-a"
    e = explain_pod(p, ["NonPreemptibleOverQuota: Non-preemptible workload is over quota."], None, True, True, NODES)
    assert e.runbook == "runbooks/old-queue-label.md"
    assert any("runai/queue label ('team-a')" in d and "default-queue" in d for d in e.details)
    # a pod with both labels is in the queue kai.scheduler/queue names: nothing to say about the old one
    both = api_pod(labels={"runai/queue": "x", "kai.scheduler/queue": "team-a"})
    assert "old-queue-label" not in explain_pod(both, [], None, True, True, NODES).runbook


def test_a_node_pool_no_scheduler_reports_on_is_named():
    p = api_pod(labels={"kai.scheduler/queue": "team-a", "kai.scheduler/node-pool": "pool-x"})
    e = explain_pod(p, [], None, True, True, NODES)
    assert e.runbook == "runbooks/node-pool-unserved.md" and "'pool-x'" in e.summary
    # once a scheduler of that pool has spoken, its words decide
    said = explain_pod(p, ["Queue 'team-a' does not exist"], None, True, True, NODES)
    assert "does not exist" in said.summary


def test_scheduling_gates_come_before_everything_else():
    p = api_pod(gates=("example.com/wait-for-data",), pod_group="")
    assert p.gates == ("example.com/wait-for-data",)
    e = explain_pod(p, [], None, True, True, NODES)
    assert e.runbook == "runbooks/scheduling-gate.md" and "example.com/wait-for-data" in e.summary


def test_node_constraints_and_too_big_and_gpu_sharing_reasons():
    cases = {
        # Kubernetes' NodeAffinity and TaintToleration filters, run by KAI (pkg/scheduler/k8s_internal/predicates)
        "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.": "node-constraints",
        "0/5 nodes are available: 5 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}.": "node-constraints",
        # recorded from KAI on the local runtime (runbooks/scenarios/too-big.yaml)
        "Unable to schedule podgroup: 3 Resources were not found for pod ns/sixteen-q2479 due to: The pod "
        "ns/sixteen-q2479 requires GPU: 16, CPU: 0 (cores), memory: 0 (GB). Max GPU resources available in a single "
        "node in the default node-pool is topped at 8": "too-big",
        # pkg/binder/controllers/bindrequest_controller.go around resource_reservation.go's error
        "Failed to bind pod ns/p to node kwok-a100-0: failed waiting for GPU reservation pod to allocate: "
        "kai-resource-reservation/gpu-reservation-kwok-a100-0-abcde": "gpu-sharing-reservation",
        # pkg/scheduler/cache/status_updater/default_status_updater.go (recordStaleJobEvent)
        "Job is stale. 1 pods are active, minMember is 2": "stale-gang",
    }
    for message, runbook in cases.items():
        e = explain_pod(pod(), [message], None, True, True, NODES)
        assert e.runbook == f"runbooks/{runbook}.md" and e.reported == message, (message, e)


def test_a_bound_pod_of_a_stale_gang_is_warned():
    e = explain_pod(
        pod(node="kwok-a100-1"), ["Job is stale. 1 pods are active, minMember is 2"], None, True, True, NODES
    )
    assert e.state == "Bound" and e.runbook == "runbooks/stale-gang.md" and "grace period" in e.details[0]


def test_evictions_say_consolidation_stale_gang_and_an_ignored_preemption_policy():
    moved = "Pod ns/small-3-abc was preempted and rescheduled due to bin packing (resource consolidation) procedure"
    stale = "Workload doesn't meet the minimum required number of pods (2), evicting remaining pod: ns/gang-1"
    preempted = "Pod ns/filler-xyz was preempted by higher priority workload ns/pg-polite"
    e = explain_pod(pod(node="kwok-a100-0"), [], None, True, True, NODES, evictions=[moved])
    assert e.runbook == "runbooks/consolidation.md" and "consolidation" in e.details[0]
    e = explain_pod(pod(), [], None, True, True, NODES, evictions=[stale])
    assert e.runbook == "runbooks/stale-gang.md"
    never = explain_pod(
        pod(), [], None, True, True, NODES, evictions=[preempted], never_preemptors=frozenset({"ns/pg-polite"})
    )
    assert never.runbook == "runbooks/preemption-policy-never.md" and "preemptionPolicy: Never" in never.details[0]
    ordinary = explain_pod(pod(), [], None, True, True, NODES, evictions=[preempted])
    assert ordinary.runbook == "" and ordinary.details == []
    # another queue took it back: pkg/scheduler/api/unschedule_info.go (GetReclaimMessage)
    reclaimed = "Pod ns/prod-train-x was preempted by workload ns/pg-research-train-1."
    e = explain_pod(pod(), [], None, True, True, NODES, evictions=[reclaimed])
    assert e.runbook == "runbooks/reclaim-not-happening.md" and "reclaimed" in e.details[0]


def test_a_job_the_api_server_gives_no_pods():
    said = 'Error creating: pods "typo-8x2kq" is forbidden: no PriorityClass with name trian was found'
    e = explain_podless_job("typo", "ns", [said])
    assert e.state == "NoPods" and "'trian'" in e.summary and e.runbook == "runbooks/misspelt-priority-class.md"
    other = explain_podless_job("typo", "ns", ["Error creating: something nobody knows"])
    assert other.runbook == "" and other.reported.endswith("nobody knows")


def test_an_eviction_names_the_runbook_only_when_the_pod_waits_for_room():
    moved = "Pod ns/small-3-abc was preempted and rescheduled due to bin packing (resource consolidation) procedure"
    room = "0/5 nodes are available: 5 node(s) didn't have enough resources: GPUs."
    e = explain_pod(pod(), [room], None, True, True, NODES, evictions=[moved])
    assert e.runbook == "runbooks/consolidation.md" and e.details[0].startswith("Nearest node")
    quota = "NonPreemptibleOverQuota: Non-preemptible workload is over quota."
    e = explain_pod(pod(), [quota], None, True, True, NODES, evictions=[moved])
    assert e.runbook == "runbooks/borrowing-not-happening.md" and "consolidation" in e.details[-1]


def test_the_binders_and_the_job_controllers_words_are_reasons_to_wait():
    from kailab.pods import EventView

    bind = "Failed to bind pod ns/p to node n: failed waiting for GPU reservation pod to allocate: x/y"
    assert EventView("Pod", "p", "BindingError", bind).says_why_waiting
    assert EventView("Job", "j", "FailedCreate", "Error creating: forbidden").says_why_waiting
    assert not EventView("Pod", "p", "Bound", "Pod bound successfully to node n").says_why_waiting


def test_a_stale_gang_evicted_and_made_again_names_the_eviction_over_the_gang_it_waits_for():
    # a Job's pod made again after KAI evicted its stale gang waits for its gang to fit: the eviction is the story
    stale = "Workload doesn't meet the minimum required number of pods (2), evicting remaining pod: ns/gang-1"
    gang = "NotReady: Job is not ready for scheduling. Waiting for 2 pods, currently 1 exist"
    e = explain_pod(pod(), [gang], None, True, True, NODES, evictions=[stale])
    assert e.runbook == "runbooks/stale-gang.md" and e.reported == gang and "minMember" in e.details[-1]
    assert explain_pod(pod(), [gang], None, True, True, NODES).runbook == "runbooks/gang-not-binding.md"
    # its Evict event lost (client-go drops an object's events past a burst of 25): KAI's StaleJob before tells
    was_stale = "Job is stale. 1 pods are active, minMember is 2"
    e = explain_pod(pod(), [was_stale, gang], None, True, True, NODES)
    assert e.runbook == "runbooks/stale-gang.md" and e.reported == gang and was_stale in e.details[-1]
    quota = "NonPreemptibleOverQuota: Non-preemptible workload is over quota."
    assert (
        explain_pod(pod(), [was_stale, quota], None, True, True, NODES).runbook == "runbooks/borrowing-not-happening.md"
    )


def test_a_priority_class_label_that_names_no_class_is_named():
    # KAI v0.17.0's pod-grouper ignores it and takes its default for a Job (default_grouper.go)
    p = api_pod(node="kwok-a100-0", priority_class="inference")
    e = explain_pod(p, [], None, True, True, NODES, ignored_class=("infernce", "train"))
    assert e.runbook == "runbooks/misspelt-priority-class.md"
    assert "'infernce'" in e.details[0] and "got 'train'" in e.details[0] and "'inference' of its spec" in e.details[0]
    # waiting for a reason of its own, that reason keeps its runbook; the label is still said
    quota = "NonPreemptibleOverQuota: Non-preemptible workload is over quota."
    waiting = explain_pod(pod(), [quota], None, True, True, NODES, ignored_class=("infernce", ""))
    assert waiting.runbook == "runbooks/borrowing-not-happening.md"
    assert "its default for the workload's kind" in waiting.details[-1]
    assert explain_pod(p, [], None, True, True, NODES).runbook == ""


class FakeKube:
    """Objects by (kind, name), as Kube.get returns them."""

    def __init__(self, objects):
        self.objects = objects

    def get(self, api_version, kind, name, namespace=None):
        return self.objects.get((kind, name))


def test_the_priority_class_label_is_read_from_the_top_owner_first():
    from kubernetes.client import ApiClient, V1ObjectMeta, V1OwnerReference, V1Pod

    from kailab.explain import priority_label

    def raw(labels, owner=None):
        refs = None
        if owner:
            refs = [V1OwnerReference(api_version=owner[0], kind=owner[1], name=owner[2], uid="u", controller=True)]
        pod = V1Pod(metadata=V1ObjectMeta(name="p", namespace="ns", labels=labels, owner_references=refs))
        return ApiClient().sanitize_for_serialization(pod)  # the API's JSON

    job = {("Job", "j"): {"metadata": {"labels": {"priorityClassName": "infernce"}}}}
    assert priority_label(FakeKube(job), raw({}, ("batch/v1", "Job", "j"))) == "infernce"
    assert priority_label(FakeKube({}), raw({"priorityClassName": "x"})) == "x"
    deployment = {
        ("ReplicaSet", "d-1"): {
            "metadata": {
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "controller": True}]
            }
        },
        ("Deployment", "d"): {"metadata": {"labels": {"priorityClassName": "inferense"}}},
    }
    assert priority_label(FakeKube(deployment), raw({}, ("apps/v1", "ReplicaSet", "d-1"))) == "inferense"
    assert priority_label(FakeKube(job), raw({}, ("batch/v1", "Job", "gone"))) == ""


def test_a_fraction_bound_after_failed_reservations_says_so():
    # pkg/binder/controllers/bindrequest_controller.go around resource_reservation.go's error
    failed = (
        "Failed to bind pod ns/p to node kwok-a100-0: failed to reserve GPUs for pod <ns/p> in gpu group <g>: "
        "failed waiting for GPU reservation pod to allocate: kai-resource-reservation/gpu-reservation-kwok-a100-0-x"
    )
    e = explain_pod(pod(node="kwok-a100-0", gpus=0.5), [failed, failed], None, True, True, NODES)
    assert e.state == "Bound" and e.runbook == "runbooks/gpu-sharing-reservation.md" and e.reported == failed
    assert "failed 2 time(s)" in e.details[0]
    waiting = explain_pod(pod(gpus=0.5), [failed], None, True, True, NODES)
    assert waiting.state == "Pending" and waiting.runbook == "runbooks/gpu-sharing-reservation.md"
    assert explain_pod(pod(node="kwok-a100-0", gpus=0.5), [], None, True, True, NODES).runbook == ""


# -- The runbooks' causes (issue 40): KAI's words as the lab recorded them (runbooks/*.md show the runs), in, the
# runbook out. A message that no rule knows leaves the runbook empty, so each rule is what names its runbook.
def test_each_runbook_cause_kai_reports_names_its_runbook():
    from kailab.explain import Facts

    cases = {
        "no nodes with enough resources were found: 5 node(s) didn't match pod affinity rules.": "pod-affinity",
        "no nodes with enough resources were found: 5 node(s) didn't match pod anti-affinity rules.": "pod-affinity",
        "Scheduling conditions were not met for pod ns/w-x:\nVolumeBinding: pod has unbound immediate "
        "PersistentVolumeClaims.\n": "unbound-volume",
        "Unable to schedule podgroup: node-group zone-a.rack-a1 can allocate only 2 of 3 required pods. \n"
        "topology lab-topology, requirement topology.kailab.io/rack couldn't be satisfied for job <ns/pg>.": (
            "topology-unmet"
        ),
        "no nodes with enough resources were found: 1 node(s) didn't have enough resources: GPU memory. 4 node(s) "
        "didn't match Pod's node affinity/selector.": "gpu-memory-label",
        "NonPreemptibleOverQuota: Non-preemptible workload is over quota. Workload requested 1 GPUs, but dept-serve "
        "quota is 4 GPUs, while 4 GPUs are already allocated for non-preemptible pods. Use a preemptible workload to "
        "go over quota.": "non-preemptible-capped",
        "NonPreemptibleOverQuota: Non-preemptible workload is over quota. Workload requested 1 CPU cores, but team-a "
        "quota is 0.002 cores, while 0 cores are already allocated for non-preemptible pods. Use a preemptible "
        "workload to go over quota.": "non-preemptible-capped",
    }
    for message, runbook in cases.items():
        e = explain_pod(pod(), [message], None, True, True, NODES)
        assert e.runbook == f"runbooks/{runbook}.md" and e.reported == message, (message, e)
    # Over quota in its own queue, for GPUs: borrowing, as before (the parent's or CPU's words are the new runbook's).
    own = "NonPreemptibleOverQuota: Non-preemptible workload is over quota. Workload requested 1 GPUs, but team-a quota"
    assert explain_pod(pod(), [own], None, True, True, NODES).runbook == "runbooks/borrowing-not-happening.md"
    # A queue KAI says does not exist, while the Queue object is there with its parent in another partition.
    missing = "QueueDoesNotExist: Queue 'team-a' does not exist."
    apart = Facts(parent_outside=("dept", "pool-b", ""))
    e = explain_pod(pod(), [missing], {"name": "team-a"}, True, True, NODES, facts=apart)
    assert e.runbook == "runbooks/partition-parent.md" and "'dept' is in another partition" in e.summary
    assert "partition 'pool-b', its queue's is the default partition" in e.summary
    assert explain_pod(pod(), [missing], None, False, True, NODES).runbook == "runbooks/pod-pending-forever.md"


def test_what_the_cluster_says_beside_kai_names_the_runbook():
    from kailab.explain import Facts

    waiting = "Job is not ready for scheduling. Waiting for 4 pods, currently 2 exist, 0 are gated"
    refused = (
        'Error creating: pods "gang-f6n8v" is forbidden: exceeded quota: kailab-quota, requested: '
        "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2"
    )
    e = explain_pod(pod(), [waiting], None, True, True, NODES, facts=Facts(refused=refused))
    assert e.runbook == "runbooks/pods-refused.md" and refused in e.details[-1]
    assert explain_pod(pod(), [waiting], None, True, True, NODES).runbook == "runbooks/gang-not-binding.md"
    # A BindRequest and no bind: the binder; no PodGroup: the pod-grouper; nothing said for long: the scheduler.
    binder = explain_pod(pod(), [], None, True, True, NODES, facts=Facts(bind_request="kwok-l40s-0"))
    assert "is kai-binder running?" in binder.summary and binder.runbook == "runbooks/kai-component-down.md"
    # A binder that tried and reported is running: its failure is the GPU reservation's, not a component down.
    tried = "failed to reserve GPUs for pod ns/p: failed waiting for GPU reservation pod to allocate"
    busy = explain_pod(pod(), [tried], None, True, True, NODES, facts=Facts(bind_request="kwok-l40s-0"))
    assert busy.runbook == "runbooks/gpu-sharing-reservation.md"
    grouper = explain_pod(pod(grouped=False), [], None, True, True, NODES)
    assert "is kai-podgrouper running?" in grouper.summary and grouper.runbook == "runbooks/kai-component-down.md"
    quiet = explain_pod(pod(), [], None, True, True, NODES, facts=Facts(waiting_for=30))
    assert "is kai-scheduler running?" in quiet.summary and quiet.runbook == "runbooks/kai-component-down.md"
    fresh = explain_pod(pod(), [], None, True, True, NODES, facts=Facts(waiting_for=2))
    assert fresh.runbook == "" and "look again in a few seconds" in fresh.summary
    # The queue as an annotation: default-queue, and why.
    lost = PodView("p", namespace="ns", scheduler="kai-scheduler", node="kwok-a100-0", pod_group="pg", phase="Running")
    e = explain_pod(lost, [], None, True, True, NODES, facts=Facts(queue_annotation="team-research"))
    assert e.runbook == "runbooks/queue-annotation.md" and "'team-research'" in e.details[0]


def test_evictions_a_budget_or_finished_pods_do_not_explain_away():
    from kailab.explain import Facts

    reclaimed = "Pod ns/b-1 was preempted by workload ns/pg-claimer. team-prod uses <GPU: 25, …>"
    bound = PodView("p", namespace="ns", queue="team-prod", scheduler="kai-scheduler", node="n", pod_group="pg")
    e = explain_pod(bound, [], None, True, True, NODES, evictions=[reclaimed], facts=Facts(budgets=("borrower",)))
    assert e.runbook == "runbooks/pdb-not-honoured.md" and "(borrower)" in e.details[-1]
    e = explain_pod(bound, [], None, True, True, NODES, evictions=[reclaimed])
    assert e.runbook == "runbooks/reclaim-not-happening.md"
    stale = "Job is stale. 2 pods are active, minMember is 4"
    e = explain_pod(pod(), [stale], None, True, True, NODES, facts=Facts(finished=2))
    assert e.runbook == "runbooks/completing-gang-evicted.md" and "upstream #1968" in e.details[-1]
    assert explain_pod(pod(), [stale], None, True, True, NODES).runbook == "runbooks/stale-gang.md"


def test_quotas_past_the_fleet_and_time_based_fair_share_explain_a_pod_that_waits_for_room():
    from kailab.explain import Facts

    no_room = "no nodes with enough resources were found: 5 node(s) didn't have enough resources: GPUs."
    row = {"name": "team-a", "allocated": 8, "quota": 24, "fair_share": 24}
    e = explain_pod(pod(), [no_room], None, True, True, NODES, row, facts=Facts(quotas_past_fleet=(48, 32)))
    assert e.runbook == "runbooks/quotas-past-fleet.md"
    assert "add up to 48, more than the fleet's 32 GPUs" in e.details[-1]
    assert not any("KAI reclaims for it" in d for d in e.details)  # the standing's promise does not hold here
    used = Facts(usage={"team-a": 0.95, "team-b": 0.0})
    e = explain_pod(pod(), [no_room], None, True, True, NODES, row, facts=used)
    assert e.runbook == "runbooks/time-based-fairshare.md" and "used 0.95 of the fleet lately" in e.details[-1]
    fresh = Facts(usage={"team-a": 0.2, "team-b": 0.95})  # the queue that used less: not its cause
    assert explain_pod(pod(), [no_room], None, True, True, NODES, row, facts=fresh).runbook == (
        "runbooks/pod-pending-forever.md"
    )


def test_a_job_refused_by_kais_sharing_webhook_or_by_the_api_server():
    # pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go, Validate, as the API server reports a webhook
    off = (
        'Error creating: admission webhook "pod-validation.kai.scheduler" denied the request: attempting to create '
        "a pod ns/half-x with gpu sharing request, while GPU sharing is disabled"
    )
    assert explain_podless_job("half", "ns", [off]).runbook == "runbooks/gpu-sharing-off.md"
    policy = (
        "Error creating: pods \"big-x\" is forbidden: ValidatingAdmissionPolicy 'no-big-pods' with binding "
        "'no-big-pods' denied request: a pod may use at most 4 GPUs in this namespace"
    )
    e = explain_podless_job("big", "ns", [policy])
    assert e.state == "NoPods" and e.runbook == "runbooks/pods-refused.md" and e.reported == policy


def test_a_label_selector_selects_as_kubernetes_does():
    from kailab.explain import selects

    meta = {"labels": {"kailab.io/workload": "b", "tier": "gpu"}}
    assert selects({"matchLabels": {"kailab.io/workload": "b"}}, meta)
    assert not selects({"matchLabels": {"kailab.io/workload": "c"}}, meta)
    assert selects({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu"]}]}, meta)
    assert not selects({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, meta)
    assert not selects(None, meta) and selects({}, meta)  # a PodDisruptionBudget's empty selector: every pod


def test_time_based_fair_share_weighs_a_queue_against_its_siblings_that_want_gpus():
    from kailab.explain import rivals

    queues = {
        name: {"metadata": {"name": name}, "spec": {"parentQueue": parent} if parent else {}}
        for name, parent in (("early", None), ("late", None), ("idle", None), ("child", "early"))
    }
    standing = {
        "early": {"allocated": 6, "pending": 26},
        "late": {"allocated": 26},
        "idle": {},
        "child": {"pending": 1},
    }
    usage = {"early": 0.95, "late": 0.1, "idle": 0.0, "child": 0.9}
    assert rivals("early", queues, standing, usage) == {"early": 0.95, "late": 0.1}  # not idle, not a child
    assert rivals("early", queues, standing, None) is None
