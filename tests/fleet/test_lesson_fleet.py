"""kailab lesson, without prompts: it runs the exercise and records prediction and result for evidence."""

from __future__ import annotations

import json

from kailab.evidence import pending_verdicts


def _lesson_recorded(lab, name):
    before = len(pending_verdicts(lab.home))
    proc = lab.cli("lesson", name, "--yes")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "You predicted: (skipped: --yes)" in proc.stdout and "Why" in proc.stdout
    records = pending_verdicts(lab.home)
    assert len(records) == before + 1
    rec = records[-1]
    assert rec["scenario"] == name and rec["passed"] and rec["lesson"]["prediction"] == "(skipped: --yes)"
    return proc


def test_lesson_baseline_without_prompts(lab):
    _lesson_recorded(lab, "baseline")


def test_lesson_borrow_without_prompts(kai_lab, tmp_path):
    _lesson_recorded(kai_lab, "borrow")
    import os
    import subprocess
    import sys

    env = {**os.environ, "KAILAB_HOME": str(kai_lab.home)}
    subprocess.run([sys.executable, "-m", "kailab", "evidence"], env=env, cwd=tmp_path, check=True, capture_output=True)
    snap = sorted((tmp_path / "evidence").iterdir())[-1]
    verdicts = json.loads((snap / "verdicts.json").read_text())
    assert any(v.get("lesson", {}).get("prediction") == "(skipped: --yes)" for v in verdicts)
    assert "Lesson: predicted “(skipped: --yes)”" in (snap / "report.md").read_text()


def test_lesson_list(lab):
    out = lab.cli("lesson", check=True).stdout
    assert all(n in out for n in ("quota", "borrow", "reclaim", "gang", "priority", "baseline"))


def test_lesson_quota_shows_what_it_applies_and_passes_on_kai(kai_lab):
    """The quota lesson's contention (a higher-priority queue fills the fleet first) holds on the real KAI, and the
    lesson prints the lines KAI reads of what it applied."""
    out = " ".join(_lesson_recorded(kai_lab, "quota").stdout.split())
    assert "What kailab applies — the lines KAI reads" in out
    assert "kai.scheduler/queue: team-ops" in out and "priority: 200" in out and "schedulerName: kai-scheduler" in out


def test_lesson_reclaim_grades_predictions_against_what_kai_did(kai_lab):
    """``--predict`` answers without prompts; each answer is graded against the one measured in this run on the real
    KAI — both reclaim strategies in one story, the claimant stopping at its fair share."""
    before = len(pending_verdicts(kai_lab.home))
    proc = kai_lab.cli(
        "lesson", "reclaim", "--predict", "prod-gpus=1000", "--predict", "research-past-quota=fair-share-16", "--yes"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Your predictions against what KAI did" in proc.stdout and "What a fake fleet cannot show" in proc.stdout
    rec = pending_verdicts(kai_lab.home)[before]
    graded = {g["key"]: g for g in rec["lesson"]["predictions"]}
    checks = {c["title"]: c["observed"] for c in rec["checks"]}
    # Measured, not written down: team-prod's GPUs are what the verdict saw it run (1 GPU a pod) — never 1000.
    assert graded["prod-gpus"]["answer"] == checks["team-prod reclaimed down to its fair share"]
    assert graded["prod-gpus"]["mark"] == "wrong" and graded["prod-gpus"]["given"] == "1000"
    assert (
        graded["research-past-quota"]["answer"] == "fair-share-16" and graded["research-past-quota"]["mark"] == "right"
    )
    assert graded["prod-evicted"]["mark"] == "not graded"  # not answered
    assert rec["lesson"]["right"] == "1 of 2 right"
    assert rec["answers"]["prod-gpus"]["shown"] == graded["prod-gpus"]["answer"]


def test_the_quota_lessons_variation_holds_on_kai_and_replays_to_the_same_verdict(kai_lab, tmp_path):
    """exercises/variations/quota-zero.yaml, the quota lesson's "what if the teams' quotas were 0?": nothing while
    their parent's quota is 0 too, 8 each once it is 16 — on the real KAI, and its recording replays the same."""
    from kailab.lesson import scenario_file
    from kailab.scenarios.loader import load_scenario
    from kailab.scenarios.replay import replay

    proc = kai_lab.cli("demo", "quota-zero", "--json", "--record", str(tmp_path))
    (verdict,) = json.loads(proc.stdout or "{}")["verdicts"]
    rows = {c["title"]: c for c in verdict["checks"]}
    assert proc.returncode == 0 and verdict["passed"], [(t, c["expected"], c["observed"]) for t, c in rows.items()]
    assert rows["every quota 0 but gang-demo's: team-research runs nothing (running)"]["observed"] == "0"
    assert rows["ai-factory's quota 16, the teams' still 0: team-research runs 8"]["observed"] == "8"
    again = replay(load_scenario(scenario_file("quota-zero")), tmp_path / "quota-zero")
    assert [(c.title, c.observed, c.passed) for c in again.checks] == [
        (c["title"], c["observed"], c["passed"]) for c in verdict["checks"]
    ]
