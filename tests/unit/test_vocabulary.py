"""One scenario vocabulary: every declared word is documented in exercises/README.md, every documented word is
declared, and every declared measure has exactly one check."""

from __future__ import annotations

import re

import yaml

from kailab import checks
from kailab.paths import EXERCISES
from kailab.scenarios import measures, objects, schema, steps
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.model import Expectation, Prediction, Step

README = (EXERCISES / "README.md").read_text()
STEP_EXTRAS = {"timeout", "note"}  # what every step may have beside its word
SCOPES = set(measures._Condition.model_fields)  # what every condition may have beside its measures
PREDICTION_EXTRAS = set(schema._Prediction.model_fields)  # what every prediction has beside its kind


def documented() -> dict[str, set[str]]:
    """The words exercises/README.md shows: in its YAML examples, and in its table of measures."""
    steps, workloads, measures, predictions = set(), set(), set(), set()
    for block in re.findall(r"```yaml\n(.*?)```", README, re.S):
        data = yaml.safe_load(block)
        for w in data.get("workloads", []):
            workloads |= set(w)
        for p in data.get("predictions", []):
            predictions |= set(p) - PREDICTION_EXTRAS
        for step in data.get("steps", []):
            steps |= set(step) - STEP_EXTRAS
            for word in ("wait", "expect"):
                for cond in step.get(word) if isinstance(step.get(word), list) else [step.get(word)]:
                    for alternative in (cond or {}).get("anyOf", [cond]):  # an either-or claim: its conditions'
                        measures |= set(alternative or {}) - SCOPES
    table = README.split("| measure | meaning |", 1)[1].split("\n\n", 1)[0]
    for row in table.splitlines()[2:]:
        measures |= set(re.findall(r"`(\w+)(?::[^`]*)?`", row.split(" | ")[0]))
    return {"steps": steps, "workload keys": workloads, "measures": measures, "prediction kinds": predictions}


def declared() -> dict[str, set[str]]:
    return {
        "steps": {s.word for s in steps.STEPS},
        "workload keys": set(objects.WorkloadFile.model_fields),
        "measures": set(measures.MEASURE_OF_KEY),
        "prediction kinds": set(schema.PREDICTION_OF),
    }


def test_every_declared_word_is_documented_and_every_documented_word_declared():
    docs, words = documented(), declared()
    for kind in words:
        assert words[kind] - docs[kind] == set(), f"{kind} declared but not in exercises/README.md"
        assert docs[kind] - words[kind] == set(), f"{kind} in exercises/README.md but not declared in kailab/scenarios/"


def test_the_readme_parser_sees_words_at_all():
    """The check above would pass on nothing: the parser must find the words it compares."""
    docs = documented()
    assert {"apply", "deletePods", "schedulerConfig"} <= docs["steps"]
    assert {"minMember", "subGroups", "labels"} <= docs["workload keys"]
    assert {"running", "fairShare", "noSchedulingCondition", "gpus"} <= docs["measures"]
    assert {"number", "choice"} <= docs["prediction kinds"]


def test_every_prediction_kind_is_measured():
    from kailab.predictions import measure

    for word in schema.PREDICTIONS:
        kind = next(c for c in _prediction_kinds() if c.word == word.word)
        assert measure.dispatch(kind) is not measure.dispatch(Prediction), f"no measure for {word.word}"


def _prediction_kinds():
    from kailab.scenarios import model

    return [
        c for c in vars(model).values() if isinstance(c, type) and issubclass(c, Prediction) and c is not Prediction
    ]


def test_every_measure_has_one_check():
    counted = set(checks.COUNTERS) | set(checks.OBSERVED_COUNTS)
    assert counted.isdisjoint(checks.PROPERTIES)
    assert counted | set(checks.PROPERTIES) == {m.name for m in measures.MEASURES}


def test_every_step_word_has_a_player():
    from kailab.scenarios.engine import Engine

    dispatcher = Engine.__dict__["play"].dispatcher  # the singledispatchmethod's
    for word in steps.STEPS:
        kind = type(word.build(_sample(word.word), _Stub()))
        assert dispatcher.dispatch(kind) is not dispatcher.dispatch(Step), f"no player for {word.word}"


class _Stub:
    common = {"line": 1}

    def fail(self, message, *loc):
        return AssertionError(message)

    def workload(self, name, *loc):
        return objects.WorkloadFile(name=name, kind="Deployment")

    def queue(self, q):
        return q

    def conditions(self):
        return (Expectation("t", "pods", "1"),)


def _sample(word: str):
    value = {
        "apply": "w",
        "delete": "w",
        "scale": steps.ScaleFile(workload="w", pods=1),
        "queue": objects.QueueFile(name="q"),
        "sleep": 1.0,
        "deletePods": steps.DeletePodsFile(node="n"),
        "deleteWorkloads": steps.OnNodeFile(node="n"),
        "schedulerConfig": steps.SchedulerSettings(),
    }
    return value.get(word, True)


def test_titles_come_from_the_declaration(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nworkloads: [{name: w}]\nsteps:\n  - apply: w\n"
        "  - expect: {workload: w, running: 1, gpus: '0.5', placement: oneNode}\n"
    )
    rows = load_scenario(path).expectations
    assert [(e.measure, e.title, e.line) for e in rows] == [
        ("running", "w: pods Running", 5),
        ("allocated", "w: GPUs allocated", 5),
        ("placement", "w: pods all on one node", 5),
    ]


def test_every_scheduler_setting_is_documented():
    """A ``schedulerConfig:`` key is a SchedulerSettings field in camelCase: each is named in exercises/README.md."""
    from dataclasses import fields

    from pydantic.alias_generators import to_camel

    from kailab.scheduler_settings import SchedulerSettings

    words = {to_camel(f.name) for f in fields(SchedulerSettings)}
    assert "usageParams" in words and "kValue" in words
    assert [w for w in sorted(words) if w not in README] == []
