"""Reads a scenario file and checks it, whole, before anything is applied.

The file's shape is declared in ``schema.py``; what needs the whole file (a queue's parent
exists, a step names a declared workload, no two queues share a name) is checked here.
Every error names the file and line: ``exercises/gang.yaml:14: workloads[2].pods: -1 — want a whole number ≥ 0``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kailab.errors import ScenarioError
from kailab.paths import MANIFESTS
from kailab.scenarios import schema
from kailab.scenarios.model import (
    COUNTS,
    Apply,
    Delete,
    DeletePods,
    DeleteWorkloads,
    Expect,
    Expectation,
    PriorityClassSpec,
    QueueSpec,
    Requirements,
    Resource,
    Scale,
    Scenario,
    SchedulerChange,
    SetQueue,
    Sleep,
    StartScheduler,
    Step,
    StopScheduler,
    SubGroupSpec,
    Wait,
    WorkloadSpec,
)
from kailab.yamlfile import YamlFile

LESSON_QUEUES = MANIFESTS / "queues.yaml"
FORMAT_HINT = "The scenario format is described in exercises/README.md."
# Priority classes every KAI install has (its chart's four) and Kubernetes' own.
KNOWN_PRIORITY_CLASSES = {"train", "build-preemptible", "build", "inference",
                          "system-cluster-critical", "system-node-critical"}
SCHEDULERS = ("kai-scheduler", "default-scheduler")
# file key → the measure's name in the model
MEASURE_OF = {"pods": "pods", "running": "running", "pending": "pending", "bound": "bound", "evicted": "evicted",
              "allocated": "allocated", "gpus": "allocated", "unschedulable": "unschedulable", "nodes": "nodes",
              "fairShare": "fair_share", "fractionGpus": "fraction_gpus",
              "placement": "placement", "allOrNone": "all_or_none", "reason": "reason", "notReason": "not_reason",
              "boundBefore": "bound_before", "podGroupField": "pod_group_field",
              "schedulingCondition": "scheduling_condition", "noSchedulingCondition": "no_scheduling_condition"}
FIELD_OF = {m: k for k, m in MEASURE_OF.items() if k != "gpus"}  # measure → the ConditionFile attribute


def load_scenario(path: Path | str) -> Scenario:
    """Parse and check one scenario file; raise ScenarioError with file:line on any problem."""
    f = YamlFile(Path(path), ScenarioError, FORMAT_HINT)
    data = f.read_mapping("a scenario file is a mapping (name:, workloads:, steps: …)")
    return _Build(f, data).scenario(f.check(schema.ScenarioFile, data))


def load_queue_file(path: Path) -> tuple[QueueSpec, ...]:
    """KAI Queue objects (``scheduling.run.ai/v2``, as ``kubectl apply`` takes them) → queue specs."""
    f = YamlFile(path, ScenarioError, "A queue file holds KAI Queue objects, as manifests/queues.yaml does.")
    specs = []
    for doc in f.read(documents=True):
        obj = f.check(schema.QueueObject, doc)
        q, r = obj.spec, obj.spec.resources
        specs.append(_queue_spec(obj.metadata.name, q.parentQueue, q.priority, r.gpu, r.cpu, r.memory,
                                 q.preemptMinRuntime, q.reclaimMinRuntime))
    return tuple(specs)


def _queue(q: schema.QueueFile) -> QueueSpec:
    return _queue_spec(q.name, q.parent, q.priority, q.gpu, q.cpu, q.memory, q.preemptMinRuntime, q.reclaimMinRuntime)


def _queue_spec(name, parent, priority, gpu, cpu, memory, preempt_min_runtime, reclaim_min_runtime) -> QueueSpec:
    """One queue, from a scenario's queue entry or a Queue object. Unset CPU and memory are unlimited."""
    def res(r: schema.ResourceFile | None, default: Resource) -> Resource:
        return default if r is None else Resource(r.quota, r.limit, r.overQuotaWeight)

    return QueueSpec(name=name, parent=parent, priority=priority,
                     gpu=res(gpu, Resource()), cpu=res(cpu, Resource(-1, -1)), memory=res(memory, Resource(-1, -1)),
                     preempt_min_runtime=preempt_min_runtime, reclaim_min_runtime=reclaim_min_runtime)


