"""Every runbook's failure, reproduced on the real KAI: what KAI reports is what the runbook says, and what
`kailab explain` then says of the pods names that runbook.

The scenarios in tests/scenarios/ pin down single behaviours of kailab's manifests on the real KAI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
    "misspelt-priority-class": [("typo", "misspelt-priority-class"), ("label-typo", "misspelt-priority-class")],
    "preemption-policy-never": [("filler", "preemption-policy-never")],
    "gang-stuck": [("gang", "gang-not-binding")],
    "borrow-blocked": [("service", "borrowing-not-happening")],
    # the Job's pod made again after KAI evicted its stale gang (the bare pods are gone for good)
    "stale-gang": [("job-gang", "stale-gang")],
}
# Explained while it runs, below: once the scenario has ended its pod is bound.
DURING = "gpu-sharing-reservation"

SCENARIOS = sorted(p for p in (RUNBOOKS / "scenarios").glob("*.yaml") if p.stem != DURING) + sorted(
    (Path(__file__).parent.parent / "scenarios").glob("*.yaml")
)


def failures(result: dict) -> list[str]:
    return [
        f"{c['title']}: expected {c['expected']}, observed {c['observed']}; " + " / ".join(c["detail"])
        for v in result.get("verdicts", [])
        for c in v["checks"]
        if not c["passed"]
    ]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_holds_on_kai(kai_lab, path):
    proc = kai_lab.cli("run", str(path), "--json")
    failed = failures(json.loads(proc.stdout or "{}"))
    assert proc.returncode == 0 and not failed, "\n".join(failed) + proc.stderr[-2000:]
    namespace = load_scenario(path).namespace
    for workload, runbook in EXPLAINED.get(path.stem, []):
        found = json.loads(kai_lab.cli("explain", workload, "-n", namespace, "--json", check=True).stdout)
        named = {e["runbook"] for e in found}
        assert f"runbooks/{runbook}.md" in named, (workload, found)


def test_a_reservation_that_gets_no_gpu_is_explained_while_it_waits_and_after(kai_lab):
    """The scenario stops the lab's GPU ledger, so KAI's binder gives up on the fraction's reservation pod; while
    the pod waits (the scenario holds it there 15 s), `kailab explain` names the runbook; the scenario then starts
    the ledger, the pod binds, and explain still tells why it bound late. Nothing of the ledger is left stopped."""
    path = RUNBOOKS / "scenarios" / f"{DURING}.yaml"
    namespace = load_scenario(path).namespace
    env = {**os.environ, "KAILAB_HOME": str(kai_lab.home)}
    run = subprocess.Popen(
        [sys.executable, "-m", "kailab", "run", str(path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    seen: list[dict] = []
    try:
        while run.poll() is None:
            proc = kai_lab.cli("explain", "half", "-n", namespace, "--json")
            found = json.loads(proc.stdout) if proc.returncode == 0 else []
            if any(e["state"] == "Pending" and "gpu-sharing-reservation" in e["runbook"] for e in found):
                seen = found
                break
            time.sleep(1)
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    failed = failures(json.loads(out or "{}"))
    assert run.returncode == 0 and not failed, "\n".join(failed) + err[-2000:]
    assert seen, "kailab explain never named the runbook while the pod waited"
    (waiting,) = seen
    assert "failed waiting for GPU reservation pod to allocate" in waiting["reported"], waiting
    (bound,) = json.loads(kai_lab.cli("explain", "half", "-n", namespace, "--json", check=True).stdout)
    assert bound["state"] == "Bound" and bound["runbook"] == "runbooks/gpu-sharing-reservation.md", bound
    assert kai_lab.runtime.gpu_ledger_control().running()
