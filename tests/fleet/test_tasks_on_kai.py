"""Every task and challenge on the real KAI: the starting file, unchanged, FAILs its hidden check; the instructor's
solution (docs/instructor/solutions/) PASSes it. One lab for them all: each run clears the one before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kailab import tasks
from kailab.lesson import EXERCISE_NAMES

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

SOLUTIONS = Path(__file__).resolve().parents[2] / "docs" / "instructor" / "solutions"
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
def test_unchanged_fails_and_solution_passes(kai_lab, tmp_path, task):
    start = task.copy_path(tmp_path)
    assert tasks.give(task, start)
    unchanged = kai_lab.cli(*_args(task, start))
    assert (unchanged.returncode, _outcome(unchanged)) == (1, "FAIL"), unchanged.stdout[-3000:]

    solution = kai_lab.cli(*_args(task, SOLUTIONS / f"{task.kind}s" / f"{task.name}.yaml"))
    assert (solution.returncode, _outcome(solution)) == (0, "PASS"), solution.stdout[-3000:] + solution.stderr[-1500:]
