"""Reads a scenario file and checks it before anything is applied.

Every error names the file and line: ``exercises/gang.yaml:14: workload 'gang' has pods: -1; want a whole number ≥ 0``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from kailab.errors import ScenarioError
from kailab.paths import MANIFESTS
from kailab.scenarios.model import (
    Expectation,
    PriorityClassSpec,
    QueueSpec,
    Resource,
    Scenario,
    Step,
    WorkloadSpec,
)

LESSON_QUEUES = MANIFESTS / "queues.yaml"
MEASURES = {"running", "pending", "bound", "evicted", "allocated", "unschedulable", "all_or_none", "reason", "bound_before"}
MEASURE_ALIASES = {"allOrNone": "all_or_none", "boundBefore": "bound_before", "gpus": "allocated"}
WANT = re.compile(r"^\s*(?:(>=|<=|>|<|==)?\s*(\d+)|(\d+)\s*\.\.\s*(\d+))\s*$")
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
KINDS = ("Job", "Pod", "PodGroup", "Deployment")


class _Map(dict):
    """A YAML mapping that remembers the line of itself and of each key."""

    line = 0
    key_lines: dict


class _LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        mapping = _Map(super().construct_mapping(node, deep=deep))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {k.value: k.start_mark.line + 1 for k, _ in node.value if hasattr(k, "value")}
        return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)


class _Reader:
    """Validation helpers that know the file, so each error says file:line."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: Any, message: str) -> None:
        line = where if isinstance(where, int) else getattr(where, "line", 0)
        raise ScenarioError(f"{self.path}:{line}: {message}", hint="The scenario format is described in exercises/README.md.")

    def line_of(self, mapping: Any, key: str) -> int:
        return getattr(mapping, "key_lines", {}).get(key, getattr(mapping, "line", 0))

    def mapping(self, value: Any, where: Any, what: str) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"{what} must be a mapping (key: value), not {type(value).__name__}")
        return value

    def only(self, mapping: dict, allowed: set[str], what: str) -> None:
        for key in mapping:
            if key not in allowed:
                self.fail(self.line_of(mapping, key), f"{what} has an unknown key '{key}'; known keys: {', '.join(sorted(allowed))}")

    def integer(self, mapping: dict, key: str, what: str, minimum: int = 0) -> int:
        value = mapping[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(self.line_of(mapping, key), f"{what} has {key}: {value!r}; want a whole number ≥ {minimum}")
        return value

    def duration(self, mapping: dict, key: str, what: str) -> float:
        value = str(mapping[key])
        m = DURATION.match(value)
        if not m:
            self.fail(self.line_of(mapping, key), f"{what} has {key}: {value!r}; want a duration such as 30s, 500ms or 2m")
        number, unit = float(m.group(1)), m.group(2) or "s"
        return number / 1000 if unit == "ms" else number * 60 if unit == "m" else number


def load_scenario(path: Path | str) -> Scenario:
    """Parse and check one scenario file; raise ScenarioError with file:line on any problem."""
    path = Path(path)
    r = _Reader(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(f"Cannot read scenario {path}: {e.strerror}.") from e
    try:
        doc = yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        r.fail(mark.line + 1 if mark else 0, f"not valid YAML: {getattr(e, 'problem', None) or e}")
    doc = r.mapping(doc, 1, "a scenario file")
    r.only(doc, {"name", "title", "lesson", "namespace", "queues", "priorityClasses", "workloads", "steps", "verify", "missingQueues"}, "the scenario")
    for key in ("name", "steps"):
        if key not in doc:
            r.fail(doc, f"the scenario needs '{key}'")
    name = str(doc["name"])
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
        r.fail(r.line_of(doc, "name"), f"name {name!r} must be lower-case letters, digits and '-'")

    queues = _queues(r, doc.get("queues", []), r.line_of(doc, "queues"))
    pcs = tuple(_priority_class(r, pc) for pc in _list(r, doc.get("priorityClasses", []), r.line_of(doc, "priorityClasses"), "priorityClasses"))
    workloads = tuple(_workload(r, w) for w in _list(r, doc.get("workloads", []), r.line_of(doc, "workloads"), "workloads"))
    names = [w.name for w in workloads]
    for w in workloads:
        if names.count(w.name) > 1:
            r.fail(w.line, f"two workloads are named '{w.name}'")
    missing = tuple(str(q) for q in _list(r, doc.get("missingQueues", []), r.line_of(doc, "missingQueues"), "missingQueues"))
    queue_names = {q.name for q in queues} | {"default-queue"} | set(missing)
    steps = tuple(_step(r, s, set(names)) for s in _list(r, doc["steps"], r.line_of(doc, "steps"), "steps"))
    for w in workloads:
        if w.queue and queue_names != {"default-queue"} and w.queue not in queue_names:
            r.fail(w.line, f"workload '{w.name}' uses queue '{w.queue}', which this scenario does not declare (declared: {', '.join(sorted(queue_names))})")
    return Scenario(
        name=name,
        title=str(doc.get("title", name)),
        path=str(path),
        lesson=str(doc.get("lesson", "")),
        namespace=str(doc.get("namespace", f"kailab-{name}")),
        queues=queues,
        priority_classes=pcs,
        workloads=workloads,
        steps=steps,
        verify=str(doc.get("verify", "")),
        missing_queues=missing,
    )


def _list(r: _Reader, value: Any, line: int, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        r.fail(line, f"'{what}' must be a list")
    return value


def _queues(r: _Reader, value: Any, line: int) -> tuple[QueueSpec, ...]:
    """``queues: lesson`` takes manifests/queues.yaml; a list declares queues here."""
    if value == "lesson":
        return load_queue_file(LESSON_QUEUES)
    queues = []
    for q in _list(r, value, line, "queues"):
        if q == "lesson":
            queues.extend(load_queue_file(LESSON_QUEUES))
        else:
            queues.append(queue_spec(r, q))
    return tuple(queues)


def load_queue_file(path: Path) -> tuple[QueueSpec, ...]:
    """Read KAI Queue objects (``scheduling.run.ai/v2``) into the short form scenarios use."""
    r = _Reader(path)
    try:
        docs = [d for d in yaml.load_all(path.read_text(), Loader=_LineLoader) if d]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        r.fail(mark.line + 1 if mark else 0, f"not valid YAML: {getattr(e, 'problem', None) or e}")
    out = []
    for d in docs:
        if d.get("kind") != "Queue":
            r.fail(d, f"expected kind: Queue, found {d.get('kind')!r}")
        spec = d.get("spec") or {}
        short = _Map({"name": d["metadata"]["name"], **({"parent": spec["parentQueue"]} if "parentQueue" in spec else {}),
                      **({"priority": spec["priority"]} if "priority" in spec else {}), **(spec.get("resources") or {})})
        short.line = d.line
        short.key_lines = getattr(spec.get("resources") or {}, "key_lines", {})
        out.append(queue_spec(r, short))
    return tuple(out)


def queue_spec(r: _Reader, q: Any) -> QueueSpec:
    q = r.mapping(q, 0, "a queue")
    r.only(q, {"name", "parent", "priority", "gpu", "cpu", "memory", "preemptMinRuntime", "reclaimMinRuntime"}, "a queue")
    if "name" not in q:
        r.fail(q, "a queue needs a name")

    def res(key: str, default: Resource) -> Resource:
        if key not in q:
            return default
        spec = r.mapping(q[key], r.line_of(q, key), f"queue '{q['name']}' {key}")
        r.only(spec, {"quota", "limit", "overQuotaWeight"}, f"queue '{q['name']}' {key}")
        for k, v in spec.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (v < 0 and v != -1):
                r.fail(r.line_of(spec, k), f"queue '{q['name']}' {key}.{k} is {v!r}; want a number ≥ 0, or -1 for unlimited")
        # An omitted limit is 0 to KAI; kailab writes -1 unless the file sets one.
        return Resource(spec.get("quota", 0), spec.get("limit", -1), spec.get("overQuotaWeight", 1))

    priority = q.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        r.fail(r.line_of(q, "priority"), f"queue '{q['name']}' priority must be a whole number")
    return QueueSpec(
        name=str(q["name"]),
        parent=q.get("parent"),
        priority=priority,
        gpu=res("gpu", Resource()),
        cpu=res("cpu", Resource(-1, -1)),
        memory=res("memory", Resource(-1, -1)),
        preempt_min_runtime=q.get("preemptMinRuntime"),
        reclaim_min_runtime=q.get("reclaimMinRuntime"),
    )


def _priority_class(r: _Reader, pc: Any) -> PriorityClassSpec:
    pc = r.mapping(pc, 0, "a priority class")
    r.only(pc, {"name", "value", "preemptible"}, "a priority class")
    if "name" not in pc or "value" not in pc:
        r.fail(pc, "a priority class needs name and value")
    return PriorityClassSpec(str(pc["name"]), r.integer(pc, "value", "priority class", minimum=-(2**31)), pc.get("preemptible"))


def _workload(r: _Reader, w: Any) -> WorkloadSpec:
    w = r.mapping(w, 0, "a workload")
    r.only(w, {"name", "kind", "pods", "gpus", "queue", "scheduler", "priorityClass", "preemptibility",
               "minMember", "completeAfter", "cpu", "labels", "annotations"}, "a workload")
    if "name" not in w:
        r.fail(w, "a workload needs a name")
    what = f"workload '{w['name']}'"
    kind = w.get("kind", "Job")
    if kind not in KINDS:
        r.fail(r.line_of(w, "kind"), f"{what} has kind {kind!r}; want one of {', '.join(KINDS)}")
    pods = r.integer(w, "pods", what) if "pods" in w else 1
    gpus = r.integer(w, "gpus", what) if "gpus" in w else 1
    min_member = r.integer(w, "minMember", what, minimum=1) if "minMember" in w else None
    if min_member is not None and min_member > pods:
        r.fail(r.line_of(w, "minMember"), f"{what} has minMember {min_member} but only {pods} pods; the gang could never start")
    if min_member is not None and kind == "Deployment":
        r.fail(r.line_of(w, "minMember"), f"{what}: KAI gives a Deployment one PodGroup per pod, so minMember has no effect; use a Job or a PodGroup")
    pre = w.get("preemptibility")
    if pre is not None and pre not in ("preemptible", "non-preemptible"):
        r.fail(r.line_of(w, "preemptibility"), f"{what} has preemptibility {pre!r}; want preemptible or non-preemptible")
    if "completeAfter" in w:
        r.duration(w, "completeAfter", what)
    for key in ("labels", "annotations"):
        if key in w:
            r.mapping(w[key], r.line_of(w, key), f"{what} {key}")
    return WorkloadSpec(
        name=str(w["name"]),
        kind=kind,
        pods=pods,
        gpus=gpus,
        queue=w.get("queue"),
        scheduler=str(w.get("scheduler", "kai-scheduler")),
        priority_class=w.get("priorityClass"),
        preemptibility=pre,
        min_member=min_member,
        complete_after=str(w["completeAfter"]) if "completeAfter" in w else None,
        cpu=str(w["cpu"]) if "cpu" in w else None,
        labels={str(k): str(v) for k, v in (w.get("labels") or {}).items()},
        annotations={str(k): str(v) for k, v in (w.get("annotations") or {}).items()},
        line=w.line,
    )


def _step(r: _Reader, s: Any, workloads: set[str]) -> Step:
    s = r.mapping(s, 0, "a step")
    actions = [k for k in s if k in ("apply", "delete", "scale", "queue", "wait", "expect")]
    if len(actions) != 1:
        r.fail(s, "a step needs exactly one of: apply, delete, scale, queue, wait, expect")
    action = actions[0]
    r.only(s, {action, "timeout", "note"}, f"a '{action}' step")
    timeout = r.duration(s, "timeout", f"the '{action}' step") if "timeout" in s else 30.0
    note = str(s.get("note", ""))
    body = s[action]
    line = r.line_of(s, action)

    def known(name: Any, at: int) -> str:
        if name not in workloads:
            r.fail(at, f"step '{action}' names workload {name!r}, which the scenario does not declare")
        return str(name)

    if action in ("apply", "delete"):
        return Step(action, workload=known(body, line), timeout=timeout, note=note, line=line)
    if action == "scale":
        body = r.mapping(body, line, "a scale step")
        r.only(body, {"workload", "pods"}, "a scale step")
        return Step(action, workload=known(body.get("workload"), line), pods=r.integer(body, "pods", "a scale step"),
                    timeout=timeout, note=note, line=line)
    if action == "queue":
        return Step(action, queue=queue_spec(r, body), timeout=timeout, note=note, line=line)
    entries = body if isinstance(body, list) else [body]
    checks = tuple(e for entry in entries for e in _expectations(r, entry, workloads))
    if not checks:
        r.fail(line, f"an '{action}' step needs at least one condition")
    return Step(action, expectations=checks, timeout=timeout, note=note, line=line)


def _expectations(r: _Reader, entry: Any, workloads: set[str]) -> list[Expectation]:
    """One mapping such as ``{workload: gang, running: 0, pending: 10}`` → one Expectation per measure."""
    entry = r.mapping(entry, 0, "a condition")
    allowed = MEASURES | set(MEASURE_ALIASES) | {"queue", "workload", "title", "stable"}
    r.only(entry, allowed, "a condition")
    workload = entry.get("workload")
    if workload is not None and workload not in workloads:
        r.fail(r.line_of(entry, "workload"), f"a condition names workload {workload!r}, which the scenario does not declare")
    stable = r.duration(entry, "stable", "a condition") if "stable" in entry else 0.0
    out = []
    for key, value in entry.items():
        measure = MEASURE_ALIASES.get(key, key)
        if measure not in MEASURES:
            continue
        line = r.line_of(entry, key)
        if measure == "all_or_none":
            if value is not True:
                r.fail(line, "allOrNone takes true")
            want = "true"
        elif measure == "reason":
            want = str(value)
        elif measure == "bound_before":
            if value not in workloads:
                r.fail(line, f"boundBefore names workload {value!r}, which the scenario does not declare")
            want = str(value)
        else:
            want = str(value)
            if not WANT.match(want):
                r.fail(line, f"{key}: {value!r} is not a count; want 8, >=8, <=8, >8, <8 or 8..12")
        if measure in ("all_or_none", "bound_before") and not workload:
            r.fail(line, f"{key} is about one workload: add 'workload: NAME'")
        title = str(entry.get("title", "")) or _title(measure, want, entry.get("queue"), workload)
        out.append(Expectation(title=title, measure=measure, want=want, queue=entry.get("queue"),
                               workload=workload, stable=stable, line=line))
    if len(out) > 1 and "title" in entry:
        out = [Expectation(**{**e.__dict__, "title": f"{entry['title']} ({e.measure.replace('_', ' ')})"}) for e in out]
    return out


def _title(measure: str, want: str, queue: str | None, workload: str | None) -> str:
    who = workload or queue or "all pods"
    words = {
        "running": f"{who}: pods Running",
        "pending": f"{who}: pods Pending",
        "bound": f"{who}: pods bound to a node",
        "evicted": f"{who}: pods evicted or preempted",
        "allocated": f"{who}: GPUs allocated",
        "unschedulable": f"{who}: pods marked unschedulable",
        "all_or_none": f"{who}: gang binds all or none",
        "reason": f"{who}: reason given for waiting",
        "bound_before": f"{who} bound before {want}",
    }
    return words[measure]


def parse_want(want: str) -> tuple[str, int, int | None]:
    """``">=8"`` → (">=", 8, None); ``"8..12"`` → ("..", 8, 12); ``"8"`` → ("==", 8, None)."""
    m = WANT.match(want)
    if not m:
        raise ValueError(want)
    if m.group(3) is not None:
        return "..", int(m.group(3)), int(m.group(4))
    return m.group(1) or "==", int(m.group(2)), None
