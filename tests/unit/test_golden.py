"""Golden tests: each lesson's change stream, recorded once on the real KAI, replayed → the verdict on file.

A change in what a check means shows here as a diff of verdict.json; refresh on purpose with
``python tests/golden/update.py`` (see its docstring for recording new streams).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kailab.lesson import EXERCISE_NAMES, scenario_file, variation_names
from kailab.paths import EXERCISES
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.model import Expect
from kailab.scenarios.replay import ReplayCluster, golden, read_changes, replay
from kailab.scenarios.values import Bound

GOLDEN = Path(__file__).parent.parent / "golden"
RECORDED = sorted(p.name for p in GOLDEN.iterdir() if (p / "verdict.json").exists())


def test_every_lesson_and_variation_has_a_recorded_stream():
    assert RECORDED == sorted([*EXERCISE_NAMES, *variation_names()])


@pytest.mark.parametrize("name", RECORDED)
def test_replay_gives_the_golden_verdict(name):
    verdict = replay(load_scenario(scenario_file(name)), GOLDEN / name)
    assert golden(verdict) == json.loads((GOLDEN / name / "verdict.json").read_text())


def test_a_wrong_expectation_fails_on_the_same_stream():
    """The reclaim stream with 'team-research gets 9 back' instead of 8 (never true): the replay must say FAIL, with stragglers."""
    s = load_scenario(EXERCISES / "reclaim.yaml")
    steps = list(s.steps)
    i, step = next((i, st) for i, st in enumerate(steps) if isinstance(st, Expect))
    first = dataclasses.replace(step.expectations[0], want="9", bound=Bound.parse("9"))
    steps[i] = dataclasses.replace(step, expectations=(first, *step.expectations[1:]))
    verdict = replay(dataclasses.replace(s, steps=tuple(steps)), GOLDEN / "reclaim")
    row = verdict.checks[0]
    # Waiting for 9, the replay runs to the stream's end, where team-research holds its fair share of 16.
    final = next(c for c in replay(s, GOLDEN / "reclaim").checks if c.title.startswith("team-research grows"))
    assert not verdict.passed and not row.passed and row.expected == "9" and row.observed == final.observed == "16"
    assert row.detail[0] == f"expectation at {EXERCISES / 'reclaim.yaml'}:{first.line}" and first.line > 1
    assert row.detail[1:]  # where the pods are


def test_replay_applies_what_the_live_run_applied():
    s = load_scenario(EXERCISES / "reclaim.yaml")
    cluster = ReplayCluster(read_changes(GOLDEN / "reclaim" / "changes.jsonl"))
    from kailab.progress import Progress
    from kailab.scenarios.engine import Engine

    Engine(cluster, Progress(quiet=True)).run(s)
    applied = [what for verb, what in cluster.calls if verb == "apply"]
    assert "Job/prod-train" in applied and "Job/research-train" in applied
    assert applied.index("Job/prod-train") < applied.index("Job/research-train")


def test_a_malformed_recording_names_its_file_and_line(tmp_path):
    bad = tmp_path / "changes.jsonl"
    bad.write_text('{"t": 0, "type": "ADDED", "pod": {"name": "a"}}\n{"t": 1, "type": "ADDED", "pod": {"nme": "b"}}\n')
    with pytest.raises(ValueError, match=r"changes.jsonl:2: not a recorded change"):
        read_changes(bad)
