"""Reads a scenario file and checks it, whole, before anything is applied.

The words are declared in ``objects.py``, ``measures.py``, ``steps.py`` and ``schema.py``; what needs the whole file (a queue's parent exists, a
step names a declared workload, a workload is applied before it is deleted) is checked here, in
time linear in the file's size. Every error names the file and line:
``exercises/gang.yaml:14: workloads[2].pods: -1 — want a whole number ≥ 0``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kailab.errors import ScenarioError
from kailab.labels import DEFAULT_SCHEDULER_NAME, KAI_SCHEDULER_NAME
from kailab.paths import MANIFESTS
from kailab.scenarios import measures, model, objects, schema, steps
from kailab.scenarios.model import Expectation, Prediction, Scenario, Step, Window
from kailab.scenarios.objects import CONTROLLED, QueueFile, WorkloadFile
from kailab.scenarios.values import go_seconds
from kailab.yamlfile import YamlFile

LESSON_QUEUES = MANIFESTS / "queues.yaml"
FORMAT_HINT = "The scenario format is described in exercises/README.md."
# Priority classes every KAI install has (its chart's four) and Kubernetes' own.
KNOWN_PRIORITY_CLASSES = {
    "train",
    "build-preemptible",
    "build",
    "inference",
    "system-cluster-critical",
    "system-node-critical",
}
SCHEDULERS = (KAI_SCHEDULER_NAME, DEFAULT_SCHEDULER_NAME)


def load_scenario(path: Path | str) -> Scenario:
    """Parse and check one scenario file; raise ScenarioError with file:line on any problem."""
    f = YamlFile(Path(path), ScenarioError, FORMAT_HINT)
    data = f.read_mapping("a scenario file is a mapping (name:, workloads:, steps: …)")
    return _Build(f, data).scenario(f.check(schema.ScenarioFile, data))


def more_steps(scenario: Scenario, f: YamlFile[ScenarioError], data: Any, key: str, given: list) -> tuple[Step, ...]:
    """Steps of another file (``f``; ``given`` are ``data[key]`` checked against the step format), built against
    ``scenario``'s workloads and queues: a task's hidden check, played after the scenario's own steps. An error
    names ``f``'s file and line."""
    build = _Build(f, data, steps_key=key)
    build.workloads_by_name = {w.name: w for w in scenario.workloads}
    build.queue_names = {q.name for q in scenario.queues}
    build.used_queues = build.queue_names | {w.queue for w in scenario.workloads if w.queue}
    steps = tuple(build.step(i, s) for i, s in enumerate(given))
    build.order((*scenario.steps, *steps))
    return steps


def load_queue_file(path: Path) -> tuple[QueueFile, ...]:
    """KAI Queue objects (``scheduling.run.ai/v2``, as ``kubectl apply`` takes them) → queues."""
    f = YamlFile(path, ScenarioError, "A queue file holds KAI Queue objects, as manifests/queues.yaml does.")
    queues = []
    for doc in f.read(documents=True):
        obj = f.check(objects.QueueObject, doc)
        q, r = obj.spec, obj.spec.resources
        given: dict[str, Any] = {
            "parent": q.parentQueue,
            "priority": q.priority,
            "gpu": r.gpu,
            "cpu": r.cpu,
            "memory": r.memory,
            "preemptMinRuntime": q.preemptMinRuntime,
            "reclaimMinRuntime": q.reclaimMinRuntime,
        }
        queues.append(QueueFile(name=obj.metadata.name, **{k: v for k, v in given.items() if v is not None}))
    return tuple(queues)


