"""Evidence on the local runtime, from an exercise run by a real scheduler."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from PIL import Image


def kailab_in(lab, cwd, *args):
    env = {**os.environ, "KAILAB_HOME": str(lab.home)}
    return subprocess.run(
        [sys.executable, "-m", "kailab", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def snapshots(cwd):
    root = cwd / "evidence"
    return sorted(p for p in root.iterdir()) if root.exists() else []


def test_demo_with_evidence_captures_real_objects_and_a_matching_report(lab, tmp_path):
    proc = kailab_in(lab, tmp_path, "demo", "baseline", "--evidence", "--json")
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # --json output stays clean JSON
    snap = snapshots(tmp_path)[-1]
    assert not [p for p in (tmp_path / "evidence").iterdir() if p.name.startswith(".")], "partial folder left"
    verdicts = json.loads((snap / "verdicts.json").read_text())
    (v,) = [v for v in verdicts if v["scenario"] == "baseline"]
    pods = (snap / "pods.txt").read_text()
    assert pods.count("kailab-baseline | training-") == 10 and pods.count("kailab-baseline | filler-") == 24
    assert "kind: Job" in (snap / "manifests.yaml").read_text()
    report = (snap / "report.md").read_text()
    for c in v["checks"]:
        assert f"| {c['title']} | {c['expected']} | {c['observed']} | {'PASS' if c['passed'] else 'FAIL'} |" in report
    series = json.loads((snap / "timeline.json").read_text())["baseline"]
    assert {q for _, point in series for q in point} == {"(no queue)"}  # the default scheduler: no KAI queue
    assert max(point.get("(no queue)", 0) for _, point in series) == 32
    with Image.open(snap / "timeline.png") as img:
        assert img.format == "PNG"


def test_second_capture_is_a_new_folder(lab, tmp_path):
    assert kailab_in(lab, tmp_path, "demo", "baseline", "-q").returncode == 0
    assert kailab_in(lab, tmp_path, "evidence").returncode == 0
    assert kailab_in(lab, tmp_path, "evidence").returncode == 0
    first, second = snapshots(tmp_path)
    assert first != second and (first / "report.md").exists() and (second / "report.md").exists()
    assert json.loads((second / "verdicts.json").read_text()) == []  # verdicts go to the capture after their run


def test_nothing_deployed_says_so(lab, tmp_path):
    from kailab.scenarios.live import clear_scenarios

    clear_scenarios(lab.kube)
    kailab_in(lab, tmp_path, "evidence")  # takes any verdicts still pending
    proc = kailab_in(lab, tmp_path, "evidence")
    assert proc.returncode == 1 and "No exercise is deployed" in proc.stderr
    assert len(snapshots(tmp_path)) <= 1
