"""Graded predictions: each kind's answer measured from what the cluster shows, learners' answers read and graded,
scenario files checked, and the answers measured on the recorded KAI runs (the golden streams)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kailab.checks import Observation, PodView, count, evaluate
from kailab.errors import ScenarioError
from kailab.lesson import EXERCISE_NAMES
from kailab.paths import EXERCISES
from kailab.predictions import PredictionError, given_options, graded, measure, parse, tally
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.model import NOTHING, ChoicePrediction, NumberPrediction, WhichPrediction
from kailab.scenarios.replay import replay

GOLDEN = Path(__file__).parent.parent / "golden"

SCENARIO = """\
name: tiny
queues:
  - name: team-a
    gpu: {quota: 4}
workloads:
  - {name: keeper, queue: team-a, pods: 4}
  - {name: low, queue: team-a, pods: 4}
steps:
  - apply: keeper
  - apply: low
  - expect:
      - {workload: keeper, running: ">=0"}
    timeout: 5s
predictions:
  - key: a-gpus
    ask: "How many GPUs does team-a hold?"
    number: {queue: team-a, measure: allocated, tolerance: 1}
  - key: low-binds
    ask: "How many of low's pods bind?"
    choice:
      none: {workload: low, bound: 0}
      some: {workload: low, bound: "1..3"}
      all: {workload: low, bound: 4}
  - key: loser
    ask: "Which workload loses pods?"
    which: {measure: evicted}
