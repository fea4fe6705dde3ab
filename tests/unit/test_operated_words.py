"""A PyTorchJob, a JobSet and a LeaderWorkerSet in a scenario: the object kailab applies (the counts KAI's grouper
reads, the queue label on the top owner), the operator the scenario needs, and a partition's marks on every pod
template the object nests. Their bad inputs: tests/badinput/scenarios/{pytorchjob,jobset,lws}-*.yaml; on the real
KAI and operators: tests/fleet/test_kai.py (the lessons) and tests/fleet/test_operators_on_kai.py."""

from __future__ import annotations

import copy

import pytest

from kailab import operators
from kailab.applied import kai_lines
from kailab.checks import unable
from kailab.labels import QUEUE_LABEL, WORKLOAD_LABEL
from kailab.ownership import stamped
from kailab.partitions import owner, toleration
from kailab.paths import EXERCISES
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import workload_objects

PYTORCH = load_scenario(EXERCISES / "pytorchjob.yaml")
JOBS = load_scenario(EXERCISES / "jobset-lws.yaml")


def the_object(scenario, name: str) -> dict:
    (obj,) = workload_objects(scenario.workload(name), scenario)
    assert operators.operator_for(obj["apiVersion"], obj["kind"]) is not None  # a kind an operator of kailab's makes
    assert obj["metadata"]["labels"][QUEUE_LABEL] == "gang-demo"  # the top owner: CalcPodGroupQueue reads it first
    return obj


def test_a_pytorchjob_is_a_master_and_workers_and_minavailable_where_kais_grouper_reads_them():
    torch = the_object(PYTORCH, "torch")
    specs = torch["spec"]["pytorchReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Master": 1, "Worker": 3}
    assert "runPolicy" not in torch["spec"]  # no minAvailable: KAI counts every replica
    for spec in specs.values():
        (container,) = spec["template"]["spec"]["containers"]
        assert container["name"] == "pytorch"  # the training-operator's webhook wants that name
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
        assert spec["template"]["metadata"]["labels"][WORKLOAD_LABEL] == "torch"  # kailab counts its pods by it
    assert specs["Master"]["template"] is not specs["Worker"]["template"]
    assert PYTORCH.workload("torch").total_pods == 4
    small = the_object(PYTORCH, "torch-min")
    assert small["spec"]["runPolicy"] == {"schedulingPolicy": {"minAvailable": 4}}
    assert PYTORCH.workload("torch-min").total_pods == 6


def test_a_jobset_writes_parallelism_and_completions_and_counts_the_pods_its_jobs_make():
    train = the_object(JOBS, "train")
    jobs = {rj["name"]: (rj["replicas"], rj["template"]["spec"]) for rj in train["spec"]["replicatedJobs"]}
    assert {n: (r, s["parallelism"], s["completions"]) for n, (r, s) in jobs.items()} == {
        "driver": (1, 1, 1),
        "workers": (2, 2, 2),  # completions left out: parallelism
    }
    assert JOBS.workload("train").total_pods == 5
    (trap,) = the_object(JOBS, "trap")["spec"]["replicatedJobs"]
    assert (trap["template"]["spec"]["parallelism"], trap["template"]["spec"]["completions"]) == (4, 2)
    assert JOBS.workload("trap").total_pods == 2  # a Job makes min(parallelism, completions) pods


def test_a_leaderworkerset_is_replicas_groups_of_size():
    serve = the_object(JOBS, "serve")
    assert (serve["spec"]["replicas"], serve["spec"]["leaderWorkerTemplate"]["size"]) == (2, 3)
    assert serve["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["restartPolicy"] == "Always"
    assert JOBS.workload("serve").total_pods == 6


def test_each_scenario_needs_its_operators_and_a_cluster_without_them_says_so():
    assert PYTORCH.needs == {"operator:PyTorchJob"}
    assert JOBS.needs == {"operator:JobSet", "operator:LeaderWorkerSet"}
    said = unable(JOBS.needs, frozenset({"operator:JobSet"}))
    assert "it makes a LeaderWorkerSet, whose operator this cluster does not run" in said
    assert unable(JOBS.needs, JOBS.needs) == ""
    assert [op.name for op in operators.needed_by(workload_objects(w, JOBS)[0] for w in JOBS.workloads)] == [
        "jobset",
        "lws",
    ]


@pytest.mark.parametrize("scenario, name", [(PYTORCH, "torch"), (JOBS, "train"), (JOBS, "serve")])
def test_a_partition_marks_every_pod_template_the_object_nests(scenario, name):
    """In a partition (demo all side by side) every pod must tolerate the partition's nodes and carry its labels:
    the templates of these kinds are nested, not at spec.template."""
    obj = stamped(copy.deepcopy(workload_objects(scenario.workload(name), scenario)[0]), owner("demo-x"))
    text = str(obj)
    templates = text.count("'containers'")
    assert templates >= 1 and text.count(str(toleration("demo-x"))) == templates
    assert obj["metadata"]["labels"].items() >= owner("demo-x").labels.items()


def test_what_kailab_shows_of_them_are_the_counts_kais_groupers_read():
    shown = {(line.obj, line.where): line.what for line in kai_lines(JOBS)}
    assert "parallelism: 4, completions: 2" in shown[("JobSet trap", "spec.replicatedJobs[0]")]
    assert shown[("LeaderWorkerSet serve", "spec")].startswith("{replicas: 2, leaderWorkerTemplate: {size: 3}")
    shown = {(line.obj, line.where): line.what for line in kai_lines(PYTORCH)}
    assert shown[("PyTorchJob torch-min", "spec.runPolicy")] == "{schedulingPolicy: {minAvailable: 4}}"
    assert shown[("PyTorchJob torch", "spec.pytorchReplicaSpecs.Worker")].startswith("{replicas: 3,")
