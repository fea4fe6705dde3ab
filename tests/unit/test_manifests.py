"""Scenario data → Kubernetes objects: KAI reads the gang size and queue on the Job itself."""

from kailab.paths import EXERCISES
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import queue_object, workload_objects


def test_gang_annotation_is_on_the_job_not_only_the_template():
    s = load_scenario(EXERCISES / "gang.yaml")
    (job,) = workload_objects(s.workload("training"), s)
    assert job["kind"] == "Job"
    assert job["metadata"]["annotations"]["kai.scheduler/batch-min-member"] == "10"
    assert job["metadata"]["labels"]["kai.scheduler/queue"] == "gang-demo"
    tmpl = job["spec"]["template"]
    assert tmpl["spec"]["schedulerName"] == "kai-scheduler"
    assert tmpl["spec"]["priorityClassName"] == "train"
    assert tmpl["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"} in tmpl["spec"]["tolerations"]
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 10


def test_default_scheduler_workload_names_no_scheduler():
    s = load_scenario(EXERCISES / "baseline.yaml")
    (job,) = workload_objects(s.workload("training"), s)
    assert "schedulerName" not in job["spec"]["template"]["spec"]


def test_queue_cpu_and_memory_are_unlimited_unless_set():
    s = load_scenario(EXERCISES / "quota.yaml")
    q = queue_object(next(q for q in s.queues if q.name == "team-prod"))
    assert q["spec"]["parentQueue"] == "ai-factory"
    assert q["spec"]["resources"]["gpu"] == {"quota": 8, "limit": -1, "overQuotaWeight": 1}
    assert q["spec"]["resources"]["cpu"]["limit"] == -1 and q["spec"]["resources"]["memory"]["limit"] == -1


def test_lesson_top_level_quotas_fit_the_fleet():
    from kailab.fleet import load_fleet

    s = load_scenario(EXERCISES / "quota.yaml")
    top = sum(q.gpu.quota for q in s.queues if not q.parent)
    assert top <= load_fleet().total_gpus


def test_hand_made_podgroup(tmp_path):
    path = tmp_path / "pg.yaml"
    path.write_text("""
name: pg
queues: [{name: q, gpu: {quota: 4}}]
workloads: [{name: gang, kind: PodGroup, queue: q, pods: 3, minMember: 3, priorityClass: train}]
steps: [{apply: gang}]
""")
    s = load_scenario(path)
    objs = workload_objects(s.workload("gang"), s)
    assert [o["kind"] for o in objs] == ["PodGroup", "Pod", "Pod", "Pod"]
    assert objs[0]["spec"] == {"minMember": 3, "queue": "q", "priorityClassName": "train"}
    assert all(o["metadata"]["annotations"]["pod-group-name"] == "gang" for o in objs[1:])
    # KAI v0.17.0 reads skip-podgrouper as an annotation; as a label it is ignored.
    assert all(o["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"] == "true" for o in objs[1:])
    assert not any("kai.scheduler/skip-podgrouper" in o["metadata"]["labels"] for o in objs[1:])
