"""Every runbook's failure, reproduced on the real KAI: what KAI reports is what the runbook says.

The scenarios in tests/scenarios/ pin down single behaviours of kailab's manifests on the real KAI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kailab.paths import RUNBOOKS

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
