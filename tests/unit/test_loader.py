"""The scenario loader: good files load, malformed ones fail with file:line before anything runs."""

from pathlib import Path

import pytest

from kailab.errors import ScenarioError
from kailab.lesson import EXERCISE_NAMES
from kailab.paths import EXERCISES
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.values import Bound

GOOD = """\
name: tiny
queues:
  - name: team-a
    gpu: {quota: 2}
workloads:
  - name: job
    queue: team-a
    pods: 3
    minMember: 3
steps:
  - apply: job
  - expect:
      - workload: job
        running: ">=2"
        pending: 0..1
    timeout: 5s
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_every_builtin_exercise_loads():
    for name in EXERCISE_NAMES:
        s = load_scenario(EXERCISES / f"{name}.yaml")
        assert s.name == name and s.steps


def test_good_file_becomes_model(tmp_path):
    s = load_scenario(write(tmp_path, GOOD))
    assert s.namespace == "kailab-tiny"
    q = s.queues[0]
    # An omitted GPU limit becomes -1 (unlimited); CPU and memory default to unlimited too.
    assert (q.gpu.quota, q.gpu.limit, q.cpu.limit, q.memory.quota) == (2, -1, -1, -1)
    expect = s.steps[1]
    assert [(e.measure, e.want) for e in expect.expectations] == [("running", ">=2"), ("pending", "0..1")]
    assert expect.timeout == 5.0


@pytest.mark.parametrize(
    "change, line, words",
    [
        (("    pods: 3\n", "    pods: -1\n"), 8, "want a whole number"),
        (("    minMember: 3\n", "    minMember: 4\n"), 9, "could never start"),
        (("  - apply: job\n", "  - apply: nojob\n"), 11, "does not declare"),
        (('        running: ">=2"\n', '        running: "lots"\n'), 14, "is not a count"),
        (("    queue: team-a\n", "    queue: team-b\n"), 7, "does not declare"),
        (("    timeout: 5s\n", "    timeout: soon\n"), 16, "is not a duration"),
        (("    gpu: {quota: 2}\n", "    gpu: {quota: -5}\n"), 4, "or -1 for unlimited"),
        (("  - apply: job\n", "  - apply: job\n    bogus: 1\n"), 12, "unknown key 'bogus'"),
        (("name: tiny\n", "name: Tiny_One\n"), 1, "lower-case"),
        (("steps:\n", "steps: [\n"), 11, "not valid YAML"),
    ],
)
def test_malformed_file_names_file_and_line(tmp_path, change, line, words):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert err.value.message.startswith(f"{path}:{line}:"), err.value.message
    assert words in err.value.message


def test_deployment_gang_is_refused(tmp_path):
    text = GOOD.replace("    pods: 3\n", "    kind: Deployment\n    pods: 3\n")
    with pytest.raises(ScenarioError, match="one PodGroup per pod"):
        load_scenario(write(tmp_path, text))


def test_a_statefulset_is_kubernetes_own_with_the_queue_on_its_owner_and_scales_by_its_replicas(tmp_path):
    from kailab.scenarios.manifests import workload_objects

    text = GOOD.replace("    pods: 3\n    minMember: 3\n", "    kind: StatefulSet\n    pods: 3\n")
    scenario = load_scenario(write(tmp_path, text))
    (sts,) = workload_objects(scenario.workload("job"), scenario)
    assert (sts["apiVersion"], sts["kind"], sts["spec"]["replicas"]) == ("apps/v1", "StatefulSet", 3)
    assert sts["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"  # KAI's default grouper reads the top owner
    selected = sts["spec"]["selector"]["matchLabels"]
    assert selected.items() <= sts["spec"]["template"]["metadata"]["labels"].items()
    assert "podManagementPolicy" not in sts["spec"] and "serviceName" not in sts["spec"]  # Kubernetes' defaults
    assert workload_objects(scenario.workload("job"), scenario, 5)[0]["spec"]["replicas"] == 5  # a scale step
    with pytest.raises(ScenarioError, match="one PodGroup of minMember 1"):
        load_scenario(write(tmp_path, text.replace("    pods: 3\n", "    pods: 3\n    minMember: 3\n")))


@pytest.mark.parametrize(
    "want, parsed", [("8", Bound("==", 8)), (">=8", Bound(">=", 8)), ("<3", Bound("<", 3)), ("2..5", Bound("..", 2, 5))]
)
def test_parse_want(want, parsed):
    assert Bound.parse(want) == parsed
