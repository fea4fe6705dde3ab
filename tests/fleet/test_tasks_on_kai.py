"""Every task and challenge on the real KAI: the starting file, unchanged, FAILs its hidden check; the instructor's
solution (instructor/solutions/) PASSes it. One lab for them all: each run clears the one before. And a class
learner, with only her kubeconfig, sets, fails and solves a challenge in her slice, which class status shows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kailab import tasks
from kailab.lesson import EXERCISE_NAMES
from kailab.scenarios.objects import OPERATED_KINDS

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

SOLUTIONS = Path(__file__).resolve().parents[2] / "instructor" / "solutions"
ALL = [t for n in EXERCISE_NAMES for t in tasks.lesson_tasks(n)] + tasks.challenges()
OUTCOME = re.compile(r"— (PASS|FAIL|NOT APPLICABLE)")


def _args(task: tasks.Task, file: Path) -> list[str]:
    if task.kind == "task":
        return ["lesson", task.lesson, "--task", task.name.rpartition("-")[2], "--file", str(file)]
    return ["challenge", task.name, "--file", str(file)]


def _outcome(proc) -> str:
    found = OUTCOME.findall(proc.stdout)
    return found[-1] if found else f"no verdict (exit {proc.returncode}): {proc.stderr[-1500:]}"


@pytest.mark.parametrize("task", ALL, ids=[t.id for t in ALL])
def test_unchanged_fails_and_solution_passes(kai_lab, tmp_path, task, request):
    if any(f"kind: {kind}" in task.start for kind in OPERATED_KINDS):  # its lesson starts an operator: built
        request.getfixturevalue("operators_built")  # first, on the machine's network
    start = task.copy_path(tmp_path)
    assert tasks.give(task, start)
    unchanged = kai_lab.cli(*_args(task, start))
    assert (unchanged.returncode, _outcome(unchanged)) == (1, "FAIL"), unchanged.stdout[-3000:]
    # It failed on the hidden check: not on an API error, nor on a wait of the file's own (a "wait: …" row).
    assert "Error:" not in unchanged.stdout and "wait: " not in unchanged.stdout, unchanged.stdout[-3000:]

    solution = kai_lab.cli(*_args(task, SOLUTIONS / f"{task.kind}s" / f"{task.name}.yaml"))
    assert (solution.returncode, _outcome(solution)) == (0, "PASS"), solution.stdout[-3000:] + solution.stderr[-1500:]


def test_a_joined_learner_sets_fails_and_solves_a_challenge_and_the_instructor_sees_it(kai_lab, tmp_path):
    out, home = tmp_path / "creds", tmp_path / "ann-machine"  # no lab on ann's machine: only her kubeconfig
    kai_lab.cli("class", "up", "--learner", "ann", "--out", str(out), check=True)
    try:

        def ann(*args: str) -> subprocess.CompletedProcess:
            env = {**os.environ, "KAILAB_HOME": str(home)}
            command = [sys.executable, "-m", "kailab", *args]
            return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)

        assert ann("join", str(out / "ann.kubeconfig")).returncode == 0
        given = ann("challenge", "ticket-3")
        assert given.returncode == 0 and (tmp_path / "kailab-tasks" / "challenge-ticket-3.yaml").is_file(), given
        assert "ticket-3" in ann("challenge").stdout  # the class's challenges, from the cluster
        # Her copy, unchanged, then solved: each handed in, graded on the instructor's side (classroom/grading.py)
        broken = ann("challenge", "ticket-3")
        assert broken.returncode == 0 and "Handed in" in broken.stdout, broken.stdout[-3000:] + broken.stderr[-1500:]
        report = json.loads(kai_lab.cli("class", "status", "--json", check=True).stdout)
        assert report["ann"]["tasks"]["challenge-ticket-3"]["outcome"] == "FAIL", report["ann"]["tasks"]

        fixed = ann("challenge", "ticket-3", "--file", str(SOLUTIONS / "challenges" / "ticket-3.yaml"))
        assert fixed.returncode == 0 and "Handed in" in fixed.stdout, fixed.stdout[-3000:] + fixed.stderr[-1500:]
        # It ran in her slice: her queue, her namespace, her nodes.
        pods = kai_lab.kube.core.list_namespaced_pod("ann-kailab-challenge").items
        assert pods and all((p.spec.node_name or "").startswith("ann-kwok-") for p in pods)
        report = json.loads(kai_lab.cli("class", "status", "--json", check=True).stdout)
        assert report["ann"]["tasks"]["challenge-ticket-3"]["outcome"] == "PASS", report["ann"]["tasks"]
    finally:
        kai_lab.cli("class", "down", check=True)
