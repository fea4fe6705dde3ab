"""A joined learner's read-only commands on the real KAI (local runtime): with nothing but their class kubeconfig,
``watch --once``, ``explain`` and ``evidence`` work on their slice, say whose slice it is first, and show nothing
of another learner's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kailab import partitions
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
    finally:
        kai_lab.cli("class", "down", check=True)