"""


def load(tmp_path: Path, text: str = SCENARIO):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path)


def pods(workload: str, running: int, pending: int = 0) -> list[PodView]:
    out = [PodView(f"{workload}-r{i}", workload, "team-a", "Running", node="n1", gpus=1) for i in range(running)]
    return out + [PodView(f"{workload}-p{i}", workload, "team-a", "Pending") for i in range(pending)]


def by_key(scenario):
    return {p.key: p for p in scenario.predictions}


def test_a_number_is_the_count_kai_left(tmp_path):
    p = by_key(load(tmp_path))["a-gpus"]
    assert isinstance(p, NumberPrediction) and p.tolerance == 1
    obs = Observation(pods=pods("keeper", 4) + pods("low", 2, pending=2))
    answer = measure(p, obs)
    assert answer.right == (count(p.of, obs),) == (6,)
    [g] = graded((p,), {"a-gpus": 7}, {"a-gpus": answer.to_dict()})
    assert g.right is True and g.given == "7"  # within the tolerance of 1
    [g] = graded((p,), {"a-gpus": 8}, {"a-gpus": answer.to_dict()})
    assert g.right is False and g.mark == "wrong" and g.answer == "6"


def test_a_number_measured_as_a_fair_share_is_not_graded_before_kai_publishes_one(tmp_path):
    text = SCENARIO.replace("measure: allocated, tolerance: 1", "measure: fairShare")
    p = by_key(load(tmp_path, text))["a-gpus"]
    assert measure(p, Observation()) is None
    assert measure(p, Observation(fair_share={"team-a": 5.5})).right == (5.5,)
    [g] = graded((p,), {"a-gpus": 5}, {})
    assert g.right is None and g.mark == "not graded"


def test_a_choice_is_right_when_its_conditions_hold(tmp_path):
    p = by_key(load(tmp_path))["low-binds"]
    assert isinstance(p, ChoicePrediction) and p.options == ("none", "some", "all")
    partial = Observation(pods=pods("low", 2, pending=2))
    assert measure(p, partial).right == ("some",)
    assert all(evaluate(e, partial).passed for e in dict(p.choices)["some"])
    answers = {"low-binds": measure(p, partial).to_dict()}
    assert [g.right for g in graded((p,), {"low-binds": "some"}, answers)] == [True]
    assert [g.right for g in graded((p,), {"low-binds": "all"}, answers)] == [False]
    assert measure(p, Observation(pods=pods("low", 4))).right == ("all",)


def test_which_names_the_workload_with_the_most_and_none_when_nothing_happened(tmp_path):
    p = by_key(load(tmp_path))["loser"]
    assert isinstance(p, WhichPrediction) and p.among == ("keeper", "low")  # default: every applied workload
    assert p.options == ("keeper", "low", NOTHING)
    quiet = Observation(pods=pods("keeper", 4) + pods("low", 4))
    assert measure(p, quiet).right == (NOTHING,)
    hit = Observation(pods=pods("keeper", 4) + pods("low", 1), evicted={"low": {"low-1", "low-2", "low-3"}})
    assert measure(p, hit).right == ("low",)
    answers = {"loser": measure(p, hit).to_dict()}
    assert [g.right for g in graded((p,), {"loser": "keeper"}, answers)] == [False]
    assert [g.right for g in graded((p,), {"loser": "low"}, answers)] == [True]


def test_answers_are_read_by_name_or_number_and_refused_otherwise(tmp_path):
    ps = by_key(load(tmp_path))
    assert parse(ps["a-gpus"], " 8 ") == 8 and parse(ps["a-gpus"], "2.5") == 2.5
    assert parse(ps["low-binds"], "ALL") == "all" and parse(ps["low-binds"], "2") == "some"
    for p, bad in [(ps["a-gpus"], "eight"), (ps["a-gpus"], "-1"), (ps["a-gpus"], "nan"), (ps["low-binds"], "4")]:
        with pytest.raises(ValueError):
            parse(p, bad)


def test_predict_options_are_checked_before_anything_runs(tmp_path):
    s = load(tmp_path)
    assert given_options(s.predictions, "tiny", "s.yaml", ["a-gpus=6", "loser=low"]) == {"a-gpus": 6, "loser": "low"}
    for items, said in [
        (["a-gpus"], "not KEY=VALUE"),
        (["nope=1"], "no prediction 'nope'"),
        (["a-gpus=1", "a-gpus=2"], "twice"),
        (["loser=nobody"], "loser"),
    ]:
        with pytest.raises(PredictionError, match=said):
            given_options(s.predictions, "tiny", "s.yaml", items)


def test_unanswered_predictions_are_not_graded_and_the_tally_counts_the_graded():
    marks = [{"right": True}, {"right": False}, {"right": None}]
    assert tally(marks) == "1 of 2 right" and tally([{"right": None}]) == ""


@pytest.mark.parametrize(
    "change, said",
    [
        ("key: loser", "key: a-gpus"),  # two predictions named alike
        ("which: {measure: evicted}", "which: {measure: evicted, among: [keeper, ghost]}"),
        ("    which: {measure: evicted}\n", "    which: {measure: evicted}\n    at: 2\n"),
        ("    which: {measure: evicted}\n", "    which: {measure: evicted}\n    number: {measure: running}\n"),
    ],
)
def test_a_wrong_prediction_is_refused_with_its_line(tmp_path, change, said):
    with pytest.raises(ScenarioError, match=r"s\.yaml:\d+"):
        load(tmp_path, SCENARIO.replace(change, said))


ASKING = [n for n in EXERCISE_NAMES if load_scenario(EXERCISES / f"{n}.yaml").predictions]


def test_every_lesson_asks_graded_predictions():
    assert ASKING == list(EXERCISE_NAMES), sorted(set(EXERCISE_NAMES) - set(ASKING))


@pytest.mark.parametrize("name", ASKING)
def test_each_lesson_measures_its_predictions_on_the_recorded_kai_run(name):
    """KAI's recorded run answers each of a lesson's graded questions: the answer is measured, not written in the
    file."""
    scenario = load_scenario(EXERCISES / f"{name}.yaml")
    verdict = replay(scenario, GOLDEN / name)
    assert set(verdict.answers) == {p.key for p in scenario.predictions}
    for p in scenario.predictions:
        assert verdict.answers[p.key]["right"], (name, p.key)
    golden = json.loads((GOLDEN / name / "verdict.json").read_text())
    assert golden["answers"] == verdict.answers


def test_graded_predictions_travel_in_the_lesson_record_to_class_status_and_its_page(tmp_path):
    """The learner's record (what ``kailab lesson`` keeps in the cluster) → ``class status`` → the class page."""
    from types import SimpleNamespace

    from kailab.checks import Verdict
    from kailab.classroom import report
    from kailab.classroom.records import class_status, class_view, record_object
    from kailab.partitions import owner

    s = load(tmp_path)
    p = by_key(s)["a-gpus"]
    obs = Observation(pods=pods("keeper", 4))
    marks = [
        g.to_dict() for g in graded(s.predictions, {"a-gpus": 9, "loser": "low"}, {"a-gpus": measure(p, obs).to_dict()})
    ]
    obj = record_object("ann", Verdict(scenario="tiny", title="t", namespace="ann-kailab-tiny"), "x", marks)
    assert obj["data"]["right"] == "0 of 1 right"  # a-gpus wrong (4, not 9); loser not measured; low-binds unanswered
    explained = []
    row = class_view(["ann"], [obj], {"ann": ["ann-kailab-tiny"]}, {}, lambda *a: explained.append(a) or [])
    row = row["ann"]["lessons"]["tiny"]
    assert explained == []  # no pod waits: nothing to explain
    meta = SimpleNamespace(**{k: obj["metadata"][k] for k in ("name", "namespace", "labels")})
    configmaps = SimpleNamespace(
        items=[SimpleNamespace(data=obj["data"], metadata=meta)], metadata=SimpleNamespace(_continue=None)
    )
    kube = SimpleNamespace(
        core=SimpleNamespace(
            list_config_map_for_all_namespaces=lambda label_selector, limit: configmaps,
            list_namespace=lambda label_selector: SimpleNamespace(
                items=[SimpleNamespace(metadata=SimpleNamespace(name="ann-kailab-tiny", labels=owner("ann").labels))]
            ),
        ),
        pods=lambda namespace=None: [],
    )
    assert class_status(kube, ["ann"])["ann"]["lessons"]["tiny"] == row  # the client's objects read as the page's JSON
    assert row["right"] == "0 of 1 right"
    assert [(g["key"], g["given"], g["answer"], g["mark"]) for g in row["predictions"]] == [
        ("a-gpus", "9", "4", "wrong"),
        ("low-binds", "", "", "not graded"),
        ("loser", "low", "", "not graded"),
    ]
    page = report.markdown(report.sections({"ann": {"lessons": {"tiny": row}, "stuck": []}}, ["tiny"])).splitlines()
    assert "| ann | tiny | a-gpus | 9 | 4 | wrong |" in page, page
    assert "| ann | tiny | loser | low | not measured | not graded |" in page
