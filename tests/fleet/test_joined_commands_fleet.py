"""A joined learner's commands on the real KAI (local runtime): with nothing but their class kubeconfig,
``watch --once``, ``explain`` and ``evidence`` work on their slice, say whose slice it is first, and show nothing
of another learner's; a task they hand in is graded on the instructor's side, from its recording, against checks
their credential cannot read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kailab import partitions
from kailab.classroom import grading
from kailab.kube import Kube
from kailab.labels import QUEUE_API

pytestmark = [pytest.mark.fleet, pytest.mark.kai]


def test_a_joined_learner_watches_explains_and_captures_evidence_of_their_slice(kai_lab, tmp_path):
    out = tmp_path / "creds"
    kai_lab.cli("class", "up", "--learner", "ann", "--learner", "bob", "--out", str(out), check=True)
    try:
        secret = {"name": "bob-secret-team", "labels": partitions.owner("bob").labels}
        kai_lab.kube.apply({"apiVersion": QUEUE_API, "kind": "Queue", "spec": {}, "metadata": secret})
        home = tmp_path / "ann-machine"  # no lab there: only the file

        def ann(*args: str) -> subprocess.CompletedProcess:
            command = [sys.executable, "-m", "kailab", *args]
            env = {**os.environ, "KAILAB_HOME": str(home)}
            return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)

        assert ann("join", str(out / "ann.kubeconfig")).returncode == 0
        run = ann("demo", "quota", "--json")
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["verdicts"][0]["outcome"] == "PASS"

        frame = ann("watch", "--once")
        assert frame.returncode == 0, frame.stderr
        assert frame.stderr.splitlines()[0].startswith("Learner ann:"), frame.stderr
        assert "ann-team-research" in frame.stdout and "ann-team-ops" in frame.stdout, frame.stdout
        assert "bob-secret-team" not in frame.stdout

        ns = "ann-kailab-quota"
        pods = [
            p.metadata.name
            for p in kai_lab.kube.core.list_namespaced_pod(ns).items
            if p.metadata.labels.get("kailab.io/workload") == "research-train"
        ]
        assert pods
        why = ann("explain", pods[0], "-n", ns, "--json")
        assert why.returncode == 0, why.stderr
        (explained,) = json.loads(why.stdout)
        assert explained["pod"].endswith(pods[0]) and explained["state"], explained
        refused = ann("explain", "anything", "-n", "bob-kailab-quota")
        assert refused.returncode != 0  # another learner's namespace: not ann's to read

        captured = ann("evidence", "--out", str(tmp_path / "ev"))
        assert captured.returncode == 0, captured.stderr
        assert captured.stderr.splitlines()[0].startswith("Learner ann:"), captured.stderr
        report = (tmp_path / "ev" / "report.md").read_text()
        assert "quota" in report and "bob-secret-team" not in report

        hands_in_a_task_graded_on_the_instructors_side(kai_lab, ann, out, tmp_path)
    finally:
        kai_lab.cli("class", "down", check=True)


SOLUTION = Path(__file__).parents[2] / "instructor" / "solutions" / "tasks" / "quota-1.yaml"


def hands_in_a_task_graded_on_the_instructors_side(kai_lab, ann, out: Path, tmp_path: Path) -> None:
    """quota-1 from the class (goal and starting file only), handed in as given (FAIL), then solved (PASS): the
    instructor's ``class status`` grades each recording; ann's credential reads no hidden check."""
    creds = Kube(out / "ann.kubeconfig")
    with pytest.raises(Exception) as refused:  # the hidden checks: a Secret no learner's role grants
        creds.core.read_namespaced_secret("quota-task-1", grading.NAMESPACE)
    assert getattr(refused.value, "status", None) == 403, refused.value
    with pytest.raises(Exception) as refused:
        creds.core.list_namespaced_secret(grading.NAMESPACE)
    assert getattr(refused.value, "status", None) == 403, refused.value
    part = creds.core.read_namespaced_config_map("quota-task-1", grading.NAMESPACE).data
    assert "research-train" in part["scenario"] and "expect" not in str(part) and "stable" not in str(part)

    first = ann("lesson", "quota", "--task", "1")
    assert first.returncode == 0, first.stderr
    copy = tmp_path / "kailab-tasks" / "quota-task-1.yaml"
    assert "expect" not in copy.read_text() and "sleep" not in copy.read_text()

    def hand_in() -> dict:
        run = ann("lesson", "quota", "--task", "1")
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Handed in" in run.stdout, run.stdout
        status = kai_lab.cli("class", "status", check=True)
        assert "ann tasks (graded from their recordings): quota-task-1" in status.stdout, status.stdout
        report = json.loads(kai_lab.cli("class", "status", "--json", check=True).stdout)
        keep_recording(kai_lab, copy)
        return report["ann"]["tasks"]["quota-task-1"]

    graded = hand_in()  # the starting file as given: team-research's pods wait behind team-ops
    assert graded["outcome"] == "FAIL", graded
    assert any(not c["passed"] and "team-research" in c["title"] for c in graded["checks"]), graded
    shutil.copyfile(SOLUTION, copy)
    graded = hand_in()
    assert graded["outcome"] == "PASS", graded
    assert graded["checks"][0]["title"].startswith("team-research runs all 8 of its pods"), graded


def keep_recording(kai_lab, copy: Path) -> None:
    """With KAILAB_TASK_RECORDINGS=DIR: the handed-in file and stream kept as DIR/<outcome>/ for the unit tests'
    recordings (tests/golden/tasks/)."""
    import base64
    import gzip
    import os

    folder = os.environ.get("KAILAB_TASK_RECORDINGS")
    if not folder:
        return
    cm = kai_lab.kube.core.read_namespaced_config_map("kailab-record-quota-task-1", "ann-kailab-quota")
    name = "solved" if copy.read_text() == SOLUTION.read_text() else "as-given"
    dest = Path(folder) / f"quota-1-{name}"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "ann.yaml").write_text(cm.data[grading.FILE_KEY])
    (dest / "changes.jsonl").write_bytes(gzip.decompress(base64.b64decode(cm.binary_data[grading.CHANGES_KEY])))
