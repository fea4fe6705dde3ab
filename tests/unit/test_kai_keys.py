"""KAI's own words, as KAI's docs write them (issue 40, item 4): every label and annotation KAI v0.17.0's docs document
for a workload is accepted in a scenario's ``labels:``/``annotations:`` and reaches the cluster unchanged; where kailab
has a word for it, kailab reads it as that word; a queue whose quota is above its limit is a warning, not a refusal.

Each key here is also a row of kailab/kai_strings.yaml, which tests/unit/test_kai_strings.py finds in KAI's source
and docs. tests/scenarios/words-kai-keys.yaml runs the documented ones on the real KAI.
"""

from __future__ import annotations

import pytest

from kailab.errors import ScenarioError
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import workload_objects
from kailab.scenarios.objects import KAI_KEY_WORDS

# key → (labels | annotations, a value as the docs write it, the word kailab reads it as (None: passed through))
DOCUMENTED = {
    "kai.scheduler/queue": ("labels", "team-a", ("queue", "team-a")),
    "priorityClassName": ("labels", "train", ("priorityClassLabel", "train")),
    "kai.scheduler/preemptibility": ("labels", "non-preemptible", ("preemptibility", "non-preemptible")),
    "kai.scheduler/node-pool": ("labels", "pool-a", ("nodePool", "pool-a")),
    "kai.scheduler/subgroup-name": ("labels", "workers", None),
    "kai.scheduler/batch-min-member": ("annotations", "2", ("minMember", 2)),
    "kai.scheduler/preemption-delay": ("annotations", "5m", ("preemptionDelay", "5m")),
    "kai.scheduler/staleness-grace-period": ("annotations", "2m", ("stalenessGracePeriod", "2m")),
    "kai.scheduler/topology": ("annotations", "cluster-topology", None),
    "kai.scheduler/topology-required-placement": ("annotations", "topology.kubernetes.io/zone", None),
    "kai.scheduler/topology-preferred-placement": ("annotations", "kubernetes.io/hostname", None),
    "kai.scheduler/segment-size": ("annotations", "4", None),
    "kai.scheduler/segment-topology-required-placement": ("annotations", "topology.kubernetes.io/zone", None),
    "kai.scheduler/segment-topology-preferred-placement": ("annotations", "kubernetes.io/hostname", None),
    "kai.scheduler/skip-podgrouper": ("annotations", "true", None),
    "pod-group-name": ("annotations", "my-podgroup", None),
    "gpu-fraction": ("annotations", "0.5", ("gpus", 0.5)),
    "gpu-memory": ("annotations", "2000", ("gpuMemory", 2000)),
}
ON_PODS = {"gpu-fraction", "gpu-memory"}  # KAI reads them from the pod; the rest from the top owner (or the pod)


def scenario(tmp_path, workload: str, queues: str = ""):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\n{queues}workloads:\n  - {workload}\nsteps: [{{apply: w}}]\n")
    return load_scenario(path)


@pytest.mark.parametrize("key", sorted(DOCUMENTED))
@pytest.mark.parametrize("kind", ["Job", "Pod"])
def test_each_documented_key_is_accepted_and_reaches_the_cluster_unchanged(tmp_path, key, kind):
    where, value, word = DOCUMENTED[key]
    gpus = "" if key in ("gpu-fraction", "gpu-memory") else ", gpus: 1"
    s = scenario(tmp_path, f'{{name: w, kind: {kind}, pods: 2{gpus}, {where}: {{{key}: "{value}"}}}}')
    objects = workload_objects(s.workload("w"), s)
    owner = objects[0]
    assert owner["metadata"][where][key] == value  # the top owner (the Job, or the first bare pod) as written
    if key in ON_PODS:
        pods = [o["spec"]["template"] for o in objects if o["kind"] == "Job"] or objects
        assert all(p["metadata"]["annotations"][key] == value for p in pods)
        assert all("nvidia.com/gpu" not in str(p["spec"]["containers"][0]["resources"]) for p in pods)
    if word is not None and kind in KAI_KEY_WORDS[key][2]:  # where kailab writes that key for its word
        assert getattr(s.workload("w"), word[0]) == word[1]  # kailab's checks see what KAI will


