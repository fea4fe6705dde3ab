"""Instructor-side grading (kailab/classroom/grading.py): a learner's handed-in task run, graded from its recording.

The recordings in tests/golden/tasks/ are real: ann's runs of quota-1 on the real KAI in a class (made by
tests/fleet/test_joined_commands_fleet.py with KAILAB_TASK_RECORDINGS=DIR) — her file as given, and solved
(instructor/solutions/tasks/quota-1.yaml) — each her file and the change stream her run saw. Malformed task
files for ``class up --tasks DIR`` are in tests/badinput/tasks/ (each ``# error: LINE: words``).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from cli_run import kailab  # tests/unit/cli_run.py: the command line in this process

from kailab import tasks
from kailab.classroom import grading
from kailab.scenarios.fold import Change
from kailab.scenarios.replay import read_changes

RECORDINGS = Path(__file__).parent.parent / "golden" / "tasks"
BAD = sorted((Path(__file__).parent.parent / "badinput" / "tasks").glob("*/*.yaml"))
QUOTA_1 = tasks.folder("task") / "quota-1.yaml"


def handed_in(name: str) -> tuple[str, list[Change]]:
    folder = RECORDINGS / name
    return (folder / "ann.yaml").read_text(), read_changes(folder / "changes.jsonl")


def test_a_solved_run_passes_the_hidden_check_graded_from_its_recording():
    text, changes = handed_in("quota-1-solved")
    verdict = grading.grade("task", "quota-1", QUOTA_1.read_text(), "ann", text, changes)
    assert verdict.outcome == "PASS", [c.to_dict() for c in verdict.checks]
    rows = {c.title.split(" (")[0]: c for c in verdict.checks}
    assert rows["team-research runs all 8 of its pods"].observed.startswith("8")
    assert verdict.namespace == "ann-kailab-quota"  # graded in her partition's names


def test_the_file_as_given_fails_the_hidden_check_on_its_recording():
    text, changes = handed_in("quota-1-as-given")
    verdict = grading.grade("task", "quota-1", QUOTA_1.read_text(), "ann", text, changes)
    assert verdict.outcome == "FAIL"
    failed = [c for c in verdict.checks if not c.passed]
    assert failed and failed[0].title.startswith("team-research runs all 8"), [c.to_dict() for c in verdict.checks]
    assert not failed[0].observed.startswith("8")


def test_the_recording_decides_not_the_file_handed_in_with_it():
    """The solved file beside the recording of a run that did not solve it: what the cluster did fails."""
    solved, _ = handed_in("quota-1-solved")
    _, unsolved_run = handed_in("quota-1-as-given")
    assert grading.grade("task", "quota-1", QUOTA_1.read_text(), "ann", solved, unsolved_run).outcome == "FAIL"


def test_a_stricter_hidden_check_fails_on_the_same_solved_recording():
    """The instructor's expectation decides: 9 of team-research's pods (there are 8) is never seen."""
    text, changes = handed_in("quota-1-solved")
    stricter = QUOTA_1.read_text().replace("running: 8, pods: 8", "running: 9, pods: 8")
    assert stricter != QUOTA_1.read_text()
    assert grading.grade("task", "quota-1", stricter, "ann", text, changes).outcome == "FAIL"


def test_the_learners_part_holds_the_goal_and_starting_file_and_no_check():
    for stored in grading.built_in():
        part, whole = stored.part, yaml.safe_load(stored.text)
        assert part["goal"] == stored.task.goal and part["scenario"] == whole["scenario"]
        then = yaml.safe_load(part["then"])
        assert len(then) == len(whole["check"])
        for played, hidden in zip(then, whole["check"], strict=True):
            if "expect" in hidden or "wait" in hidden:  # watched as long as the check could take, never said
                seconds = float(played["sleep"].rstrip("s"))
                assert list(played) == ["sleep"] and seconds >= float(str(hidden.get("timeout", "30s")).rstrip("s"))
            else:
                assert played == hidden  # an action of the check (a scale) is played as written
        assert "expect" not in json.dumps(part) and "stable" not in json.dumps(part)


def test_the_stored_objects_keep_the_checks_in_secrets_and_give_learners_configmaps_only():
    objs = grading.objects(grading.built_in())
    (role,) = [o for o in objs if o["kind"] == "Role"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]
    (binding,) = [o for o in objs if o["kind"] == "RoleBinding"]
    assert binding["subjects"][0]["name"] == "system:serviceaccounts:kailab-class"
    secrets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Secret"}
    assert base64.b64decode(secrets["quota-task-1"]["data"]["task.yaml"]).decode() == QUOTA_1.read_text()
    assert len(secrets) == len([*tasks.folder("task").glob("*.yaml"), *tasks.folder("challenge").glob("*.yaml")])
    assert {"quota-task-1", "challenge-ticket-3"} <= set(secrets)


def test_a_learner_gets_a_task_file_that_plays_their_steps_then_watches(tmp_path):
    (stored,) = [s for s in grading.built_in() if s.task.name == "quota-1"]
    kube = SimpleNamespace(
        core=SimpleNamespace(read_namespaced_config_map=lambda name, ns: SimpleNamespace(data=stored.part))
    )
    task = grading.class_task(kube, "task", "quota-1", tmp_path)  # type: ignore[arg-type]
    assert task.goal == stored.task.goal and task.start == stored.task.start
    mine = tmp_path / "mine.yaml"
    mine.write_text(task.start)
    scenario = tasks.checked(task, mine)
    assert [type(s).__name__ for s in scenario.steps][-1] == "Sleep" and scenario.name == "quota-task-1"
    mine.write_text(task.start.replace("priority: 200", "priority: 50"))
    with pytest.raises(tasks.TaskError, match="keep"):  # the goal's limits, checked on the learner's side
        tasks.checked(task, mine)


def test_a_learner_gets_a_class_challenge_without_its_cause(tmp_path):
    (stored,) = [s for s in grading.built_in() if s.id == "challenge-ticket-3"]
    assert "runbook" not in stored.part and yaml.safe_load(stored.text)["runbook"]  # the cause: the instructor's
    kube = SimpleNamespace(
        core=SimpleNamespace(read_namespaced_config_map=lambda name, ns: SimpleNamespace(data=stored.part))
    )
    task = grading.class_task(kube, "challenge", "ticket-3", tmp_path)  # type: ignore[arg-type]
    assert (task.kind, task.id, task.namespace) == ("challenge", "challenge-ticket-3", "kailab-challenge")
    assert task.runbook == ""


def record(learner: str, namespace: str, lesson: str, text: str, changes: bytes) -> SimpleNamespace:
    return SimpleNamespace(
        metadata=SimpleNamespace(namespace=namespace, labels={}),
        data={"lesson": lesson, "finished": "", grading.FILE_KEY: text},
        binary_data={grading.CHANGES_KEY: base64.b64encode(changes).decode()},
    )


def test_a_handed_in_record_is_graded_and_a_forged_or_broken_one_is_said_not_graded():
    text, _ = handed_in("quota-1-solved")
    packed = gzip.compress((RECORDINGS / "quota-1-solved" / "changes.jsonl").read_bytes())
    hidden = {"quota-task-1": ("task", "quota-1", QUOTA_1.read_text())}
    tid, row = grading.graded_record(record("ann", "ann-kailab-quota", "quota-task-1", text, packed), "ann", hidden)
    assert (tid, row["outcome"]) == ("quota-task-1", "PASS")
    cases = {
        "not one of ann's": record("ann", "bob-kailab-quota", "quota-task-1", text, packed),
        "no task 'nope-task-1'": record("ann", "ann-kailab-quota", "nope-task-1", text, packed),
        "no recording": record("ann", "ann-kailab-quota", "quota-task-1", text, b""),
        "Not a gzipped file": record("ann", "ann-kailab-quota", "quota-task-1", text, b"not gzip"),
        "no task file": record("ann", "ann-kailab-quota", "quota-task-1", "", packed),
        "not a recorded change": record(
            "ann", "ann-kailab-quota", "quota-task-1", text, gzip.compress(b'{"t": 1, "type": "ADDED"}\n')
        ),
    }
    for words, cm in cases.items():
        _, row = grading.graded_record(cm, "ann", hidden)
        assert row["outcome"] == "NOT GRADED" and words in row["why"], (words, row)


def test_a_step_of_the_check_after_an_expect_is_timed_from_where_the_learners_run_played_it():
    """The learner slept where the check expects, so the check's scale came late in their recording: the replay's
    clock moves to that step's mark when the grader plays it, and the wait after it is timed from there."""
    marks = [Change("STEP", step=1, t=2.0), Change("STEP", step=2, t=40.0)]
    replay = grading.GradingReplay(marks)
    replay.apply({"kind": "Queue", "metadata": {"name": "q"}})  # the scenario's queues: before the steps
    assert replay.now == 0.0
    replay.changes("ns")
    replay.apply({"kind": "Job", "metadata": {"name": "w"}})
    assert replay.now == 2.0
    replay.note(Change("STEP", step=1, t=2.0))
    replay.now = 5.0  # the check's expect held early in the replay
    replay.apply({"kind": "Job", "metadata": {"name": "w"}})  # the check's scale: at the learner's run's time
    replay.apply({"kind": "Pod", "metadata": {"name": "w-0"}})  # the same step's next write: no further
    assert replay.now == 40.0