class _Build:
    """The checks across the whole file, and the scenario they yield."""

    def __init__(self, f: YamlFile[ScenarioError], data: Any, steps_key: str = "steps"):
        self.f, self.data, self.steps_key = f, data, steps_key

    def fail(self, loc: tuple, message: str) -> ScenarioError:
        return self.f.fail(self.f.line_of(self.data, loc), message)

    def line(self, *loc: Any) -> int:
        return self.f.line_of(self.data, loc)

    def scenario(self, doc: schema.ScenarioFile) -> Scenario:
        queues = self.queues(doc)
        self.queue_names = {q.name for q in queues}
        self.queues_by_name = {q.name: q for q in queues}
        self.missing_queues = set(doc.missingQueues)
        self.declared_parents = {q.name: q.parent for q in queues if q.parent is not None}
        self.workloads_by_name = self.workloads(
            doc, self.queue_names | set(doc.missingQueues), self.priority_classes(doc)
        )
        self.topologies(doc)
        self.used_queues = self.queue_names | {w.queue for w in self.workloads_by_name.values() if w.queue}
        steps = tuple(self.step(i, s) for i, s in enumerate(doc.steps))
        self.order(steps)
        self.leaf_queues(doc, queues, steps)
        predictions = self.predictions(doc, steps)
        return Scenario(
            name=doc.name,
            title=doc.title or doc.name,
            path=str(self.f.path),
            lesson=doc.lesson,
            namespace=doc.namespace or f"kailab-{doc.name}",
            queues=queues,
            priority_classes=tuple(doc.priorityClasses),
            workloads=tuple(self.workloads_by_name.values()),
            steps=steps,
            verify=doc.verify,
            missing_queues=tuple(doc.missingQueues),
            requires=doc.requires,
            workload_lines={w.name: self.line("workloads", i) for i, w in enumerate(doc.workloads)},
            topologies=tuple(doc.topologies),
            predictions=predictions,
            namespace_quota={k: str(v) for k, v in (doc.namespaceQuota or {}).items()},
            warnings=self.warnings(doc, queues, steps),
        )

    def warnings(self, doc: schema.ScenarioFile, queues: tuple[QueueFile, ...], steps: tuple[Step, ...]) -> tuple:
        """What KAI accepts but may surprise, each at its line: a queue's quota above its limit (declared or set by a
        step)."""
        items = doc.queues if isinstance(doc.queues, list) else []
        listed = {q.name: i for i, q in enumerate(items) if isinstance(q, QueueFile)}
        said = [
            f"{self.f.path.name}:{self.line('queues', listed[q.name]) if q.name in listed else self.line('queues')}: {w}"
            for q in queues
            for w in q.surprises()
        ]
        said += [
            f"{self.f.path.name}:{s.line}: {w}"
            for s in steps
            if isinstance(s, model.SetQueue)
            for w in s.queue.surprises()
        ]
        return tuple(said)

    def queues(self, doc: schema.ScenarioFile) -> tuple[QueueFile, ...]:
        """``queues: lesson`` takes manifests/queues.yaml; a list declares queues here (and may include lesson)."""
        items = ["lesson"] if doc.queues == "lesson" else list(doc.queues)
        out: list[tuple[tuple, QueueFile]] = []
        for i, item in enumerate(items):
            loc = ("queues",) if doc.queues == "lesson" else ("queues", i)
            specs = (item,) if isinstance(item, QueueFile) else load_queue_file(LESSON_QUEUES)  # else "lesson"
            out.extend((loc, s) for s in specs)
        seen: dict[str, tuple] = {}
        for loc, q in out:
            if q.name in seen:
                raise self.fail(
                    loc,
                    f"two queues are named '{q.name}'"
                    + (" (one of them is a lesson queue)" if "lesson" in items else ""),
                )
            seen[q.name] = loc
        missing = set(doc.missingQueues)
        for loc, q in out:
            if q.name in missing:
                raise self.fail(loc, f"queue '{q.name}' is declared and also listed in missingQueues")
            if q.parent is not None and q.parent not in seen:
                raise self.fail(
                    loc, f"queue '{q.name}' names parent '{q.parent}', which this scenario does not declare"
                )
        parent = {q.name: q.parent for _, q in out}
        done: set[str] = set()  # queues whose chain of parents is known to end: each is walked once
        for loc, q in out:
            chain, at = [q.name], q.parent
            while at is not None and at not in done:
                if at in chain:
                    raise self.fail(loc, f"queues form a loop of parents: {' → '.join(chain + [at])}")
                chain.append(at)
                at = parent.get(at)
            done.update(chain)
        return tuple(q for _, q in out)

    def priority_classes(self, doc: schema.ScenarioFile) -> set[str]:
        """The priority class names a workload may use: KAI's, Kubernetes' and the declared ones."""
        known = set(KNOWN_PRIORITY_CLASSES)
        for i, pc in enumerate(doc.priorityClasses):
            if pc.name in known:
                raise self.fail(
                    ("priorityClasses", i, "name"),
                    f"priority class '{pc.name}' is declared twice, or is one KAI or Kubernetes already has",
                )
            known.add(pc.name)
        for i, name in enumerate(doc.missingPriorityClasses):
            if name in known:
                raise self.fail(
                    ("missingPriorityClasses", i),
                    f"priority class '{name}' exists (KAI's, Kubernetes' or declared): it cannot also be missing",
                )
        return known | set(doc.missingPriorityClasses)

    def workloads(self, doc: schema.ScenarioFile, queues: set[str], known_pcs: set[str]) -> dict[str, WorkloadFile]:
        out: dict[str, WorkloadFile] = {}
        for i, w in enumerate(doc.workloads):
            if w.name in out:
                raise self.fail(("workloads", i, "name"), f"two workloads are named '{w.name}'")
            # A scenario that declares no queues runs on whatever queues the cluster has.
            if w.queue and queues and w.queue not in queues and w.queue != "default-queue":
                raise self.fail(
                    ("workloads", i, "queue"),
                    f"workload '{w.name}' uses queue '{w.queue}', which this "
                    f"scenario does not declare (declared: {', '.join(sorted(queues))})",
                )
            joining = sum(o.pods for o in doc.workloads if o.podGroup == w.name)  # pods that join its PodGroup
            if w.minMember is not None and w.minMember > w.pods + joining:
                raise self.fail(
                    ("workloads", i, "minMember"),
                    f"workload '{w.name}' has minMember {w.minMember} but "
                    f"only {w.pods + joining} pods: the gang could never start",
                )
            if w.minMember is not None and w.kind in CONTROLLED:
                made = "one PodGroup per pod" if w.kind == "Deployment" else "one PodGroup of minMember 1"
                raise self.fail(
                    ("workloads", i, "minMember"),
                    f"workload '{w.name}': KAI gives a {w.kind} {made} and reads no gang size for it, "
                    "so minMember has no effect; use a Job or a PodGroup",
                )
            if w.scheduler not in (*SCHEDULERS, *doc.missingSchedulers):
                raise self.fail(
                    ("workloads", i, "scheduler"),
                    f"workload '{w.name}' names scheduler '{w.scheduler}'; "
                    f"the lab has {' and '.join(SCHEDULERS)} (list a name under missingSchedulers to "
                    "show a pod that no scheduler looks at)",
                )
            for pc_key in ("priorityClass", "priorityClassName", "priorityClassLabel"):
                name = getattr(w, pc_key)
                if name and name not in known_pcs:
                    raise self.fail(
                        ("workloads", i, pc_key),
                        f"workload '{w.name}' uses priority class "
                        f"'{name}', which is neither KAI's ({', '.join(sorted(KNOWN_PRIORITY_CLASSES))}) "
                        "nor declared under priorityClasses (list a name under missingPriorityClasses to show a "
                        "misspelt one)",
                    )
            if w.kind in CONTROLLED and w.fraction:
                raise self.fail(
                    ("workloads", i, "gpus"),
                    f"workload '{w.name}': kailab makes fractional pods as "
                    "Jobs, Pods or PodGroups; use one of those kinds",
                )
            if w.podGroup is not None:
                host = next((o for o in doc.workloads if o.name == w.podGroup), None)
                if host is None or host.kind != "PodGroup":
                    raise self.fail(
                        ("workloads", i, "podGroup"),
                        f"workload '{w.name}' joins PodGroup '{w.podGroup}', which is not a workload of kind: PodGroup "
                        "in this scenario (declare one: its PodGroup is the one the pods join)",
                    )
            groups: set[str] = set()
            for j, g in enumerate(w.subGroups):
                if g.minMember is not None and g.minMember > g.pods:
                    raise self.fail(
                        ("workloads", i, "subGroups", j, "minMember"),
                        f"subgroup '{g.name}' has minMember {g.minMember} but only {g.pods} pods: it could never start",
                    )
                if g.name in groups:
                    raise self.fail(("workloads", i, "subGroups", j, "name"), f"two subgroups are named '{g.name}'")
                groups.add(g.name)
            out[w.name] = w
        return out

    def topologies(self, doc: schema.ScenarioFile) -> None:
        """Topology names are unique; a workload's topology constraint names a declared Topology and its levels,
        the preferred level below the required one (KAI's docs/topology/: required bounds, preferred narrows)."""
        declared: dict[str, objects.TopologyFile] = {}
        for i, t in enumerate(doc.topologies):
            if t.name in declared:
                raise self.fail(("topologies", i, "name"), f"two topologies are named '{t.name}'")
            declared[t.name] = t
        for i, w in enumerate(doc.workloads):
            c = w.topology
            if c is None:
                continue
            topology = declared.get(c.name)
            if topology is None:
                raise self.fail(
                    ("workloads", i, "topology", "name"),
                    f"workload '{w.name}' names topology '{c.name}', which this scenario does not declare under "
                    f"topologies (declared: {', '.join(sorted(declared)) or 'none'}); KAI would leave it Pending",
                )
            levels = ", ".join(lv.alias or lv.nodeLabel for lv in topology.levels)
            at: dict[str, int] = {}
            for key in ("required", "preferred"):
                name = getattr(c, key)
                if name is None:
                    continue
                index = topology.level(name)
                if index is None:
                    raise self.fail(
                        ("workloads", i, "topology", key),
                        f"topology '{topology.name}' has no level '{name}' (its levels, by nodeLabel or alias: {levels})",
                    )
                at[key] = index
            if len(at) == 2 and at["preferred"] <= at["required"]:
                raise self.fail(
                    ("workloads", i, "topology", "preferred"),
                    f"preferred level '{c.preferred}' is not below required level '{c.required}' in topology "
                    f"'{topology.name}' (levels, widest first: {levels}): the required level bounds the domain, the "
                    "preferred one narrows it",
                )

    def step(self, i: int, s: steps.StepFile) -> Step:
        word = steps.STEP_OF[s.action]
        return word.build(getattr(s, s.action), _At(self, i, s))

    def order(self, steps: tuple[Step, ...]) -> None:
        """A workload is applied before a step deletes or scales it, and some step applies every workload a
        condition is about (else the condition could only count nothing)."""
        applied: set[str] = set()
        deleted: set[str] = set()
        for step in steps:
            if isinstance(step, model.Apply):
                applied.add(step.workload)
            elif isinstance(step, model.DeletePods) and step.workload is not None and step.workload not in applied:
                raise self.f.fail(
                    step.line,
                    f"this step deletes pods of workload '{step.workload}', which no earlier step applies (or a "
                    f"step deleted), so it has none: add '- apply: {step.workload}' before it",
                )
            elif isinstance(step, (model.Delete, model.Scale)) and step.workload not in applied:
                verb = "deletes" if isinstance(step, model.Delete) else "scales"
                when = "after a step deleted it" if step.workload in deleted else "before any step applies it"
                raise self.f.fail(
                    step.line,
                    f"this step {verb} workload '{step.workload}' {when}, so there is "
                    f"nothing to {verb[:-1]}: add '- apply: {step.workload}' before it",
                )
            elif isinstance(step, model.Delete):
                applied.discard(step.workload)
                deleted.add(step.workload)
        ever = {s.workload for s in steps if isinstance(s, model.Apply)}
        for e in [p for s in steps for x in getattr(s, "expectations", ()) for p in x.parts()]:
            for name in (e.workload, e.want if e.measure in ("bound_before", "on_node_with") else None):
                if name and name not in ever:
                    raise self.f.fail(
                        e.line,
                        f"a condition is about workload '{name}', which no step applies, so it "
                        f"could only count nothing: add '- apply: {name}' to the steps",
                    )

    def predictions(self, doc: schema.ScenarioFile, steps: tuple[Step, ...]) -> tuple[Prediction, ...]:
        """Each prediction built by its kind (schema.PREDICTIONS), measured at an expect step the file has."""
        expects = sum(isinstance(s, model.Expect) for s in steps)
        applied = tuple(dict.fromkeys(s.workload for s in steps if isinstance(s, model.Apply)))
        seen: set[str] = set()
        out = []
        for i, p in enumerate(doc.predictions):
            if p.key in seen:
                raise self.fail(("predictions", i, "key"), f"two predictions are named '{p.key}'")
            seen.add(p.key)
            if not expects:
                raise self.fail(
                    ("predictions", i),
                    "a prediction is measured when an expect step is decided, and this scenario has none",
                )
            if p.at is not None and p.at > expects:
                raise self.fail(
                    ("predictions", i, "at"),
                    f"at: {p.at} names the scenario's expect step number {p.at}, but it has {expects} "
                    f"(at: 1 is the first; leave at: out for the last)",
                )
            out.append(p.kind.build(getattr(p, p.kind.word), _PredictionAt(self, i, p, expects, applied)))
        return tuple(out)

    def leaf_queues(self, doc: schema.ScenarioFile, queues: tuple[QueueFile, ...], steps: tuple[Step, ...]) -> None:
        """KAI schedules pods only from leaf queues: a workload on a parent queue waits forever, unless the file says
        it means that (``onParentQueue``)."""
        children: dict[str, str] = {}
        for q in [*queues, *(s.queue for s in steps if isinstance(s, model.SetQueue))]:
            if q.parent is not None:
                children.setdefault(q.parent, q.name)
        on_purpose = set(doc.onParentQueue)
        for i, w in enumerate(doc.workloads):
            if w.queue in children and w.name not in on_purpose:
                raise self.fail(
                    ("workloads", i, "queue"),
                    f"workload '{w.name}' is on queue '{w.queue}', the parent of "
                    f"'{children[w.queue]}': KAI schedules pods only from leaf queues; put it on "
                    f"'{children[w.queue]}' or another queue without children (or list '{w.name}' under onParentQueue "
                    "to show just that)",
                )

    def scope(self, c: Any, at: tuple) -> None:
        """A condition's (or a prediction's) workload and queue are the scenario's."""
        if c.workload is not None and c.workload not in self.workloads_by_name:
            raise self.fail(
                at + ("workload",), f"a condition names workload '{c.workload}', which the scenario does not declare"
            )
        missing_on_purpose = getattr(c, "queueExists", None) is False and c.queue in self.missing_queues
        if c.queue is not None and c.queue not in self.used_queues and not missing_on_purpose:
            raise self.fail(
                at + ("queue",),
                f"a condition is about queue '{c.queue}', which no queue or workload of this "
                "scenario declares, so it could only count nothing",
            )

    def expectations(self, c: Any, keys: dict, at: tuple) -> list[Expectation]:
        """One condition such as ``{workload: gang, running: 0, pending: 10}`` → one Expectation per measure;
        an either-or claim (``anyOf:``) → one Expectation that holds when one of its alternatives does."""
        if isinstance(c, measures.EitherFile):
            groups = tuple(
                tuple(self.expectations(alt, keys["anyOf"][k], at + ("anyOf", k))) for k, alt in enumerate(c.anyOf)
            )
            said = [" and ".join(f"{e.title} = {e.want}" for e in g) for g in groups]
            return [
                Expectation(
                    title=c.title or " or ".join(said),
                    measure="any_of",
                    want=" or ".join(said),
                    stable=float(c.stable or 0.0),
                    line=self.line(*at, "anyOf"),
                    needs=next((e.needs for g in groups for e in g if e.needs), ""),
                    either=groups,
                )
            ]
        workloads = self.workloads_by_name
        self.scope(c, at)
        for word in ("boundBefore", "onNodeWith"):
            other = getattr(c, word)
            if other is not None and other not in workloads:
                raise self.fail(at + (word,), f"{word} names workload '{other}', which the scenario does not declare")
        if c.subGroup is not None:
            subgroups = {g.name for g in workloads[c.workload].subGroups}
            if c.subGroup not in subgroups:
                raise self.fail(
                    at + ("subGroup",),
                    f"workload '{c.workload}' has no subgroup '{c.subGroup}'"
                    + (f" (its subgroups: {', '.join(sorted(subgroups))})" if subgroups else ""),
                )
        who = (
            " ".join(
                filter(None, [c.workload, c.subGroup and f"subgroup {c.subGroup}", c.queue, c.node and f"on {c.node}"])
            )
            or "all pods"
        )
        window = self.window(c.throughWindow, at + ("throughWindow",)) if c.throughWindow is not None else None
        out = []
        for key in keys:  # in the file's order: the verdict's rows keep it
            m = measures.MEASURE_OF_KEY.get(key)
            if m is None:
                continue
            value = getattr(c, m.word)
            want = m.want(value, keys[key])
            title = c.title or m.titled(who, want, value)
            out.append(
                Expectation(
                    title=title,
                    measure=m.name,
                    want=want,
                    bound=value if m.counted else None,
                    queue=c.queue,
                    workload=c.workload,
                    node=c.node,
                    subgroup=c.subGroup,
                    stable=c.stable or 0.0,
                    not_before=c.notBefore,
                    within=c.within,
                    window=window,
                    line=self.line(*at, key),
                    needs=m.needs,
                )
            )
        if len(out) > 1 and c.title:
            out = [Expectation(**{**e.__dict__, "title": f"{c.title} ({e.measure.replace('_', ' ')})"}) for e in out]
        return out

    def window(self, w: measures.WindowFile, at: tuple) -> Window:
        """A condition's ``throughWindow``, with its length read from what sets it: the workload's queue (or the
        nearest parent that sets it, as KAI's minruntime plugin resolves it) or the workload itself."""
        workload = self.workloads_by_name.get(w.workload)
        if workload is None:
            raise self.fail(
                at + ("workload",), f"throughWindow names workload '{w.workload}', which the scenario does not declare"
            )
        if w.kind in ("reclaimMinRuntime", "preemptMinRuntime"):
            name: str | None = workload.queue
            while name is not None and name in self.queues_by_name:
                q = self.queues_by_name[name]
                if getattr(q, w.kind) is not None:
                    return Window(w.workload, w.kind, go_seconds(getattr(q, w.kind)))
                name = q.parent
            raise self.fail(
                at + ("kind",),
                f"throughWindow: {w.kind} of workload '{w.workload}' — its queue '{workload.queue}' (nor a parent this "
                f"scenario declares) sets no {w.kind}: set it on the queue, so the window is known",
            )
        length = getattr(workload, w.kind)
        if length is None or str(length).startswith("-"):
            raise self.fail(
                at + ("kind",),
                f"throughWindow: {w.kind} of workload '{w.workload}', which sets no {w.kind}: set it on the workload",
            )
        return Window(w.workload, w.kind, go_seconds(length))


