"""Tasks and challenges: a starting scenario the learner edits to reach a goal, checked by steps they do not see.

A lesson's task (``instructor/tasks/LESSON-N.yaml``, ``kailab lesson LESSON --task N``) asks for a change of queues,
priorities, sizes or a workload's policy; a challenge (``instructor/challenges/NAME.yaml``, ``kailab challenge NAME``)
is a runbook's failure with its cause hidden: the learner diagnoses it with ``kailab explain`` and fixes the file.
Each is one file: the goal, the starting scenario (copied once into the learner's ``kailab-tasks/`` folder to
edit) and the hidden check — steps played after the learner's own, about workloads and queues the starting file
declares — and what the learner must keep as the starting file has it (``keep:``, the limits the goal states in
words). The instructor's solutions are in ``instructor/solutions/``. None of ``instructor/`` is in the wheel (what a
class's learners install): a checkout's editable install reads it (kailab/paths.py), and a class keeps its tasks in
the cluster, graded on the instructor's side (kailab/classroom/grading.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, StrictStr

from kailab.errors import KailabError, ScenarioError
from kailab.labels import CHALLENGE_NAMESPACE
from kailab.paths import INSTRUCTOR
from kailab.scenarios import model, steps, values
from kailab.scenarios.loader import load_scenario, more_steps
from kailab.scenarios.model import Scenario, Step
from kailab.yamlfile import YamlFile

WORK_FOLDER = "kailab-tasks"  # the learner's copies, in the folder they run kailab from
HINT = "A task or challenge file holds goal:, scenario: (the starting file's text) and check: (steps)."


class TaskError(KailabError):
    """No such task or challenge, or a learner's file the hidden check cannot be applied to."""


def folder(kind: str) -> Path:
    """``instructor/tasks`` or ``instructor/challenges`` of the checkout; a clear error in an install without them."""
    if INSTRUCTOR is None:
        raise TaskError(
            f"This kailab carries no {kind}s: an installed wheel leaves their hidden checks out (they are the "
            "instructor's).",
            hint=f"In a class: kailab join FILE, and your class's {kind}s come from it. Alone: install kailab from its "
            "repository (pip install -e .).",
        )
    return INSTRUCTOR / f"{kind}s"


class TaskFile(values.FileModel):
    goal: StrictStr  # what the learner must reach, shown to them
    runbook: StrictStr = ""  # a challenge's runbook: shown once it passes (it names the cause)
    scenario: StrictStr  # the starting scenario, as the learner's copy holds it
    check: Annotated[list[steps.StepFile], Field(min_length=1)]  # played after the learner's steps; never shown
    # Parts of the starting file the learner's must still have unchanged: queues, workloads or steps (all of them),
    # queues.NAME, workloads.NAME (one), then .field.field… (one field of it); * for every one: workloads.*.pods.
    keep: list[
        Annotated[StrictStr, Field(pattern=r"^(queues|workloads|steps)(\.[a-z0-9*][-a-z0-9]*)?(\.[a-zA-Z]+)*$")]
    ] = []


@dataclass(frozen=True)
class Task:
    """One task or challenge, read from its file."""

    kind: str  # "task" or "challenge"
    name: str  # quota-1, ticket-3: the file's stem
    goal: str
    runbook: str
    start: str  # the starting scenario's text
    path: Path

    @property
    def id(self) -> str:
        """The scenario's name when checked, and the record's: quota-task-1, challenge-ticket-3."""
        if self.kind == "task":
            lesson, _, n = self.name.rpartition("-")
            return f"{lesson}-task-{n}"
        return f"challenge-{self.name}"

    @property
    def lesson(self) -> str:
        return self.name.rpartition("-")[0] if self.kind == "task" else ""

    @property
    def namespace(self) -> str:
        """A task runs in its lesson's namespace, a challenge in the challenges' one (a class learner has both)."""
        return f"kailab-{self.lesson}" if self.kind == "task" else CHALLENGE_NAMESPACE

    @property
    def command(self) -> str:
        if self.kind == "task":
            return f"kailab lesson {self.lesson} --task {self.name.rpartition('-')[2]}"
        return f"kailab challenge {self.name}"

    def copy_path(self, cwd: Path | None = None) -> Path:
        """Where the learner's copy lives: kailab-tasks/<id>.yaml under the folder they work in."""
        return (cwd or Path.cwd()) / WORK_FOLDER / f"{self.id}.yaml"