def test_the_priority_label_as_the_docs_write_it_reaches_the_pods_too(tmp_path):
    s = scenario(tmp_path, "{name: w, labels: {priorityClassName: train}}")
    (job,) = workload_objects(s.workload("w"), s)
    assert job["metadata"]["labels"]["priorityClassName"] == "train"
    assert job["spec"]["template"]["metadata"]["labels"]["priorityClassName"] == "train"
    assert "priorityClassName" not in job["spec"]["template"]["spec"]  # the label, not the spec's field


@pytest.mark.parametrize(
    "workload, says",
    [
        ("{name: w, queue: b, labels: {kai.scheduler/queue: a}}", "and queue: says 'b'"),
        ("{name: w, priorityClass: build, labels: {priorityClassName: train}}", "and priorityClass: says 'build'"),
        ("{name: w, minMember: 3, pods: 3, annotations: {kai.scheduler/batch-min-member: '2'}}", "minMember: says 3"),
        ("{name: w, annotations: {kai.scheduler/staleness-grace-period: later}}", "'later' is not a value KAI reads"),
        ("{name: w, kind: PodGroup, pods: 2, gpus: 0, annotations: {pod-group-name: x}}", "kailab writes for kind"),
        ("{name: w, labels: {kailab.io/workload: x}}", "is kailab's own"),
    ],
)
def test_only_kailabs_own_keys_and_two_different_answers_are_refused(tmp_path, workload, says):
    with pytest.raises(ScenarioError, match=says):
        scenario(tmp_path, workload)


def test_the_same_answer_both_ways_is_accepted(tmp_path):
    s = scenario(tmp_path, "{name: w, priorityClass: train, labels: {priorityClassName: train}}")
    assert s.workload("w").priority_class == "train"


def test_a_quota_above_its_limit_is_a_warning_with_its_line(tmp_path):
    s = scenario(
        tmp_path,
        "{name: w, queue: q}",
        queues="queues:\n  - {name: q, gpu: {quota: 8, limit: 4}}\n  - {name: r, cpu: {quota: -1, limit: 4}}\n",
    )
    assert s.warnings == (
        "s.yaml:3: queue q: gpu: quota 8 is above limit 4: KAI accepts it, but a queue never gets more than its limit, "
        "so the quota above it is never given",
        "s.yaml:4: queue r: cpu: an unlimited quota (-1) is above limit 4: KAI accepts it, but a queue never gets more "
        "than its limit, so the quota above it is never given",
    )
    assert scenario(tmp_path, "{name: w}", queues="queues: [{name: q, gpu: {quota: 4, limit: 8}}]\n").warnings == ()


def test_a_step_that_sets_a_quota_above_its_limit_is_a_warning_at_the_step(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: t\nqueues: [{name: q}]\nworkloads: [{name: w, queue: q}]\nsteps:\n  - apply: w\n"
        "  - queue: {name: q, gpu: {quota: 2, limit: 1}}\n"
    )
    (warning,) = load_scenario(path).warnings
    assert warning.startswith("s.yaml:6: queue q: gpu: quota 2 is above limit 1: KAI accepts it")


def test_a_ray_clusters_kai_keys_are_read_as_its_words_on_the_ray_cluster(tmp_path):
    # KAI's Ray grouper reads them from the RayCluster, its top owner, as its default grouper does from a Job's
    ray = (
        "{name: w, kind: RayCluster, gpus: 0, workerGroups: [{name: g, replicas: 2, minReplicas: 1}], "
        "labels: {kai.scheduler/queue: team-a, kai.scheduler/preemptibility: non-preemptible, tier: gold}, "
        "annotations: {kai.scheduler/staleness-grace-period: 2m}}"
    )
    s = scenario(tmp_path, ray)
    w = s.workload("w")
    assert (w.queue, w.preemptibility, w.stalenessGracePeriod) == ("team-a", "non-preemptible", "2m")
    (obj,) = workload_objects(w, s)
    assert obj["kind"] == "RayCluster"
    assert obj["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"
    assert obj["metadata"]["labels"]["tier"] == "gold"  # any other label passes through
    assert obj["metadata"]["annotations"]["kai.scheduler/staleness-grace-period"] == "2m"
    with pytest.raises(ScenarioError, match="and queue: says 'b'"):
        scenario(tmp_path, ray.replace("gpus: 0,", "gpus: 0, queue: b,"))
