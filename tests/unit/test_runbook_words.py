"""The words the runbooks' causes need (runbooks/scenarios/): what each becomes in the objects kailab applies."""

from __future__ import annotations

import pytest

from kailab.errors import ScenarioError
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import NAMESPACE_QUOTA, namespace_objects, queue_object, workload_objects
from kailab.status import quota_warnings, top_level_quotas


def scenario(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path)


def applied(tmp_path, text: str, workload: str):
    """The scenario in ``text`` and the objects kailab applies for its ``workload``."""
    s = scenario(tmp_path, text)
    return s, workload_objects(s.workload(workload), s)


def test_gpu_memory_is_kais_annotation_and_no_gpu_limit(tmp_path):
    _, (pod,) = applied(
        tmp_path, "name: t\nworkloads: [{name: m, kind: Pod, gpuMemory: 4096}]\nsteps: [{apply: m}]\n", "m"
    )
    assert pod["metadata"]["annotations"]["gpu-memory"] == "4096"
    assert "gpu-fraction" not in pod["metadata"]["annotations"]
    assert "nvidia.com/gpu" not in pod["spec"]["containers"][0]["resources"].get("limits", {})


def test_pod_affinity_and_anti_affinity_are_required_terms(tmp_path):
    _, (job,) = applied(
        tmp_path,
        "name: t\nworkloads:\n  - name: f\n    podAffinity: [{matchLabels: {app: leader}}]\n"
        "    podAntiAffinity: [{matchLabels: {app: f}, topologyKey: topology.kailab.io/rack}]\nsteps: [{apply: f}]\n",
        "f",
    )
    affinity = job["spec"]["template"]["spec"]["affinity"]
    (near,) = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    (apart,) = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert near == {"labelSelector": {"matchLabels": {"app": "leader"}}, "topologyKey": "kubernetes.io/hostname"}
    assert apart["topologyKey"] == "topology.kailab.io/rack"


def test_a_volume_claim_is_mounted_and_made_unbound_in_the_namespace(tmp_path):
    s, (job,) = applied(
        tmp_path,
        "name: t\nnamespaceQuota: {requests.nvidia.com/gpu: '2', pods: 10}\n"
        "workloads: [{name: d, volumeClaim: data}, {name: e, volumeClaim: data}]\nsteps: [{apply: d}, {apply: e}]\n",
        "d",
    )
    pod = job["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    quota, claim = namespace_objects(s)  # one claim for the two workloads that mount it
    assert quota["kind"] == "ResourceQuota" and quota["metadata"]["name"] == NAMESPACE_QUOTA
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "2", "pods": "10"}
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["storageClassName"] == ""
    assert {o["metadata"]["namespace"] for o in (quota, claim)} == {"kailab-t"}


def test_a_disruption_budget_selects_the_workloads_pods_and_comes_last(tmp_path):
    _, (job, pdb) = applied(tmp_path, "name: t\nworkloads: [{name: b, pods: 4, disruptionBudget: {minAvailable: 4}}]\n"
                            "steps: [{apply: b}, {scale: {workload: b, pods: 2}}]\n", "b")  # fmt: skip
    assert job["kind"] == "Job"  # first: the scale step applies objects[0]
    assert pdb["kind"] == "PodDisruptionBudget" and pdb["spec"]["minAvailable"] == 4
    assert pdb["spec"]["selector"] == {"matchLabels": {"kailab.io/workload": "b"}}
    assert job["spec"]["template"]["metadata"]["labels"]["kailab.io/workload"] == "b"


def test_a_queue_in_a_partition_carries_its_node_pool_label(tmp_path):
    s = scenario(
        tmp_path,
        "name: t\nqueues: [{name: d, nodePool: pool-b}, {name: c, parent: d}]\n"
        "workloads: [{name: w, queue: c}]\nsteps: [{apply: w}]\n",
    )
    d, c = (queue_object(q) for q in s.queues)
    assert d["metadata"]["labels"]["kai.scheduler/node-pool"] == "pool-b"
    assert "kai.scheduler/node-pool" not in c["metadata"]["labels"]


def test_the_queue_annotation_and_the_label_are_let_through_as_written(tmp_path):
    _, (job,) = applied(
        tmp_path,
        "name: t\nworkloads: [{name: a, annotations: {kai.scheduler/queue: team-a}}]\nsteps: [{apply: a}]\n",
        "a",
    )
    assert job["metadata"]["annotations"]["kai.scheduler/queue"] == "team-a"
    assert "kai.scheduler/queue" not in job["metadata"]["labels"]  # the mistake: KAI reads only the label
    s, (job,) = applied(
        tmp_path, "name: t\nworkloads: [{name: a, labels: {kai.scheduler/queue: x}}]\nsteps: [{apply: a}]\n", "a"
    )
    assert job["metadata"]["labels"]["kai.scheduler/queue"] == "x" and s.workload("a").queue == "x"
    with pytest.raises(ScenarioError, match="and queue: says 'y'"):
        scenario(
            tmp_path,
            "name: t\nworkloads: [{name: a, queue: y, labels: {kai.scheduler/queue: x}}]\nsteps: [{apply: a}]\n",
        )
    _, (job,) = applied(
        tmp_path, "name: t\nworkloads: [{name: a, annotations: {kai.scheduler/x: y}}]\nsteps: [{apply: a}]\n", "a"
    )
    assert job["metadata"]["annotations"]["kai.scheduler/x"] == "y"  # KAI's prefix is not kailab's: as written


def _row(name, quota, parent=None):
    return {"name": name, "parent": parent, "quota": quota}


def test_status_warns_of_quotas_past_the_fleet_and_past_a_parent():
    nodes = [{"gpus": 8}] * 4  # 32 GPUs
    assert quota_warnings([_row("a", 24), _row("b", 8), _row("c", -1)], nodes) == []  # 32: not more
    (past,) = quota_warnings([_row("a", 24), _row("b", 24)], nodes)
    assert past.startswith("The top-level queues' GPU quotas add up to 48, more than the fleet's 32 GPUs")
    (children,) = quota_warnings([_row("d", 4), _row("t", 8, "d")], nodes)
    assert children.startswith("The quotas of d's children add up to 8, more than its own 4")
    assert "runbooks/quotas-past-fleet.md" in past and "runbooks/quotas-past-fleet.md" in children


def test_top_level_quotas_count_only_top_level_limited_quotas():
    def q(name, quota, parent=None):
        spec = {"resources": {"gpu": {"quota": quota}}}
        return {"metadata": {"name": name}, "spec": {**spec, **({"parentQueue": parent} if parent else {})}}

    assert top_level_quotas([q("a", 24), q("b", 24), q("c", 8, "a"), q("d", -1)]) == 48