def _read(path: Path, kind: str) -> tuple[Task, YamlFile[ScenarioError], dict, TaskFile]:
    f = YamlFile(path, ScenarioError, HINT)
    data = f.read_mapping("a task file is a mapping (goal:, scenario:, check:)")
    doc = f.check(TaskFile, data)
    task = Task(kind, path.stem, " ".join(doc.goal.split()), doc.runbook, doc.scenario, path)
    return task, f, data, doc


def load_task(path: Path, kind: str = "task") -> Task:
    return _read(path, kind)[0]


def lesson_tasks(lesson: str) -> list[Task]:
    """A lesson's tasks, 1, 2, …"""
    found = sorted(folder("task").glob(f"{lesson}-*.yaml"), key=lambda p: (len(p.stem), p.stem))
    return [load_task(p) for p in found if p.stem.rpartition("-")[0] == lesson]


def lesson_task(lesson: str, number: int) -> Task:
    path = folder("task") / f"{lesson}-{number}.yaml"
    if not path.is_file():
        have = [t.name.rpartition("-")[2] for t in lesson_tasks(lesson)]
        raise TaskError(
            f"Lesson {lesson!r} has no task {number}.",
            hint=f"Its tasks: {', '.join(have)}." if have else "See kailab lesson for the lessons.",
        )
    return load_task(path)


def challenges() -> list[Task]:
    found = sorted(folder("challenge").glob("*.yaml"), key=lambda p: (len(p.stem), p.stem))
    return [load_task(p, "challenge") for p in found]


def challenge(name: str) -> Task:
    path = folder("challenge") / f"{name}.yaml"
    if not path.is_file():
        raise TaskError(f"No challenge named {name!r}.", hint=f"Challenges: {', '.join(c.name for c in challenges())}.")
    return load_task(path, "challenge")


def give(task: Task, dest: Path) -> bool:
    """Write the starting file to ``dest`` unless a copy is there already (a learner's edits are never replaced).
    True if it was written."""
    from kailab import outfile

    return outfile.create_new(
        dest, f"# {task.kind.capitalize()} {task.name}: {task.goal}\n# Check it: {task.command}\n{task.start}"
    )


def checked(task: Task, learner_file: Path) -> Scenario:
    """The learner's file (read and checked as any scenario: errors name its file and line) with the task's hidden
    check after its steps, under the task's name and namespace and with the starting file's fleet requirements."""
    mine = load_scenario(learner_file)
    _, f, data, doc = _read(task.path, task.kind)
    start = _start_scenario(task)
    _keeps_what_is_checked(start, mine, more_steps(start, f, data, "check", doc.check), learner_file, task)
    for i, rule in enumerate(doc.keep):
        _kept(rule, start, mine, learner_file, task, where=f"{task.path}:{f.line_of(data, ('keep', i))}")
    hidden = tuple(_unplaced(s) for s in more_steps(mine, f, data, "check", doc.check))
    return dataclasses.replace(
        mine,
        name=task.id,
        title=start.title,
        lesson="",
        namespace=task.namespace,
        requires=start.requires,
        steps=(*mine.steps, *hidden),
    )


def _start_scenario(task: Task) -> Scenario:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{task.id}.yaml"
        path.write_text(task.start)
        try:
            return load_scenario(path)
        except ScenarioError as e:  # the lab's own file is wrong: say which
            raise TaskError(f"{task.path}: its starting scenario does not load: {e.message}") from None


