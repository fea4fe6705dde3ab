"""explain_pod: from what the schedulers wrote to plain words and a runbook."""

from kailab.explain import explain_pod
from kailab.pods import PodView

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