class _At:
    """One step being built: what its declaration (steps.Where) may ask of the loader."""

    def __init__(self, build: _Build, i: int, s: Any):
        self.build, self.i, self.s = build, i, s
        self.loc = (build.steps_key, i, s.action)
        self.common = {
            "timeout": 30.0 if s.timeout is None else s.timeout,
            "note": s.note or "",
            "line": build.line(*self.loc),
        }

    def fail(self, message: str, *loc: Any) -> ScenarioError:
        return self.build.fail(self.loc + loc, message)

    def workload(self, name: str, *loc: Any) -> WorkloadFile:
        w = self.build.workloads_by_name.get(name)
        if w is None:
            raise self.fail(
                f"step '{self.s.action}' names workload '{name}', which the scenario does not declare", *loc
            )
        return w

    def queue(self, q: QueueFile) -> QueueFile:
        if q.parent is not None and q.parent not in self.build.queue_names:
            raise self.fail(f"queue '{q.name}' names parent '{q.parent}', which this scenario does not declare")
        declared = self.build.declared_parents.get(q.name)
        if declared is not None and "parent" not in q.model_fields_set:
            # A queue step writes the whole queue: without its parent, KAI would make it a top-level queue.
            raise self.fail(
                f"queue '{q.name}' is declared under parent '{declared}', and this step leaves the parent out, "
                f"which would make it a top-level queue: write parent: {declared} (or parent: null to move it "
                "to the top on purpose)"
            )
        return q

    def conditions(self) -> tuple[Expectation, ...]:
        body = getattr(self.s, self.s.action)
        conditions = body if isinstance(body, list) else [body]
        raw = self.build.data[self.build.steps_key][self.i][self.s.action]
        raw = raw if isinstance(raw, list) else [raw]
        exps = []
        for j, (cond, keys) in enumerate(zip(conditions, raw, strict=True)):
            exps.extend(self.build.expectations(cond, keys, self.loc + ((j,) if isinstance(body, list) else ())))
        if not exps:
            raise self.fail(f"a '{self.s.action}' step needs at least one condition")
        return tuple(exps)


