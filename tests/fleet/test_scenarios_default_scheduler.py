"""The scenario engine against a real scheduler (kube-scheduler): PASS when it holds, FAIL when it does not."""

from __future__ import annotations

import json

from kailab.paths import EXERCISES

WRONG = (
    (EXERCISES / "baseline.yaml")
    .read_text()
    .replace(
        'title: "training: pods bound although the gang is incomplete"\n        bound: 8',
        'title: "training: all 10 bound (wrong on purpose)"\n        bound: 10',
    )
    .replace("name: baseline", "name: baseline-wrong")
)


def test_baseline_gang_deadlock_with_the_default_scheduler(lab):
    proc = lab.cli("demo", "baseline", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    (verdict,) = result["verdicts"]
    assert verdict["passed"]
    observed = {c["title"]: c["observed"] for c in verdict["checks"]}
    assert observed["training: pods bound although the gang is incomplete"] == "8"
    assert observed["training: pods left Pending, holding nothing"] == "2"


def test_engine_reports_fail_when_an_expectation_does_not_hold(lab, tmp_path):
    path = tmp_path / "wrong.yaml"
    path.write_text(WRONG.replace("stable: 3s\n", "stable: 1s\n"))
    proc = lab.cli("run", str(path), "--json")
    assert proc.returncode == 1
    (verdict,) = json.loads(proc.stdout)["verdicts"]
    assert not verdict["passed"]
    wrong = next(c for c in verdict["checks"] if c["title"].startswith("training: all 10"))
    assert (wrong["expected"], wrong["observed"], wrong["passed"]) == ("10", "8", False)
    # The output names the pods still Pending and the scheduler's reason for each.
    assert any("Pending" in d and "nvidia.com/gpu" in d for d in wrong["detail"])


def test_malformed_scenario_fails_before_anything_is_applied(lab, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nworkloads:\n  - name: w\n    pods: many\nsteps:\n  - apply: w\n")
    proc = lab.cli("run", str(path))
    assert proc.returncode == 1
    assert f"{path}:4:" in proc.stderr and "Traceback" not in proc.stderr
    assert lab.kube.get("v1", "Namespace", "kailab-bad") is None
