"""What cannot mean anything is refused before anything is applied, with file:line (issue 27); what can, still loads.

The corpus in tests/badinput/scenarios has a case per category; these tests cover the other side of each rule
(the nearest input that must still load) and what only a cluster knows (its nodes).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kailab.errors import ScenarioError
from kailab.progress import Progress
from kailab.scenarios.engine import Engine
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.replay import ReplayCluster


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text",
    [
        # a condition about a workload applied later, or re-applied after a delete
        "name: s\nworkloads: [{name: w}]\nsteps: [{expect: {workload: w, pods: 0}}, {apply: w}]\n",
        "name: s\nworkloads: [{name: w, kind: Deployment}]\nsteps: [{apply: w}, {delete: w}, {apply: w}, "
        "{scale: {workload: w, pods: 2}}]\n",
        # quota equal to the limit; any quota under an unlimited limit
        "name: s\nqueues: [{name: q, gpu: {quota: 4, limit: 4}, cpu: {quota: 100, limit: -1}}]\n"
        "workloads: [{name: w, queue: q}]\nsteps: [{apply: w}]\n",
        # a leaf under a parent; a workload on the parent on purpose
        "name: s\nqueues: [{name: d}, {name: t, parent: d}]\nworkloads: [{name: w, queue: t}, {name: v, queue: d}]\n"
        "onParentQueue: [v]\nsteps: [{apply: w}, {apply: v}]\n",
        # the user's own labels and annotations; names right at the limit
        "name: s\nworkloads: [{name: w, labels: {team: vision, example.com/tier: gold}, annotations: {note: 'any text'}}]\n"
        "steps: [{apply: w}]\n",
        f"name: s\nworkloads: [{{name: {'a' * 60}, jobs: 100}}]\nsteps: [{{apply: {'a' * 60}}}]\n",
        # whole counts with decimals; GPUs may have a fraction; an hour exactly
        "name: s\nworkloads: [{name: w}]\nsteps: [{apply: w}, {expect: {workload: w, running: 2.0, gpus: '1.5'}, "
        "timeout: 1h}]\n".replace("1h", "60m"),
        "name: s\nworkloads: [{name: w, completeAfter: 3600}]\nsteps: [{apply: w}, {sleep: 3600s}]\n",
    ],
)
def test_the_nearest_meaningful_input_still_loads(tmp_path, text):
    assert load_scenario(write(tmp_path, text)).steps


NODES = """\
name: s
workloads:
  - name: w
    node: kwok-a100-9
steps:
  - apply: w
  - deletePods: {node: kwok-a100-0}
  - expect: {node: kwok-h100-0, pods: 0}
"""


class Fleet(ReplayCluster):
    """A recording with a known fleet."""

    def __init__(self, names: list[str]):
        super().__init__([], node_gpus=[8.0] * len(names))
        self.names = names

    def node_names(self) -> list[str]:
        return self.names


@pytest.mark.parametrize(
    "fleet, line, node",
    [
        (["kwok-a100-0", "kwok-h100-0", "cpu-0"], 3, "kwok-a100-9"),  # the workload's node
        (["kwok-a100-9", "kwok-h100-0", "cpu-0"], 7, "kwok-a100-0"),  # deletePods
        (["kwok-a100-9", "kwok-a100-0", "cpu-0"], 8, "kwok-h100-0"),  # a condition's node
    ],
)
def test_a_node_not_in_the_fleet_is_refused_before_anything_is_applied(tmp_path, fleet, line, node):
    path = write(tmp_path, NODES)
    cluster = Fleet(fleet)
    engine = Engine(cluster, Progress(quiet=True))
    with pytest.raises(ScenarioError) as err:
        engine.refuse_unknown_nodes([load_scenario(path)])
    assert err.value.message.startswith(f"{path}:{line}: node '{node}' is not in this lab's fleet (its nodes: ")
    verdict = engine.run(load_scenario(path))  # the engine's own check, for callers that go straight to run
    assert verdict.error.startswith(f"{path}:{line}: node '{node}'") and cluster.calls == []


def test_a_scenario_that_does_not_fit_the_fleet_is_not_applicable_rather_than_refused(tmp_path):
    s = load_scenario(write(tmp_path, "requires: {nodes: 3}\n" + NODES))
    cluster = Fleet(["kwok-a100-0", "kwok-h100-0"])
    engine = Engine(cluster, Progress(quiet=True))
    engine.refuse_unknown_nodes([s])
    verdict = engine.run(s)
    assert verdict.not_applicable.startswith("on this fleet: it needs 3 nodes") and cluster.calls == []


def test_nodes_of_the_fleet_pass_and_an_unknown_fleet_is_not_checked(tmp_path):
    s = load_scenario(write(tmp_path, NODES))
    Engine(Fleet(["kwok-a100-9", "kwok-a100-0", "kwok-h100-0"]), Progress(quiet=True)).refuse_unknown_nodes([s])
    Engine(ReplayCluster([]), Progress(quiet=True)).refuse_unknown_nodes([s])  # a recording: no fleet to check


class Refusing(ReplayCluster):
    """A cluster whose API refuses to create a Job."""

    def apply(self, obj: dict) -> None:
        if obj["kind"] == "Job":
            raise RuntimeError("the server refused")
        super().apply(obj)


def test_an_error_in_a_step_names_the_step_line(tmp_path):
    path = write(tmp_path, "name: s\nworkloads: [{name: w}]\nsteps:\n  - apply: w\n")
    verdict = Engine(Refusing([]), Progress(quiet=True)).run(load_scenario(path))
    assert verdict.error == f"{path}:4: RuntimeError: the server refused"


def test_a_failed_row_names_the_expectation_line(tmp_path):
    path = write(
        tmp_path,
        "name: s\nworkloads: [{name: w}]\nsteps:\n  - apply: w\n"
        "  - expect:\n      - {workload: w, pods: 0}\n      - {workload: w, running: 1}\n"
        "    timeout: 0s\n",
    )
    verdict = Engine(ReplayCluster([]), Progress(quiet=True)).run(load_scenario(path))
    passed, failed = verdict.checks
    assert passed.passed and passed.detail == []
    assert not failed.passed and failed.detail[0] == f"expectation at {path}:7"
