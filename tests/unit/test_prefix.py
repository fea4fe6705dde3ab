"""--prefix: a lab's own names on a shared cluster, as a pure transformation of the loaded scenario."""

from __future__ import annotations

import pytest

from kailab.errors import KailabError
from kailab.paths import EXERCISES, RUNBOOKS
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import queue_object, workload_objects
from kailab.scenarios.model import SetQueue
from kailab.scenarios.prefix import MAX_PREFIX, check_prefix, prefixed


def test_every_queue_reference_and_the_namespace_get_the_prefix():
    s = prefixed(load_scenario(EXERCISES / "hierarchy.yaml"), "alice")
    assert s.namespace == "alice-kailab-hierarchy"
    assert {q.name: q.parent for q in s.queues} == {
        "alice-dept-ml": None,
        "alice-team-vision": "alice-dept-ml",
        "alice-team-speech": "alice-dept-ml",
        "alice-dept-infra": None,
        "alice-team-infra": "alice-dept-infra",
    }
    assert {w.name: w.queue for w in s.workloads} == {
        "vision-flood": "alice-team-vision",
        "infra-flood": "alice-team-infra",
    }
    queues_expected = {e.queue for e in s.expectations if e.queue}
    assert queues_expected == {"alice-team-vision", "alice-team-infra"}
    # KAI names the queue in its message, so the words a condition looks for name the prefixed queue
    reasons = [e.want for e in s.expectations if e.measure == "reason"]
    assert reasons == ["alice-dept-ml quota has reached the allowable limit"]


def test_the_objects_made_carry_the_prefixed_names():
    s = prefixed(load_scenario(EXERCISES / "reclaim.yaml"), "bob")
    job = workload_objects(s.workload("prod-train"), s)[0]
    assert job["metadata"]["namespace"] == "bob-kailab-reclaim"
    assert job["metadata"]["labels"]["kai.scheduler/queue"] == "bob-team-prod"
    assert job["spec"]["template"]["metadata"]["labels"]["kai.scheduler/queue"] == "bob-team-prod"
    assert {queue_object(q)["spec"].get("parentQueue") for q in s.queues} == {None, "bob-ai-factory"}


def test_set_queue_steps_missing_queues_and_declared_priority_classes_are_prefixed(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nqueues: [{name: q1}, {name: q2, parent: q1}]\nmissingQueues: [ghost]\n"
        "priorityClasses: [{name: low, value: 10}]\n"
        "workloads: [{name: w, queue: q2, priorityClass: low}, {name: d, queue: default-queue, priorityClass: train}]\n"
        "steps: [{apply: w}, {queue: {name: q2, parent: q1, gpu: {quota: 2}}},\n"
        "        {expect: {workload: w, reason: \"Queue 'ghost' does not exist\"}}]\n"
    )
    s = prefixed(load_scenario(path), "c")
    assert s.missing_queues == ("c-ghost",)
    assert [p.name for p in s.priority_classes] == ["c-low"]
    set_queue = next(step for step in s.steps if isinstance(step, SetQueue))
    assert (set_queue.queue.name, set_queue.queue.parent) == ("c-q2", "c-q1")
    w, d = s.workloads
    assert (w.queue, w.priority_class) == ("c-q2", "c-low")
    assert (d.queue, d.priority_class) == ("default-queue", "train")  # not the scenario's: left as they are
    assert s.expectations[0].want == "Queue 'c-ghost' does not exist"


def test_a_queue_name_inside_another_word_is_not_renamed(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nqueues: [{name: prod}]\nworkloads: [{name: w, queue: prod}]\n"
        "steps: [{apply: w}, {expect: {workload: w, reason: 'team-prod and prod-x, but prod'}}]\n"
    )
    assert prefixed(load_scenario(path), "p").expectations[0].want == "team-prod and prod-x, but p-prod"


def test_every_lesson_and_runbook_takes_a_prefix_of_the_longest_length():
    for path in [*EXERCISES.glob("*.yaml"), *(RUNBOOKS / "scenarios").glob("*.yaml")]:
        s = prefixed(load_scenario(path), "a" * MAX_PREFIX)
        assert s.namespace.startswith("a" * MAX_PREFIX + "-"), path


def test_names_too_long_after_the_prefix_are_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nqueues: [{{name: {'q' * 62}}}]\nworkloads: [{{name: w}}]\nsteps: [{{apply: w}}]\n")
    with pytest.raises(KailabError, match="longer than 63 characters: x-" + "q" * 62):
        prefixed(load_scenario(path), "x")


@pytest.mark.parametrize("text", ["alice", "team-3", "a", "a" * MAX_PREFIX])
def test_good_prefixes(text):
    assert check_prefix(text) == text


@pytest.mark.parametrize("text", ["Alice", "-a", "a-", "a_b", "", "a" * (MAX_PREFIX + 1), "a.b"])
def test_bad_prefixes(text):
    with pytest.raises(ValueError, match="is not a prefix"):
        check_prefix(text)