def _keeps_what_is_checked(start: Scenario, mine: Scenario, hidden: tuple[Step, ...], path: Path, task: Task) -> None:
    """The workloads and queues the hidden check is about must still be in the learner's file, applied."""
    applied = {s.workload for s in mine.steps if isinstance(s, model.Apply)}
    queues = {q.name for q in mine.queues} | {w.queue for w in mine.workloads if w.queue}
    for e in (e for s in hidden for e in getattr(s, "expectations", ())):
        names = [e.workload, e.want if e.measure == "bound_before" else None]
        for name in filter(None, names):
            if name not in applied:
                raise TaskError(
                    f"{path}: the {task.kind} checks workload '{name}', which your file no longer "
                    + ("declares" if name not in {w.name for w in mine.workloads} else "applies")
                    + f": keep it (and its '- apply: {name}' step).",
                    hint=f"To start again from the starting file, delete {path} and run {task.command}",
                )
        if e.queue and e.queue not in queues:
            raise TaskError(
                f"{path}: the {task.kind} checks queue '{e.queue}', which your file no longer declares or uses: "
                "keep it.",
                hint=f"To start again from the starting file, delete {path} and run {task.command}",
            )


def _kept(rule: str, start: Scenario, mine: Scenario, path: Path, task: Task, where: str) -> None:
    """The part of the starting file ``rule`` names (a ``keep:`` item) is unchanged in the learner's ``mine``."""
    section, _, rest = rule.partition(".")
    name, _, fields = rest.partition(".")
    if section == "steps":
        if tuple(map(_unplaced, start.steps)) != tuple(map(_unplaced, mine.steps)):
            raise _changed(path, task, "its steps", "change none of them")
        return
    theirs = {x.name: x for x in getattr(start, section)}
    yours = {x.name: x for x in getattr(mine, section)}
    kind = section[:-1]  # queue, workload
    if not name:
        if set(theirs) != set(yours):
            added, gone = sorted(set(yours) - set(theirs)), sorted(set(theirs) - set(yours))
            what = "; ".join([*(f"adds {kind} '{n}'" for n in added), *(f"removes {kind} '{n}'" for n in gone)])
            raise _changed(path, task, f"its {section}", f"your file {what}")
    names = theirs if name in ("", "*") else [name]
    for n in names:
        if n not in theirs:  # the task's own file names what its starting file has not
            raise TaskError(f"{where}: keep: {rule!r}: the starting scenario has no {kind} '{n}'.")
        if n not in yours:
            raise _changed(path, task, f"{kind} '{n}'", "your file removes it", mine.workload_lines.get(n, 0))
        a, b = theirs[n], yours[n]
        for field in filter(None, fields.split(".")):
            if not hasattr(a, field):
                raise TaskError(f"{where}: keep: {rule!r}: a {kind} has no field '{field}'.")
            a, b = getattr(a, field), getattr(b, field)
        if a != b:
            label = f"{kind} '{n}'" + (f" {fields}" if fields else "")
            how = f"{_shown(a)} there, {_shown(b)} in yours" if fields else _differences(a, b)
            raise _changed(path, task, label, how, mine.workload_lines.get(n, 0))


def _changed(path: Path, task: Task, what: str, how: str, line: int = 0) -> TaskError:
    return TaskError(
        f"{path}{f':{line}' if line else ''}: the {task.kind} asks you to keep {what} as in the starting file ({how}).",
        hint=f"Put it back; the goal says what you may change: {task.goal}",
    )


def _differences(a: values.FileModel, b: values.FileModel) -> str:
    """Which fields of one queue or workload differ: 'pods: 8 there, 16 in yours; gpus: …'."""
    da, db = a.model_dump(), b.model_dump()
    return "; ".join(f"{k}: {_shown(da[k])} there, {_shown(db[k])} in yours" for k in da if da[k] != db[k])


def _shown(value) -> str:
    if isinstance(value, values.FileModel):
        value = value.model_dump(exclude_defaults=True)
    return "unset" if value is None else str(value)


def _unplaced(step: Step) -> Step:
    """A hidden step without its line: its line is in the task's file, not the learner's."""
    if isinstance(step, model.Wait):
        return dataclasses.replace(
            step, line=0, expectations=tuple(dataclasses.replace(e, line=0) for e in step.expectations)
        )
    return dataclasses.replace(step, line=0)