def expected(path: Path) -> tuple[int, str]:
    m = re.match(r"# error: (\d+): (.*)", path.read_text().splitlines()[0])
    assert m, f"{path} must start with '# error: LINE: words'"
    return int(m.group(1)), m.group(2)


@pytest.mark.parametrize("path", BAD, ids=[p.parent.name for p in BAD])
def test_a_malformed_task_file_says_file_line_and_what_and_nothing_is_stored(path, tmp_path):
    line, words = expected(path)
    with pytest.raises(grading.TaskFileError) as err:
        grading.read_dir(path.parent)
    assert err.value.message.startswith(f"{path}:{line}: "), err.value.message
    assert words in err.value.message and "Nothing was stored" in (err.value.hint or "")
    said = kailab("class", "up", "--learners", "2", "--tasks", str(path.parent), home=tmp_path / "lab")
    assert said.returncode == 1 and said.stderr.count(f"{path}:{line}: ") == 1, said.stderr
    assert not (tmp_path / "lab").exists()  # refused before a lab was looked for


def test_a_task_folder_of_no_task_files_or_a_misnamed_one_is_refused(tmp_path):
    with pytest.raises(grading.TaskFileError, match="no task files"):
        grading.read_dir(tmp_path)
    with pytest.raises(grading.TaskFileError, match="not a folder"):
        grading.read_dir(tmp_path / "missing")
    for name in ("notalesson-1.yaml", "quota.yaml", "quota-0.yaml", "quota-1.yml"):
        bad = tmp_path / name
        bad.write_text(QUOTA_1.read_text())
        with pytest.raises(grading.TaskFileError, match="named LESSON-N.yaml"):
            grading.read_dir(tmp_path)
        bad.unlink()


