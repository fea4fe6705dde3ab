"""Every runbook's failure, reproduced on the real KAI: what KAI reports is what the runbook says, and what
`kailab explain` then says of the pods names that runbook.

The scenarios in tests/scenarios/ pin down single behaviours of kailab's manifests on the real KAI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kailab.paths import RUNBOOKS
from kailab.scenarios.loader import load_scenario

# scenario → (workload, the runbook `kailab explain` must name for its pods), read right after the run.
EXPLAINED = {
    "old-queue-label": [("old-label-serve", "old-queue-label"), ("old-label-train", "old-queue-label")],
    "node-pool-unserved": [("unserved", "node-pool-unserved")],
    "node-constraints": [
        ("wants-b200", "node-constraints"),
        ("wants-b200-pool", "node-constraints"),
        ("no-toleration", "node-constraints"),
    ],
    "scheduling-gate": [("gated", "scheduling-gate")],
    "too-big": [("sixteen", "too-big")],
    "misspelt-priority-class": [("typo", "misspelt-priority-class")],
    "preemption-policy-never": [("filler", "preemption-policy-never")],
}

SCENARIOS = sorted((RUNBOOKS / "scenarios").glob("*.yaml")) + sorted(
    (Path(__file__).parent.parent / "scenarios").glob("*.yaml")
)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_holds_on_kai(kai_lab, path):
    proc = kai_lab.cli("run", str(path), "--json")
    result = json.loads(proc.stdout or "{}")
    failed = [
        f"{c['title']}: expected {c['expected']}, observed {c['observed']}; " + " / ".join(c["detail"])
        for v in result.get("verdicts", [])
        for c in v["checks"]
        if not c["passed"]
    ]
    assert proc.returncode == 0 and not failed, "\n".join(failed) + proc.stderr[-2000:]
    namespace = load_scenario(path).namespace
    for workload, runbook in EXPLAINED.get(path.stem, []):
        found = json.loads(kai_lab.cli("explain", workload, "-n", namespace, "--json", check=True).stdout)
        named = {e["runbook"] for e in found}
        assert f"runbooks/{runbook}.md" in named, (workload, found)
