"""Scenario words on the real KAI that a passing scenario cannot show: FAIL rows, "not applicable", cleanup.

The passing scenarios of each word are in tests/scenarios/ (run by test_runbooks_on_kai.py).
"""

from __future__ import annotations

import json
from pathlib import Path

FAIL = Path(__file__).parent.parent / "scenarios" / "fail" / "words-fail.yaml"


def run(kai_lab, path: Path) -> tuple[int, dict]:
    proc = kai_lab.cli("run", str(path), "--json")
    return proc.returncode, json.loads(proc.stdout or "{}")


def test_every_new_word_can_report_fail(kai_lab):
    code, result = run(kai_lab, FAIL)
    (verdict,) = result["verdicts"]
    assert code == 1 and verdict["outcome"] == "FAIL" and not verdict["error"]
    rows = {c["title"]: c for c in verdict["checks"]}
    assert len(rows) == 12, sorted(rows)
    wrongly_passed = [t for t, c in rows.items() if c["passed"]]
    assert not wrongly_passed, wrongly_passed
    assert rows["pods (2 exist)"]["observed"] == "2"
    assert rows["podGroupField (train)"]["observed"] == "train, train"
    assert "allowable limit" in rows["notReason (it says so)"]["observed"]
    assert rows["fractionGpus (whole GPUs, no fractions)"]["observed"] == "0"
    assert float(rows["fairShare (it is far smaller)"]["observed"]) < 100  # a number KAI published


def test_a_scenario_that_does_not_fit_the_fleet_is_not_applicable(kai_lab, tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(
        "name: t-big\nrequires: {gpus: '>=1000', gpusPerNode: 8}\nworkloads: [{name: w}]\n"
        "steps: [{apply: w}, {expect: {workload: w, bound: 1}}]\n"
    )
    code, result = run(kai_lab, path)
    (verdict,) = result["verdicts"]
    assert code == 0 and verdict["outcome"] == "NOT APPLICABLE" and not verdict["checks"]
    assert "it needs ≥ 1000 GPUs, the fleet has 32" in verdict["not_applicable"]
    assert "the fleet's nodes have 4, 8" in verdict["not_applicable"]
    assert kai_lab.kube.get("v1", "Namespace", "kailab-t-big") is None  # nothing was applied


def test_the_next_scenario_removes_queues_and_classes_it_does_not_declare(kai_lab, tmp_path):
    kube = kai_lab.kube
    users = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "t-users-own"},
        "spec": {"resources": {"gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1}}},
    }
    kube.apply(users)  # not labelled as kailab's: never touched
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(
        "name: t-first\nqueues: [{name: t-only-first, gpu: {quota: 1}}]\n"
        "priorityClasses: [{name: t-first-class, value: 10}]\n"
        "workloads: [{name: w, queue: t-only-first, priorityClass: t-first-class}]\n"
        "steps: [{apply: w}, {expect: {workload: w, bound: 1}}]\n"
    )
    second.write_text(
        "name: t-second\nqueues: [{name: t-only-second, gpu: {quota: 1}}]\n"
        "workloads: [{name: w, queue: t-only-second}]\nsteps: [{apply: w}, {expect: {workload: w, bound: 1}}]\n"
    )
    try:
        assert run(kai_lab, first)[0] == 0
        assert kube.get("scheduling.run.ai/v2", "Queue", "t-only-first") is not None
        assert run(kai_lab, second)[0] == 0
        assert kube.get("scheduling.run.ai/v2", "Queue", "t-only-first") is None
        assert kube.get("scheduling.k8s.io/v1", "PriorityClass", "t-first-class") is None
        assert kube.get("scheduling.run.ai/v2", "Queue", "t-users-own") is not None
    finally:
        kube.delete("scheduling.run.ai/v2", "Queue", "t-users-own")
