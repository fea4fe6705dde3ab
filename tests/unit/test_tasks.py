"""Tasks and challenges: every lesson has a task, every task and challenge a solution; the learner's copy, the
hidden check and what a learner's bad file gets. Whether the checks tell an unchanged file from a solution is
proved on the real KAI (tests/fleet/test_tasks_on_kai.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import cli_run  # tests/unit/cli_run.py
import pytest

from kailab import tasks
from kailab.errors import ScenarioError
from kailab.lesson import EXERCISE_NAMES
from kailab.scenarios import model
from kailab.scenarios.loader import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "instructor" / "solutions"
ALL = [t for n in EXERCISE_NAMES for t in tasks.lesson_tasks(n)] + tasks.challenges()
# Words that name a cause a runbook explains: no challenge's file name, title, workload or queue may use one.
CAUSE_WORDS = (
    "quota", "limit", "cpu", "gang", "member", "priority", "preempt", "queue", "label", "reclaim", "starv",
    "schedul", "fair", "weight", "borrow", "block", "stuck", "missing", "ghost", "leaf", "over",
)  # fmt: skip


def kailab(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """The command line in this process (tests/unit/cli_run.py), in ``cwd``, its home and lab folder in ``home``."""
    return cli_run.kailab(*args, home=home / "lab", cwd=cwd, env={"HOME": str(home)})


def test_every_lesson_has_a_task_and_every_task_and_challenge_a_solution():
    for name in EXERCISE_NAMES:
        assert tasks.lesson_tasks(name), f"lesson {name} has no task in instructor/tasks/"
    assert tasks.challenges()
    files = {p.relative_to(SOLUTIONS) for p in SOLUTIONS.rglob("*.yaml")}
    assert files == {Path(f"{t.kind}s") / f"{t.name}.yaml" for t in ALL}


@pytest.mark.parametrize("task", ALL, ids=[t.id for t in ALL])
def test_the_check_applies_to_the_starting_file_and_the_solution(task, tmp_path):
    copy = task.copy_path(tmp_path)
    solution = SOLUTIONS / f"{task.kind}s" / f"{task.name}.yaml"
    for path in (copy, solution):
        if path == copy:
            assert tasks.give(task, copy)
        s = tasks.checked(task, path)
        own = load_scenario(path)
        assert s.name == task.id and s.namespace == task.namespace
        assert s.steps[: len(own.steps)] == own.steps and len(s.steps) > len(own.steps)
        hidden = s.steps[len(own.steps) :]
        assert any(isinstance(h, model.Expect) for h in hidden)
        # Hidden steps carry no line: theirs would point into the task's file, not the learner's.
        assert all(h.line == 0 for h in hidden)
        assert all(e.line == 0 for h in hidden for e in getattr(h, "expectations", ()))
    start = [line for line in copy.read_text().splitlines() if not line.lstrip().startswith("#")]
    assert start != solution.read_text().splitlines(), "the solution changes nothing"


@pytest.mark.parametrize("task", tasks.challenges(), ids=[t.name for t in tasks.challenges()])
def test_a_challenge_hides_its_cause(task, tmp_path):
    copy = task.copy_path(tmp_path)
    tasks.give(task, copy)
    s = load_scenario(copy)
    named = [task.name, copy.name, s.title, *(w.name for w in s.workloads), *(q.name for q in s.queues)]
    for text in named:
        found = [w for w in CAUSE_WORDS if w in text.lower()]
        assert not found, f"{text!r} gives the cause away ({found})"
    assert "#" not in task.start, "a comment in the starting file would say what is wrong"
    assert task.runbook and (ROOT / task.runbook).is_file()
    # Words that mark a file as broken on purpose would say it too.
    assert not re.search(r"missingQueues|missingSchedulers|onParentQueue", task.start)


def test_the_copy_is_written_once_and_never_over_a_learners_edits(tmp_path):
    task = tasks.lesson_task("quota", 1)
    dest = task.copy_path(tmp_path)
    assert dest == tmp_path / "kailab-tasks" / "quota-task-1.yaml"
    assert tasks.give(task, dest)
    first = dest.read_text()
    assert first.startswith(f"# Task quota-1: {task.goal}\n# Check it: kailab lesson quota --task 1\n")
    dest.write_text(first + "# my edit\n")
    assert not tasks.give(task, dest)
    assert dest.read_text().endswith("# my edit\n")


def test_a_file_without_what_the_check_is_about_is_refused_in_words(tmp_path):
    task = tasks.lesson_task("quota", 1)
    dest = task.copy_path(tmp_path)
    tasks.give(task, dest)
    dest.write_text(dest.read_text().replace("  - apply: research-train\n", ""))
    with pytest.raises(tasks.TaskError) as err:
        tasks.checked(task, dest)
    assert err.value.message == (
        f"{dest}: the task checks workload 'research-train', which your file no longer applies: "
        "keep it (and its '- apply: research-train' step)."
    )
    assert "kailab lesson quota --task 1" in (err.value.hint or "")


def test_a_bad_edit_gets_the_loaders_file_and_line(tmp_path):
    task = tasks.challenge("ticket-3")
    dest = task.copy_path(tmp_path)
    tasks.give(task, dest)
    text = dest.read_text()
    dest.write_text(text.replace("gpu: {quota: 4, limit: 8}", "gpu: {quota: 4, limit: 8, burst: 2}"))
    line = next(i for i, t in enumerate(dest.read_text().splitlines(), 1) if "burst" in t)
    with pytest.raises(ScenarioError) as err:
        tasks.checked(task, dest)
    assert err.value.message.startswith(f"{dest}:{line}: ") and "unknown key 'burst'" in err.value.message
    dest.write_text(text.replace("pods: 16", "pods: [16"))
    with pytest.raises(ScenarioError) as err:
        tasks.checked(task, dest)
    assert re.match(rf"{re.escape(str(dest))}:\d+: not valid YAML", err.value.message), err.value.message


def test_the_commands_copy_list_and_refuse_in_words(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir(), cwd.mkdir()
    first = kailab("lesson", "quota", "--task", "1", cwd=cwd, home=home)
    assert first.returncode == 0, first.stderr
    copy = cwd / "kailab-tasks" / "quota-task-1.yaml"
    assert copy.is_file() and "Your copy: kailab-tasks/quota-task-1.yaml" in " ".join(first.stdout.split())
    # The second time the copy is checked: it loads, then there is no lab to run it on.
    again = kailab("lesson", "quota", "--task", "1", cwd=cwd, home=home)
    assert again.returncode == 1 and "No lab" in again.stderr and "Traceback" not in again.stderr
    copy.write_text("name: [unclosed\n")
    bad = kailab("lesson", "quota", "--task", "1", cwd=cwd, home=home)
    assert bad.returncode == 1 and f"{copy}:1: not valid YAML" in " ".join(bad.stderr.split()).replace("\n", "")
    none = kailab("lesson", "quota", "--task", "9", cwd=cwd, home=home)
    assert none.returncode == 1 and "Lesson 'quota' has no task 9." in none.stderr and "Its tasks: 1." in none.stderr
    alone = kailab("lesson", "quota", "--file", str(copy), cwd=cwd, home=home)
    assert alone.returncode == 2 and "--task" in alone.stderr
    listed = kailab("challenge", cwd=cwd, home=home)
    assert listed.returncode == 0 and all(c.name in listed.stdout for c in tasks.challenges())
    unknown = kailab("challenge", "ticket-99", cwd=cwd, home=home)
    assert unknown.returncode == 1 and "No challenge named 'ticket-99'." in unknown.stderr
    made = kailab("challenge", "ticket-1", cwd=cwd, home=home)
    assert made.returncode == 0 and (cwd / "kailab-tasks" / "challenge-ticket-1.yaml").is_file()


def test_a_task_record_sits_beside_the_lessons_and_the_class_page_lists_it():
    from kailab.checks import Verdict
    from kailab.classroom import records, report

    lesson = Verdict(scenario="quota", title="Quota", namespace="ann-kailab-quota")
    task = Verdict(scenario="quota-task-1", title="Quota task", namespace="ann-kailab-quota")
    a, b = records.record_object("ann", lesson), records.record_object("ann", task)
    assert a["metadata"]["name"] == records.NAME and b["metadata"]["name"] == "kailab-record-quota-task-1"
    assert b["metadata"]["namespace"] == a["metadata"]["namespace"]
    started = records.started_object("ann", "quota-task-1", "Quota task", "ann-kailab-quota")
    assert started["metadata"]["name"] == b["metadata"]["name"]  # its verdict replaces it, not the lesson's
    row = {"outcome": "PASS", "finished": "2026-01-01T10:00:00+00:00", "seconds": "9.0", "prediction": ""}
    rep = {"ann": {"lessons": {"quota": row, "quota-task-1": {**row, "outcome": "FAIL"}}, "stuck": []}}
    page = report.markdown(report.sections(rep, ["quota"]))
    assert "## Tasks and challenges" in page
    assert "| ann | quota-task-1 | FAIL 2026-01-01T10:00:00+00:00 |" in page


def test_a_class_learner_has_the_challenges_namespace():
    from kailab.classroom import access

    assert "ann-kailab-challenge" in access.lesson_namespaces("ann")


def test_a_task_file_that_is_wrong_names_its_line(tmp_path):
    bad = tmp_path / "quota-7.yaml"
    bad.write_text(json.dumps({"goal": "x", "scenario": "name: a\nsteps: [{sleep: 1s}]\n", "check": []}))
    with pytest.raises(ScenarioError) as err:
        tasks.load_task(bad)
    assert err.value.message.startswith(f"{bad}:1: check: needs at least one item")


def test_a_change_the_goal_rules_out_is_refused_in_words(tmp_path):
    task = tasks.lesson_task("quota", 1)  # "Change only the queues: team-ops keeps its priority, no workload changes"
    dest = task.copy_path(tmp_path)
    tasks.give(task, dest)
    start = dest.read_text()
    dest.write_text(
        start.replace("name: ops-flood, queue: team-ops, pods: 32", "name: ops-flood, queue: team-ops, pods: 24")
    )
    line = next(i for i, t in enumerate(dest.read_text().splitlines(), 1) if "ops-flood, queue" in t)
    with pytest.raises(tasks.TaskError) as err:
        tasks.checked(task, dest)
    assert err.value.message == (
        f"{dest}:{line}: the task asks you to keep workload 'ops-flood' as in the starting file "
        "(pods: 32 there, 24 in yours)."
    )
    dest.write_text(start.replace("priority: 200", "priority: 50"))
    with pytest.raises(tasks.TaskError) as err:
        tasks.checked(task, dest)
    assert err.value.message == (
        f"{dest}: the task asks you to keep queue 'team-ops' priority as in the starting file (200 there, 50 in yours)."
    )
    dest.write_text(start.replace("quota: 0, limit: -1}\n  workloads", "quota: 8, limit: -1}\n  workloads"))
    assert tasks.checked(task, dest).name == "quota-task-1"  # what the goal allows passes to the lab


def test_a_keep_rule_about_what_the_starting_file_lacks_names_the_tasks_line(tmp_path):
    task = tasks.lesson_task("quota", 1)
    bad = tmp_path / "quota-1.yaml"
    bad.write_text(task.path.read_text().replace("keep: [", "keep: [queues.team-nope, "))
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if t.startswith("keep:"))
    broken = tasks.load_task(bad)
    dest = broken.copy_path(tmp_path)
    tasks.give(broken, dest)
    with pytest.raises(tasks.TaskError) as err:
        tasks.checked(broken, dest)
    assert (
        err.value.message == f"{bad}:{line}: keep: 'queues.team-nope': the starting scenario has no queue 'team-nope'."
    )


def test_every_lesson_task_says_what_to_keep():
    for t in (t for n in EXERCISE_NAMES for t in tasks.lesson_tasks(n)):
        doc = tasks._read(t.path, t.kind)[3]
        assert doc.keep, f"{t.path}: its goal limits the change; keep: says what"


def test_the_course_guide_counts_and_orders_the_lessons_as_kailab_lesson_does():
    """docs/instructor.md says how many lessons there are and lists them in ``kailab lesson``'s order; its plan
    takes them in that order; time-fairshare, which a class's learner does not run, is marked demo-only."""
    from kailab.lesson import lesson_names

    guide = (ROOT / "docs" / "instructor.md").read_text()
    names = lesson_names()
    assert f"kailab has **{len(names)} lessons**" in guide
    listed = " ".join(guide.split("which the plan below keeps:", 1)[1].split(".", 1)[0].split())
    assert listed == ", ".join(names)
    plan = guide.split("## The plan", 1)[1].split("\n## ", 1)[0]
    order = [
        n
        for row in plan.splitlines()
        if row.startswith("| 0:") or row.startswith("| 1:")
        for n in names
        if re.search(rf"\b{re.escape(n)}\b", row.split("|")[2])
    ]
    assert order and order == sorted(order, key=names.index), order
    assert "time-fairshare is demo-only in a class" in guide


def test_the_course_guide_sets_every_task_and_challenge_and_names_each_challenges_runbook():
    guide = (ROOT / "docs" / "instructor.md").read_text()
    rows = {r.split("|")[1].strip(): r for r in guide.splitlines() if r.startswith("| ")}
    for t in ALL:
        assert t.name in rows, f"docs/instructor.md has no row for {t.name}"
        if t.kind == "challenge":
            assert Path(t.runbook).name in rows[t.name], f"docs/instructor.md names another runbook for {t.name}"