class _PredictionAt:
    """One prediction being built: what its declaration (schema.PredictionWhere) may ask of the loader."""

    def __init__(self, build: _Build, i: int, p: Any, expects: int, applied: tuple[str, ...]):
        self.build, self.i, self.p, self._applied = build, i, p, applied
        self.loc = ("predictions", i, p.kind.word)
        self.common = {
            "key": p.key,
            "ask": " ".join(p.ask.split()),
            "at": p.at or expects,
            "line": build.line("predictions", i),
        }

    def fail(self, message: str, *loc: Any) -> ScenarioError:
        return self.build.fail(self.loc + loc, message)

    def applied(self) -> tuple[str, ...]:
        return self._applied

    def scope(self, v: Any) -> Expectation:
        self.build.scope(v, self.loc)
        if v.workload is not None and v.workload not in self._applied:
            raise self.fail(
                f"the prediction counts workload '{v.workload}', which no step applies: add '- apply: {v.workload}'",
                "workload",
            )
        m = measures.MEASURE_OF_KEY[v.measure]
        return Expectation(
            title=self.common["ask"],
            measure=m.name,
            want="",
            queue=v.queue,
            workload=v.workload,
            node=v.node,
            line=self.build.line(*self.loc),
            needs=m.needs,
        )

    def conditions(self, option: str) -> tuple[Expectation, ...]:
        body = getattr(self.p, self.p.kind.word)[option]
        raw = self.build.data["predictions"][self.i][self.p.kind.word][option]
        conditions, raws = (body, raw) if isinstance(body, list) else ([body], [raw])
        at = self.loc + (option,)
        exps = []
        for j, (cond, keys) in enumerate(zip(conditions, raws, strict=True)):
            where = at + ((j,) if isinstance(body, list) else ())
            for name in (getattr(cond, "workload", None), getattr(cond, "boundBefore", None)):
                if name and name in self.build.workloads_by_name and name not in self._applied:
                    raise self.build.fail(where, f"option '{option}' is about workload '{name}', which no step applies")
            exps.extend(self.build.expectations(cond, keys, where))
        return tuple(exps)
