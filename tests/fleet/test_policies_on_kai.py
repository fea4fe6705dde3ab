"""KAI's per-workload policies on the real KAI: the three lessons, and each new word saying FAIL when it should.

The passing scenario of the words is tests/scenarios/words-policies.yaml (run by test_runbooks_on_kai.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FAIL = Path(__file__).parent.parent / "scenarios" / "fail" / "words-policies-fail.yaml"


def verdict_of(kai_lab, *args: str) -> tuple[int, dict]:
    proc = kai_lab.cli(*args, "--json")
    (verdict,) = json.loads(proc.stdout or "{}").get("verdicts") or [{}]
    return proc.returncode, verdict


def failed_rows(verdict: dict) -> list[str]:
    return [
        f"{c['title']}: expected {c['expected']}, observed {c['observed']}"
        for c in verdict["checks"]
        if not c["passed"]
    ]


@pytest.mark.parametrize("name", ["preempt-delay", "elastic", "staleness"])
def test_policy_lesson_passes_on_kai(kai_lab, name):
    code, verdict = verdict_of(kai_lab, "demo", name)
    assert code == 0 and verdict["outcome"] == "PASS", failed_rows(verdict) or verdict.get("error")
    rows = {c["title"]: c for c in verdict["checks"]}
    if name == "preempt-delay":
        said = rows["inside the window: KAI gives the reason PreemptionDelayNotElapsed"]["observed"]
        assert said.startswith("PreemptionDelayNotElapsed: Workload is within its preemption delay window (20s)")
    if name in ("preempt-delay", "staleness"):
        # the bounds on when KAI acted: each a row of its own, with the second it first held
        bounded = [c for c in verdict["checks"] if c["measure"] in ("notBefore", "within")]
        assert len(bounded) == 2 and all(c["detail"][0].startswith("first held") for c in bounded)


def test_every_policy_word_can_report_fail(kai_lab):
    code, verdict = verdict_of(kai_lab, "run", str(FAIL))
    assert code == 1 and verdict["outcome"] == "FAIL" and not verdict["error"]
    rows = {c["title"]: c for c in verdict["checks"]}
    wrong = [
        "podGroupReason (none given)",
        "podGroupAnnotation (never evicted)",
        "queueExists (it does)",
        "queueAllocated (2 GPUs)",
        "onNodeWith (other nodes)",
        "anyOf (neither)",
        "notBefore (at once), no earlier than 5s after the last step",
        "within (it completes after 4 s), within 1s after the last step",
    ]
    assert set(wrong) <= set(rows), sorted(rows)
    wrongly_passed = [t for t in wrong if rows[t]["passed"]]
    assert not wrongly_passed, wrongly_passed
    assert rows["queueAllocated (2 GPUs)"]["observed"] == "2"  # KAI's queue controller wrote it in status.allocated
    assert rows["queueExists (it does)"]["observed"] == "true"
    assert rows["onNodeWith (other nodes)"]["observed"].startswith("no node in common")
    assert rows["notBefore (at once), no earlier than 5s after the last step"]["observed"].startswith("already after")
    assert rows["within (it completes after 4 s), within 1s after the last step"]["observed"].startswith("only after")
    # the rows that are right stay right: each measure's own row, apart from its bound
    assert rows["notBefore (at once)"]["passed"] and rows["within (it completes after 4 s)"]["passed"]
