"""The topology words without a cluster: what they make (a Topology, annotations, a PodGroup's constraint), how the
checks read a run (``domains``), ``requires:`` on node names, CPUs and labels, and a fleet
file's per-pool labels and taints. On the real KAI: tests/fleet/test_topology_fleet.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kailab.checks import FleetNode, Observation, evaluate, misfit
from kailab.errors import KailabError
from kailab.fleet import load_fleet, node_objects
from kailab.paths import EXERCISES
from kailab.pods import NodeView, PodView
from kailab.scenarios.fold import Change, RunState, fold, observe
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import topology_object, workload_objects
from kailab.scenarios.model import Expectation
from kailab.scenarios.objects import RequiresFile
from kailab.scenarios.prefix import prefixed
from kailab.scenarios.values import Bound

SCENARIOS = Path(__file__).parent.parent / "scenarios"
RACKS = {"n1": {"rack": "r1"}, "n2": {"rack": "r1"}, "n3": {"rack": "r2"}}


def bound_pod(name, node, workload="w"):
    return PodView(name, workload=workload, node=node, phase="Running")


def domains(want: str, workload: str = "w") -> Expectation:
    return Expectation(title="domains", measure="domains", want=want, workload=workload)


def test_domains_counts_the_label_values_of_the_nodes_the_pods_are_bound_to():
    one_rack = Observation(pods=[bound_pod("a", "n1"), bound_pod("b", "n2")], node_labels=RACKS)
    two_racks = Observation(pods=[bound_pod("a", "n1"), bound_pod("b", "n3"), PodView("c")], node_labels=RACKS)
    check = evaluate(domains("rack=1"), one_rack)
    assert check.passed and check.expected == "1 value of rack" and check.observed == "2 bound pods on 1 value: r1"
    check = evaluate(domains("rack=1"), two_racks)
    assert not check.passed and check.observed == "2 bound pods on 2 values: r1, r2"
    assert evaluate(domains("rack=>=2"), two_racks).passed
    assert not evaluate(domains("rack=>=2"), Observation()).passed  # nothing bound proves nothing
    unlabelled = Observation(pods=[bound_pod("a", "n9")], node_labels=RACKS)
    assert evaluate(domains("rack=1"), unlabelled).observed == "1 bound pod on 1 value: (no label)"


def test_a_recorded_node_folds_into_the_labels_the_checks_read():
    state = RunState()
    change = Change("ADDED", node=NodeView("n1", {"rack": "r1"}))
    fold(state, Change.from_json(change.to_json()))
    fold(state, Change("ADDED", pod=bound_pod("a", "n1")))
    assert evaluate(domains("rack=1"), observe(state)).observed == "1 bound pod on 1 value: r1"


@pytest.mark.parametrize(
    "requires, words",
    [
        (RequiresFile(nodeNames=["n0", "n1"]), ""),
        (RequiresFile(nodeNames=["n0", "big-0"]), "it needs the nodes big-0, which the fleet does not have"),
        (RequiresFile(cpusPerNode=Bound.parse(">=4")), ""),
        (
            RequiresFile(cpusPerNode=Bound.parse(">=64")),
            "it needs ≥ 64 CPUs on every node, the fleet's nodes have 4, 16",
        ),
        (RequiresFile(nodeLabels=["rack"]), ""),  # the CPU-only node needs none
        (RequiresFile(nodeLabels=["zone"]), "it needs the label zone on every GPU node, 1 have none (n1 …)"),
    ],
)
def test_misfit_on_node_names_cpus_and_labels(requires, words):
    nodes = [
        FleetNode("n0", 8, 16, {"rack": "r1", "zone": "z"}),
        FleetNode("n1", 8, 16, {"rack": "r1"}),
        FleetNode("cpu-0", 0, 4, {}),
    ]
    assert misfit(requires, nodes) == words


def test_the_lesson_makes_a_topology_and_annotates_its_jobs():
    s = load_scenario(EXERCISES / "topology.yaml")
    (topo,) = map(topology_object, s.topologies)
    assert topo["apiVersion"] == "kai.scheduler/v1alpha1" and topo["kind"] == "Topology"
    assert topo["spec"]["levels"] == [
        {"nodeLabel": "topology.kailab.io/zone", "alias": "zone"},
        {"nodeLabel": "topology.kailab.io/rack", "alias": "rack"},
    ]
    (job,) = workload_objects(s.workload("same-rack"), s)
    annotations = job["metadata"]["annotations"]
    assert annotations["kai.scheduler/topology"] == "lab-topology"
    assert annotations["kai.scheduler/topology-required-placement"] == "rack"
    assert "kai.scheduler/topology-preferred-placement" not in annotations
    (near,) = workload_objects(s.workload("near"), s)
    assert near["metadata"]["annotations"]["kai.scheduler/topology-preferred-placement"] == "rack"
    assert s.node_label_keys == ("topology.kailab.io/rack",)


def test_a_hand_made_pod_group_carries_the_constraint_in_its_spec():
    s = load_scenario(SCENARIOS / "words-topology.yaml")
    objs = workload_objects(s.workload("pg"), s)
    (group,) = [o for o in objs if o["kind"] == "PodGroup"]
    assert group["spec"]["topologyConstraint"] == {
        "topology": "t-topo",
        "requiredTopologyLevel": "topology.kailab.io/rack",
    }
    assert all("kai.scheduler/topology" not in o["metadata"].get("annotations", {}) for o in objs)


def test_a_prefix_renames_the_topology_and_the_workloads_naming_it():
    s = prefixed(load_scenario(EXERCISES / "topology.yaml"), "ann")
    assert [t.name for t in s.topologies] == ["ann-lab-topology"]
    (job,) = workload_objects(s.workload("same-rack"), s)
    assert job["metadata"]["annotations"]["kai.scheduler/topology"] == "ann-lab-topology"


def test_a_pools_labels_and_taints_go_on_its_nodes_beside_kailabs(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "pools:\n"
        "  - {name: a, nodes: 1, gpusPerNode: 8, gpuProduct: X, gpuMemoryMiB: 1,\n"
        "     labels: {example.com/rack: r1}, taints: [{key: example.com/reserved, value: infra}]}\n"
        "  - {name: b, nodes: 1, gpusPerNode: 0}\n"
    )
    a, b = node_objects(load_fleet(path))
    assert (
        a["metadata"]["labels"]["example.com/rack"] == "r1"
        and a["metadata"]["labels"]["run.ai/simulated-gpu-node-pool"] == "a"
    )
    assert a["spec"]["taints"][1:] == [{"key": "example.com/reserved", "value": "infra", "effect": "NoSchedule"}]
    assert "example.com/rack" not in b["metadata"]["labels"] and len(b["spec"]["taints"]) == 1


def test_the_lesson_fleet_has_racks_and_nothing_else_new():
    """manifests/fleet.yaml's racks are labels only: the 32-GPU fleet's names, GPUs and taints stay as they were."""
    nodes = node_objects(load_fleet())
    racks = {n["metadata"]["name"]: n["metadata"]["labels"]["topology.kailab.io/rack"] for n in nodes}
    assert racks == {
        "kwok-a100-0": "rack-a1",
        "kwok-a100-1": "rack-a1",
        "kwok-h100-0": "rack-a2",
        "kwok-l40s-0": "rack-b1",
        "kwok-l40s-1": "rack-b1",
    }
    assert all(len(n["spec"]["taints"]) == 1 for n in nodes)


def test_a_pool_may_not_set_a_label_kailab_sets(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text("pools:\n  - {name: a, nodes: 1, gpusPerNode: 0, labels: {kai.scheduler/node-pool: x}}\n")
    with pytest.raises(KailabError, match="is a label kailab sets on every node itself"):
        load_fleet(path)