class _Build:
    """The checks across the whole file, and the model they yield."""

    def __init__(self, f: YamlFile, data: Any):
        self.f, self.data = f, data

    def fail(self, loc: tuple, message: str) -> ScenarioError:
        return self.f.fail(self.f.line_of(self.data, loc), message)

    def line(self, *loc: Any) -> int:
        return self.f.line_of(self.data, loc)

    def scenario(self, doc: schema.ScenarioFile) -> Scenario:
        queues = self.queues(doc)
        pcs = self.priority_classes(doc)
        workloads = self.workloads(doc, {q.name for q in queues} | set(doc.missingQueues), pcs)
        self.workloads_by_name = {w.name: w for w in workloads}
        names = set(self.workloads_by_name)
        used_queues = {q.name for q in queues} | {w.queue for w in workloads if w.queue}
        steps = tuple(self.step(i, s, names, used_queues, queues) for i, s in enumerate(doc.steps))
        return Scenario(
            name=doc.name, title=doc.title or doc.name, path=str(self.f.path), lesson=doc.lesson,
            namespace=doc.namespace or f"kailab-{doc.name}", queues=queues, priority_classes=pcs,
            workloads=workloads, steps=steps, verify=doc.verify, missing_queues=tuple(doc.missingQueues),
            requires=self.requires(doc),
        )

    def requires(self, doc: schema.ScenarioFile) -> Requirements:
        r = doc.requires
        if r is None:
            return Requirements()
        return Requirements(gpus=r.gpus, nodes=r.nodes, gpus_per_node=r.gpusPerNode, homogeneous=r.homogeneous,
                            cpu_only_nodes=r.cpuOnlyNodes)

    def queues(self, doc: schema.ScenarioFile) -> tuple[QueueSpec, ...]:
        """``queues: lesson`` takes manifests/queues.yaml; a list declares queues here (and may include lesson)."""
        items = ["lesson"] if doc.queues == "lesson" else list(doc.queues)
        out: list[tuple[tuple, QueueSpec]] = []
        for i, item in enumerate(items):
            loc = ("queues",) if doc.queues == "lesson" else ("queues", i)
            specs = load_queue_file(LESSON_QUEUES) if item == "lesson" else (_queue(item),)
            out.extend((loc, s) for s in specs)
        seen: dict[str, tuple] = {}
        for loc, q in out:
            if q.name in seen:
                raise self.fail(loc, f"two queues are named '{q.name}'" + (" (one of them is a lesson queue)" if "lesson" in items else ""))
            seen[q.name] = loc
        for loc, q in out:
            if q.name in doc.missingQueues:
                raise self.fail(loc, f"queue '{q.name}' is declared and also listed in missingQueues")
            if q.parent is not None and q.parent not in seen:
                raise self.fail(loc, f"queue '{q.name}' names parent '{q.parent}', which this scenario does not declare")
        parent = {q.name: q.parent for _, q in out}
        for loc, q in out:
            chain, at = [q.name], q.parent
            while at is not None:
                if at in chain:
                    raise self.fail(loc, f"queues form a loop of parents: {' → '.join(chain + [at])}")
                chain.append(at)
                at = parent.get(at)
        return tuple(q for _, q in out)

    def priority_classes(self, doc: schema.ScenarioFile) -> tuple[PriorityClassSpec, ...]:
        out = []
        for i, pc in enumerate(doc.priorityClasses):
            if pc.name in {p.name for p in out} or pc.name in KNOWN_PRIORITY_CLASSES:
                raise self.fail(("priorityClasses", i, "name"), f"priority class '{pc.name}' is declared twice, "
                                "or is one KAI or Kubernetes already has")
            out.append(PriorityClassSpec(pc.name, pc.value, pc.preemptible))
        return tuple(out)

    def workloads(self, doc: schema.ScenarioFile, queues: set[str], pcs: tuple[PriorityClassSpec, ...]) -> tuple[WorkloadSpec, ...]:
        out: list[WorkloadSpec] = []
        known_pcs = KNOWN_PRIORITY_CLASSES | {p.name for p in pcs}
        for i, w in enumerate(doc.workloads):
            if w.name in {o.name for o in out}:
                raise self.fail(("workloads", i, "name"), f"two workloads are named '{w.name}'")
            # A scenario that declares no queues runs on whatever queues the cluster has.
            if w.queue and queues and w.queue not in queues | {"default-queue"}:
                raise self.fail(("workloads", i, "queue"), f"workload '{w.name}' uses queue '{w.queue}', which this "
                                f"scenario does not declare (declared: {', '.join(sorted(queues))})")
            if w.minMember is not None and w.minMember > w.pods:
                raise self.fail(("workloads", i, "minMember"), f"workload '{w.name}' has minMember {w.minMember} but "
                                f"only {w.pods} pods: the gang could never start")
            if w.minMember is not None and w.kind == "Deployment":
                raise self.fail(("workloads", i, "minMember"), f"workload '{w.name}': KAI gives a Deployment one "
                                "PodGroup per pod, so minMember has no effect; use a Job or a PodGroup")
            if w.scheduler not in (*SCHEDULERS, *doc.missingSchedulers):
                raise self.fail(("workloads", i, "scheduler"), f"workload '{w.name}' names scheduler '{w.scheduler}'; "
                                f"the lab has {' and '.join(SCHEDULERS)} (list a name under missingSchedulers to "
                                "show a pod that no scheduler looks at)")
            pc_key = "priorityClassName" if w.priorityClassName else "priorityClass"
            pc = w.priorityClassName or w.priorityClass
            if pc and pc not in known_pcs:
                raise self.fail(("workloads", i, pc_key), f"workload '{w.name}' uses priority class "
                                f"'{pc}', which is neither KAI's ({', '.join(sorted(KNOWN_PRIORITY_CLASSES))}) "
                                "nor declared under priorityClasses")
            if w.kind == "Deployment" and 0 < w.gpus < 1:
                raise self.fail(("workloads", i, "gpus"), f"workload '{w.name}': kailab makes fractional pods as "
                                "Jobs, Pods or PodGroups; use one of those kinds")
            for j, g in enumerate(w.subGroups):
                if g.minMember is not None and g.minMember > g.pods:
                    raise self.fail(("workloads", i, "subGroups", j, "minMember"), f"subgroup '{g.name}' has minMember "
                                    f"{g.minMember} but only {g.pods} pods: it could never start")
                if g.name in {x.name for x in w.subGroups[:j]}:
                    raise self.fail(("workloads", i, "subGroups", j, "name"), f"two subgroups are named '{g.name}'")
            out.append(WorkloadSpec(
                name=w.name, kind=w.kind, pods=w.pods, jobs=w.jobs, gpus=w.gpus, queue=w.queue, scheduler=w.scheduler,
                priority_class=pc, priority_in_spec_only=bool(w.priorityClassName),
                subgroups=tuple(SubGroupSpec(g.name, g.pods, g.minMember) for g in w.subGroups),
                pod_group_after_pods=w.podGroupAfterPods, node=w.node,
                preemptibility=w.preemptibility, min_member=w.minMember,
                complete_after=None if w.completeAfter is None else f"{w.completeAfter:g}s",
                cpu=w.cpu, labels=dict(w.labels), annotations=dict(w.annotations), line=self.line("workloads", i),
            ))
        return tuple(out)

    def step(self, i: int, s: schema.StepFile, workloads: set[str], queues: set[str],
             declared: tuple[QueueSpec, ...]) -> Step:
        action = s.action
        loc = ("steps", i, action)
        common = {"timeout": 30.0 if s.timeout is None else s.timeout, "note": s.note or "", "line": self.line(*loc)}

        def known(name: str, at: tuple) -> str:
            if name not in workloads:
                raise self.fail(at, f"step '{action}' names workload '{name}', which the scenario does not declare")
            return name

        if action in ("apply", "delete"):
            kind = Apply if action == "apply" else Delete
            return kind(workload=known(getattr(s, action), loc), **common)
        if action == "scale":
            name = known(s.scale.workload, loc + ("workload",))
            w = self.workloads_by_name[name]
            if w.jobs is not None or w.kind == "PodGroup":
                raise self.fail(loc, f"workload '{name}' cannot be scaled: scale a single Job, a Deployment or bare Pods")
            return Scale(workload=name, pods=s.scale.pods, **common)
        if action == "sleep":
            return Sleep(seconds=s.sleep, **common)
        if action == "deletePods":
            return DeletePods(node=s.deletePods.node, **common)
        if action == "deleteWorkloads":
            return DeleteWorkloads(node=s.deleteWorkloads.node, **common)
        if action == "stopScheduler":
            return StopScheduler(**common)
        if action in ("startScheduler", "schedulerConfig"):
            c = s.schedulerConfig or schema.SchedulerFile()
            settings = SchedulerChange(c.gpuPlacement, c.cpuPlacement, c.fullHierarchyFairness)
            return StartScheduler(settings=settings, restart=action == "schedulerConfig", **common)
        if action == "queue":
            names = {q.name for q in declared}
            if s.queue.parent is not None and s.queue.parent not in names:
                raise self.fail(loc, f"queue '{s.queue.name}' names parent '{s.queue.parent}', which this scenario does not declare")
            return SetQueue(queue=_queue(s.queue), **common)
        body = getattr(s, action)
        conditions = body if isinstance(body, list) else [body]
        raw = self.data["steps"][i][action]
        raw = raw if isinstance(raw, list) else [raw]
        exps = []
        for j, (cond, keys) in enumerate(zip(conditions, raw)):
            at = loc + ((j,) if isinstance(body, list) else ())
            exps.extend(self.expectations(cond, keys, at, workloads, queues))
        if not exps:
            raise self.fail(loc, f"a '{action}' step needs at least one condition")
        return (Wait if action == "wait" else Expect)(expectations=tuple(exps), **common)

    def expectations(self, c: schema.ConditionFile, keys: dict, at: tuple, workloads: set[str],
                     queues: set[str]) -> list[Expectation]:
        """One condition such as ``{workload: gang, running: 0, pending: 10}`` → one Expectation per measure."""
        if c.workload is not None and c.workload not in workloads:
            raise self.fail(at + ("workload",), f"a condition names workload '{c.workload}', which the scenario does not declare")
        if c.queue is not None and c.queue not in queues:
            raise self.fail(at + ("queue",), f"a condition is about queue '{c.queue}', which no queue or workload of this "
                            "scenario declares, so it could only count nothing")
        if c.boundBefore is not None and c.boundBefore not in workloads:
            raise self.fail(at + ("boundBefore",), f"boundBefore names workload '{c.boundBefore}', which the scenario does not declare")
        if c.subGroup is not None:
            groups = {g.name for g in self.workloads_by_name[c.workload].subgroups}
            if c.subGroup not in groups:
                raise self.fail(at + ("subGroup",), f"workload '{c.workload}' has no subgroup '{c.subGroup}'"
                                + (f" (its subgroups: {', '.join(sorted(groups))})" if groups else ""))
        out = []
        for key in keys:
            measure = MEASURE_OF.get(key)
            if measure is None:
                continue
            value = getattr(c, FIELD_OF[measure])
            bound = value if measure in COUNTS or measure == "fair_share" else None
            if measure == "pod_group_field":
                want = f"{value.path}={str(value.equals).lower() if isinstance(value.equals, bool) else value.equals}"
            else:
                want = "true" if measure == "all_or_none" else str(keys[key]) if bound is not None else str(value)
            who = " ".join(filter(None, [c.workload, c.subGroup and f"subgroup {c.subGroup}", c.queue,
                                         c.node and f"on {c.node}"])) or None
            title = c.title or _title(measure, want, who)
            out.append(Expectation(title=title, measure=measure, want=want, bound=bound, queue=c.queue,
                                   workload=c.workload, node=c.node, subgroup=c.subGroup, stable=c.stable or 0.0,
                                   line=self.line(*at, key)))
        if len(out) > 1 and c.title:
            out = [Expectation(**{**e.__dict__, "title": f"{c.title} ({e.measure.replace('_', ' ')})"}) for e in out]
        return out


def _title(measure: str, want: str, who: str | None) -> str:
    who = who or "all pods"
    return {
        "pods": f"{who}: pods that exist",
        "fair_share": f"{who}: fair share of GPUs (KAI's)",
        "fraction_gpus": f"{who}: GPUs its fractions are on",
        "nodes": f"{who}: nodes its bound pods are on",
        "placement": f"{who}: pods {'on distinct nodes' if want == 'distinct' else 'all on one node'}",
        "not_reason": f"{who}: reason given does not mention",
        "pod_group_field": f"{who}: PodGroup {want.split('=')[0]}",
        "scheduling_condition": f"{who}: PodGroup has scheduling condition",
        "no_scheduling_condition": f"{who}: PodGroup has no scheduling condition",
        "running": f"{who}: pods Running",
        "pending": f"{who}: pods Pending",
        "bound": f"{who}: pods bound to a node",
        "evicted": f"{who}: pods evicted or preempted",
        "allocated": f"{who}: GPUs allocated",
        "unschedulable": f"{who}: pods marked unschedulable",
        "all_or_none": f"{who}: gang binds all or none",
        "reason": f"{who}: reason given for waiting",
        "bound_before": f"{who} bound before {want}",
    }[measure]
