"""Topology-aware placement on the real KAI: the topology lesson, its recording, the topology words' FAIL rows,
``requires:`` on node names and CPUs, and a fleet file's per-pool labels and taints on real nodes.

The passing scenario of the words is tests/scenarios/words-topology.yaml (run by test_runbooks_on_kai.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from kailab.fleet import Fleet, Pool, create_fleet, node_objects

SCENARIOS = Path(__file__).parent.parent / "scenarios"


def run(kai_lab, *args: str) -> tuple[int, dict]:
    proc = kai_lab.cli(*args, "--json")
    return proc.returncode, json.loads(proc.stdout or "{}")


def test_the_topology_lesson_passes_on_kai_and_replays_to_the_same_verdict(kai_lab, tmp_path):
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario
    from kailab.scenarios.replay import replay

    code, result = run(kai_lab, "demo", "topology", "--record", str(tmp_path))
    (verdict,) = result["verdicts"]
    failed = [
        f"{c['title']}: {c['observed']} / {' / '.join(c['detail'])}" for c in verdict["checks"] if not c["passed"]
    ]
    assert code == 0 and verdict["outcome"] == "PASS", failed or verdict
    rows = {c["title"]: c for c in verdict["checks"]}
    assert rows["... spread over more than one rack"]["observed"].startswith("3 bound pods on 2 values: ")
    assert rows["... all in one rack"]["observed"] == "3 bound pods on 1 value: rack-a1"
    again = replay(load_scenario(EXERCISES / "topology.yaml"), tmp_path / "topology")
    assert [(c.title, c.observed, c.passed) for c in again.checks] == [
        (c["title"], c["observed"], c["passed"]) for c in verdict["checks"]
    ]


def test_every_topology_condition_word_can_report_fail(kai_lab):
    code, result = run(kai_lab, "run", str(SCENARIOS / "fail" / "words-topology-fail.yaml"))
    (verdict,) = result["verdicts"]
    assert code == 1 and verdict["outcome"] == "FAIL" and not verdict["error"]
    rows = {c["title"]: c for c in verdict["checks"]}
    assert sorted(rows) == [
        "domains (one zone, not two)",
        "domains (two racks, not one)",
    ]
    assert [t for t, c in rows.items() if c["passed"]] == []
    assert rows["domains (two racks, not one)"]["observed"] == "2 bound pods on 2 values: rack-a1, rack-b1"
    assert rows["domains (one zone, not two)"]["observed"] == "1 bound pod on 1 value: zone-a"


def test_requires_on_node_names_cpus_and_labels_says_not_applicable(kai_lab, tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(
        "name: t-needs-nodes\nrequires: {nodeNames: [kwok-b200-0], cpusPerNode: '>=1000', nodeLabels: [example.com/row]}\n"
        "workloads: [{name: w}]\nsteps: [{apply: w}, {expect: {workload: w, bound: 1}}]\n"
    )
    code, result = run(kai_lab, "run", str(path))
    (verdict,) = result["verdicts"]
    assert code == 0 and verdict["outcome"] == "NOT APPLICABLE" and not verdict["checks"]
    said = verdict["not_applicable"]
    assert "it needs the nodes kwok-b200-0, which the fleet does not have" in said
    assert "it needs ≥ 1000 CPUs on every node, the fleet's nodes have 128" in said
    assert "it needs the label example.com/row on every GPU node, 5 have none" in said
    assert kai_lab.kube.get("v1", "Namespace", "kailab-t-needs-nodes") is None


def test_a_pools_labels_and_taint_are_on_its_nodes_and_kai_keeps_off_the_tainted_one(kai_lab, tmp_path):
    """A pool of one node with a label and a taint, added to the lab: a pod pinned to it (tolerating KWOK's taint
    only) waits, and KAI's reason says the node has a taint it does not tolerate."""
    kube = kai_lab.kube
    pool = Pool(
        "tainted",
        1,
        8,
        "NVIDIA-A100-SXM4-80GB",
        81920,
        labels=(("topology.kailab.io/rack", "rack-t"),),
        taints=({"key": "example.com/reserved", "value": "infra", "effect": "NoSchedule"},),
    )
    nodes = node_objects(Fleet((pool,)), prefix="t")
    name = nodes[0]["metadata"]["name"]
    scenario = tmp_path / "tainted.yaml"
    scenario.write_text(
        f"name: t-tainted\nworkloads: [{{name: w, kind: Pod, node: {name}}}]\n"
        "steps: [{apply: w}, {expect: {workload: w, bound: 0, reason: 'had untolerated taint', stable: 3s}}]\n"
    )
    try:
        create_fleet(kube, Fleet((pool,)), nodes=nodes)
        node = kube.core.read_node(name)
        assert node.metadata.labels["topology.kailab.io/rack"] == "rack-t"
        taints = [(t.key, t.value, t.effect) for t in node.spec.taints]  # (and Kubernetes' own for a while)
        assert taints[:2] == [
            ("kwok.x-k8s.io/node", "fake", "NoSchedule"),
            ("example.com/reserved", "infra", "NoSchedule"),
        ]
        code, result = run(kai_lab, "run", str(scenario))
        (verdict,) = result["verdicts"]
        assert code == 0 and verdict["outcome"] == "PASS", (verdict["checks"], verdict["error"])
    finally:
        kube.delete("v1", "Node", name)
