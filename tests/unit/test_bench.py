"""kailab bench: stages from the cluster's own timestamps, and the Job it submits."""

from kailab.bench import job, stage_times


def pod(created, grouped=None, bound=None, ready=None):
    mf = [{"manager": "kai-podgrouper", "time": grouped, "fieldsV1": {"f:metadata": {"f:annotations": {"f:pod-group-name": {}}}}}] if grouped else []
    conds = [c for c in ({"type": "PodScheduled", "status": "True", "lastTransitionTime": bound} if bound else None,
                         {"type": "Ready", "status": "True", "lastTransitionTime": ready} if ready else None) if c]
    return {"metadata": {"creationTimestamp": created, "managedFields": mf}, "status": {"conditions": conds}}


def test_stages_count_from_the_first_pod_created_to_the_last_pod_there():
    pods = [pod("2026-11-23T10:00:00Z", "2026-11-23T10:00:01Z", "2026-11-23T10:00:02Z", "2026-11-23T10:00:03Z"),
            pod("2026-11-23T10:00:01Z", "2026-11-23T10:00:04Z", "2026-11-23T10:00:05Z", "2026-11-23T10:00:07Z")]
    assert stage_times(pods) == {"created": 1.0, "grouped": 4.0, "bound": 5.0, "running": 7.0}


def test_a_stage_not_reached_by_every_pod_is_left_out():
    pods = [pod("2026-11-23T10:00:00Z", bound="2026-11-23T10:00:02Z"), pod("2026-11-23T10:00:00Z")]
    assert stage_times(pods) == {"created": 0.0}  # no pod-grouper (kube-scheduler), one pod not bound


def test_the_kai_job_joins_the_bench_queue_and_the_default_one_does_not():
    kai, default = job("kai-scheduler", 8), job("default-scheduler", 8)
    assert kai["spec"]["template"]["metadata"]["labels"]["kai.scheduler/queue"] == "kailab-bench"
    assert "kai.scheduler/queue" not in default["spec"]["template"]["metadata"]["labels"]
    assert default["spec"]["template"]["spec"]["nodeSelector"] == {"run.ai/simulated-gpu-node-pool": "bench"}