def test_an_instructors_own_task_is_stored_beside_the_built_in_ones(tmp_path):
    own = tmp_path / "quota-2.yaml"
    own.write_text(QUOTA_1.read_text().replace('title: "team-research runs all 8', 'title: "every one of the 8'))
    (stored,) = grading.read_dir(tmp_path)
    assert stored.id == "quota-task-2" and "every one" in stored.text and "every one" not in json.dumps(stored.part)


def _submitted(name: str, version: str = "1") -> dict:
    """ann's hand-in of quota-task-1 as the class page's watch sees it (the API's JSON)."""
    text, _ = handed_in(name)
    packed = gzip.compress((RECORDINGS / name / "changes.jsonl").read_bytes())
    labels = {"kailab.io/learner": "ann", "kailab.io/lesson-record": "quota-task-1", grading.SUBMITTED_LABEL: "true"}
    return {
        "metadata": {
            "name": "kailab-record-x",
            "namespace": "ann-kailab-quota",
            "resourceVersion": version,
            "labels": labels,
        },
        "data": {"lesson": "quota-task-1", "finished": "2026-11-27T10:12:00+00:00", grading.FILE_KEY: text},
        "binaryData": {grading.CHANGES_KEY: base64.b64encode(packed).decode()},
    }


def test_the_class_page_grades_a_hand_in_from_what_it_watches_once_until_it_changes(monkeypatch):
    """The page's grades: the stored task's Secret as class up writes it, a hand-in as watched; a hand-in is graded
    once (a replay), again only when the learner hands in again; someone else's or a lesson's record is not graded."""
    secrets = [o for o in grading.objects(grading.built_in()) if o["kind"] == "Secret"]
    cache, replays = grading.GradeCache(), []
    real = grading.graded_json
    monkeypatch.setattr(grading, "graded_json", lambda *a: replays.append(a[0]) or real(*a))
    lesson = {"metadata": {"namespace": "ann-kailab-quota", "labels": {"kailab.io/learner": "ann"}}, "data": {}}
    theirs = {**_submitted("quota-1-solved"), "metadata": {**_submitted("quota-1-solved")["metadata"]}}
    theirs["metadata"]["labels"] = {**theirs["metadata"]["labels"], "kailab.io/learner": "bob"}  # not a learner
    got = cache.grades(["ann", "cai"], [_submitted("quota-1-as-given"), lesson, theirs], secrets)
    assert got["cai"] == {} and list(got["ann"]) == ["quota-task-1"]
    assert got["ann"]["quota-task-1"]["outcome"] == "FAIL" and len(replays) == 1
    failed = [c["title"] for c in got["ann"]["quota-task-1"]["checks"] if not c["passed"]]
    assert failed and failed[0].startswith("team-research runs all 8")
    assert cache.grades(["ann"], [_submitted("quota-1-as-given")], secrets)["ann"]["quota-task-1"]["outcome"] == "FAIL"
    assert len(replays) == 1  # the same hand-in: not replayed again
    again = cache.grades(["ann"], [_submitted("quota-1-solved", version="2")], secrets)
    assert again["ann"]["quota-task-1"]["outcome"] == "PASS" and len(replays) == 2
    nothing_stored = cache.grades(["ann"], [_submitted("quota-1-solved", version="2")], [])
    assert nothing_stored["ann"]["quota-task-1"]["outcome"] == "NOT GRADED"
    assert "no task 'quota-task-1'" in nothing_stored["ann"]["quota-task-1"]["why"]


def test_a_task_handed_in_twice_is_graded_by_the_hand_in_that_finished_last_in_whatever_order_it_comes():
    secrets = [o for o in grading.objects(grading.built_in()) if o["kind"] == "Secret"]
    first = _submitted("quota-1-as-given")
    last = _submitted("quota-1-solved", version="2")
    last["metadata"] = {**last["metadata"], "name": "kailab-record-y"}
    last["data"] = {**last["data"], "finished": "2026-11-27T10:20:00+00:00"}
    for order in ([first, last], [last, first]):
        got = grading.GradeCache().grades(["ann"], order, secrets)
        assert got["ann"]["quota-task-1"]["outcome"] == "PASS", order
