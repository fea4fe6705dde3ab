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
