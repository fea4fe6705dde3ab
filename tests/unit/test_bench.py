"""kailab bench: stages from the cluster's own timestamps, and the Job it submits."""

from kailab.bench import BenchRun, StageClock, job, stage_times
from kailab.render import ratio


def pod(created, grouped=None, bound=None, ready=None):
    mf = (
        [
            {
                "manager": "kai-podgrouper",
                "time": grouped,
                "fieldsV1": {"f:metadata": {"f:annotations": {"f:pod-group-name": {}}}},
            }
        ]
        if grouped
        else []
    )
    conds = [
        c
        for c in (
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": bound} if bound else None,
            {"type": "Ready", "status": "True", "lastTransitionTime": ready} if ready else None,
        )
        if c
    ]
    return {"metadata": {"creationTimestamp": created, "managedFields": mf}, "status": {"conditions": conds}}


def test_stages_count_from_the_first_pod_created_to_the_last_pod_there():
    pods = [
        pod("2026-11-23T10:00:00Z", "2026-11-23T10:00:01Z", "2026-11-23T10:00:02Z", "2026-11-23T10:00:03Z"),
        pod("2026-11-23T10:00:01Z", "2026-11-23T10:00:04Z", "2026-11-23T10:00:05Z", "2026-11-23T10:00:07Z"),
    ]
    assert stage_times(pods) == {"created": 1.0, "grouped": 4.0, "bound": 5.0, "running": 7.0}


def test_a_stage_not_reached_by_every_pod_is_left_out():
    pods = [pod("2026-11-23T10:00:00Z", bound="2026-11-23T10:00:02Z"), pod("2026-11-23T10:00:00Z")]
    assert stage_times(pods) == {"created": 0.0}  # no pod-grouper (kube-scheduler), one pod not bound


def test_the_kai_job_joins_the_bench_queue_and_the_default_one_does_not():
    kai, default = job("kai-scheduler", 8), job("default-scheduler", 8)
    assert kai["spec"]["template"]["metadata"]["labels"]["kai.scheduler/queue"] == "kailab-bench"
    assert "kai.scheduler/queue" not in default["spec"]["template"]["metadata"]["labels"]
    assert default["spec"]["template"]["spec"]["nodeSelector"] == {"run.ai/simulated-gpu-node-pool": "bench"}


def client_pod(name, annotations=None, node=None, phase="Pending"):
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def test_the_stage_clock_keeps_when_each_pod_first_got_to_each_stage():
    now = [10.0]
    clock = StageClock(10.0, clock=lambda: now[0])
    clock.pod_changed("ADDED", client_pod("a"))
    now[0] = 10.5
    clock.pod_changed("MODIFIED", client_pod("a", {"pod-group-name": "pg"}))
    clock.pod_changed("ADDED", client_pod("b"))
    now[0] = 11.0
    clock.bind_request_changed("ADDED", {"spec": {"podName": "a"}})
    clock.pod_changed("MODIFIED", client_pod("a", {"pod-group-name": "pg"}, node="n1", phase="Running"))
    now[0] = 12.0
    clock.pod_changed("MODIFIED", client_pod("a", {"pod-group-name": "pg"}, node="n1", phase="Running"))  # seen again
    assert clock.first["grouped"] == {"a": 0.5} and clock.first["Running"] == {"a": 1.0}
    # only "created" was reached by both pods; the rest by one of two
    assert clock.last(2) == {"created": 0.5}
    assert clock.last(1) == {"created": 0.5, "grouped": 0.5, "bind request": 1.0, "bound": 1.0, "Running": 1.0}


def test_kai_against_the_default_scheduler_is_a_ratio_of_times_to_all_bound():
    runs = [BenchRun("default-scheduler", 8, to_bound=2.0), BenchRun("kai-scheduler", 8, to_bound=3.0)]
    assert ratio(runs) == 1.5
    assert ratio(runs[1:]) is None


def tolerates(tolerations, taint) -> bool:
    """Kubernetes' rule: same key and effect; operator Exists, or Equal with the same value."""
    return any(
        t["key"] == taint["key"]
        and t.get("effect") in (None, taint["effect"])
        and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
        for t in tolerations
    )


def test_only_the_benchs_pods_may_use_the_benchs_nodes():
    """A lesson's pods left running or pending cannot take the bench's GPUs (they once held its Job short of 2)."""
    from kailab.bench import bench_fleet
    from kailab.fleet import load_fleet, node_objects
    from kailab.labels import KWOK_TOLERATION

    bench_nodes, lesson_nodes = node_objects(bench_fleet(2, 8)), node_objects(load_fleet())
    pod_tolerations = job("default-scheduler", 8)["spec"]["template"]["spec"]["tolerations"]
    for node in bench_nodes:
        taints = node["spec"]["taints"]
        assert all(tolerates(pod_tolerations, t) for t in taints)
        assert not all(tolerates([KWOK_TOLERATION], t) for t in taints)  # what a lesson's pods tolerate
    assert all(tolerates([KWOK_TOLERATION], t) for n in lesson_nodes for t in n["spec"]["taints"])
