"""Where a verdict is decided: an expectation against what the cluster shows → a Check.

Pure functions over an :class:`Observation` (a plain snapshot of pods, evictions
and the scheduler's reasons), so they are unit-tested without a cluster; the
engine builds the Observation from watches of the real cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from kailab import gpus
from kailab.pods import PodGroupView, PodView, QueueView
from kailab.scenarios.model import Expectation, why_unable
from kailab.scenarios.objects import RequiresFile
from kailab.scenarios.values import Bound


@dataclass
class Observation:
    """A snapshot of one scenario's namespace."""

    pods: list[PodView] = field(default_factory=list)
    evicted: dict[str, set[str]] = field(default_factory=dict)  # workload → pods evicted/preempted
    evicted_queue: dict[str, set[str]] = field(default_factory=dict)  # queue → pods evicted/preempted
    reasons: dict[str, list[str]] = field(default_factory=dict)  # workload → why it waits (scheduler's words)
    first_bound: dict[str, float] = field(default_factory=dict)  # workload → time its first pod was bound
    sizes: dict[str, int] = field(default_factory=dict)  # workload → pods it asks for
    groups: dict[str, list[PodGroupView]] = field(default_factory=dict)  # workload → its PodGroups
    fair_share: dict[str, float] = field(default_factory=dict)  # queue → GPUs of fair share (the scheduler's)
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # node → the labels conditions ask about
    queues: dict[str, QueueView] = field(default_factory=dict)  # the scenario's Queue objects that exist, by name
    _by_workload: dict[str, list[PodView]] | None = field(default=None, init=False, repr=False, compare=False)

    def pods_of(self, workload: str) -> list[PodView]:
        """The pods of one workload, in the order of ``pods`` (sorted out on the first call: ``pods`` is not changed
        after it)."""
        if self._by_workload is None:
            self._by_workload = {}
            for p in self.pods:
                self._by_workload.setdefault(p.workload, []).append(p)
        return self._by_workload.get(workload, [])


UNDECIDED = "UNDECIDED"
BUSY_PREFIX = "the host was too busy"


@dataclass
class Check:
    """One row of the verdict table. ``undecided``: why the lab could not tell (then it neither passed nor failed):
    "the host was too busy — <what was seen, with times>"."""

    title: str
    expected: str
    observed: str
    passed: bool
    scope: str = ""
    measure: str = ""
    detail: list[str] = field(default_factory=list)
    undecided: str = ""

    @property
    def outcome(self) -> str:
        """PASS, FAIL or UNDECIDED."""
        return UNDECIDED if self.undecided else "PASS" if self.passed else "FAIL"

    def undecide(self, why: str) -> Check:
        """This row as one the lab could not decide, and why (it is neither passed nor failed)."""
        self.passed, self.undecided = False, why
        return self

    def to_dict(self) -> dict:
        out = asdict(self)
        if not self.undecided:  # a decided row reads as it always has
            del out["undecided"]
        return out


def _scoped(exp: Expectation, obs: Observation, deleting: bool = False) -> list[PodView]:
    """The pods the expectation is about, in the observation's order."""
    return [p for p in (obs.pods_of(exp.workload) if exp.workload else obs.pods) if _in_scope(exp, p, deleting)]


def _in_scope(exp: Expectation, pod: PodView, deleting: bool = False) -> bool:
    """Is the pod about this expectation? Pods being deleted count only where ``deleting`` says."""
    if exp.workload and pod.workload != exp.workload:
        return False
    if exp.subgroup and pod.subgroup != exp.subgroup:
        return False
    if exp.queue and pod.queue != exp.queue:
        return False
    if exp.node and pod.node != exp.node:
        return False
    return deleting or not pod.deleting


def _evicted(exp: Expectation, obs: Observation) -> int:
    if exp.workload:
        return len(obs.evicted.get(exp.workload, set()))
    if exp.queue:
        return len(obs.evicted_queue.get(exp.queue, set()))
    return len(set().union(*obs.evicted.values())) if obs.evicted else 0


# measure → how to count it over the pods in scope. A pod being deleted still exists and
# holds its GPUs until it is gone, so it counts for pods, bound, allocated and nodes.
COUNTERS: dict[str, tuple[bool, Callable[[list[PodView]], float]]] = {
    "pods": (True, len),
    "running": (False, lambda pods: sum(p.phase == "Running" for p in pods)),
    "pending": (False, lambda pods: sum(p.phase == "Pending" for p in pods)),
    "bound": (True, lambda pods: sum(bool(p.node) for p in pods)),
    "unschedulable": (False, lambda pods: sum(p.unschedulable and not p.node for p in pods)),
    "allocated": (True, lambda pods: sum(gpus.for_queue(p) for p in pods)),
    "nodes": (True, lambda pods: len({p.node for p in pods if p.node})),
    "fraction_gpus": (True, lambda pods: len(gpus.shared_gpus(pods))),
}


# measure → how to count it from the rest of the observation (not its pods).
OBSERVED_COUNTS: dict[str, Callable[[Expectation, Observation], float]] = {
    "evicted": _evicted,
    "pod_groups": lambda exp, obs: len(obs.groups.get(exp.workload or "", [])),  # KAI's pod-grouper made them
}


def count(exp: Expectation, obs: Observation) -> float:
    """The number an expectation of a counting kind is about."""
    if exp.measure in OBSERVED_COUNTS:
        return OBSERVED_COUNTS[exp.measure](exp, obs)
    if exp.measure not in COUNTERS:
        raise ValueError(f"not a counting measure: {exp.measure}")
    with_deleting, counter = COUNTERS[exp.measure]
    # Rounded: fractions add up in binary floating point (0.5 + 0.5 + 0.9 + 0.3 is 2.2000000000000006).
    return round(counter(_scoped(exp, obs, deleting=with_deleting)), 6)


def _all_or_none(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    pods = _scoped(exp, obs)
    size = obs.sizes.get(exp.workload or "", len(pods))
    bound = sum(bool(p.node) for p in pods)
    return f"0 or {size} of {size} bound", f"{bound} of {size} bound", bound in (0, size)


def _placement(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    nodes = [p.node for p in _scoped(exp, obs) if p.node]
    distinct = len(set(nodes))
    observed = f"{len(nodes)} bound pods on {distinct} node{'s' if distinct != 1 else ''}"
    if exp.want == "distinct":
        return "each bound pod on its own node", observed, bool(nodes) and distinct == len(nodes)
    return "every bound pod on one node", observed, distinct == 1


def _said(exp: Expectation, obs: Observation) -> list[str]:
    return obs.reasons.get(exp.workload or "", []) if exp.workload else [m for ms in obs.reasons.values() for m in ms]


def _reason(exp: Expectation, obs: Observation, mentioned: bool = True) -> tuple[str, str, bool]:
    """Whether a reason the scheduler gave mentions the text (``mentioned``), or none does."""
    said = _said(exp, obs)
    hit = next((m for m in said if exp.want.lower() in m.lower()), None)
    observed = hit or (said[-1] if said else "no reason reported yet")
    expected = f"mentions “{exp.want}”" if mentioned else f"never mentions “{exp.want}”"
    return expected, _short(observed), (hit is not None) == mentioned


def _bound_before(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    mine, other = obs.first_bound.get(exp.workload or ""), obs.first_bound.get(exp.want)
    passed = mine is not None and (other is None or mine <= other)
    if mine is None:
        observed = f"{exp.workload} not bound yet"
    elif other is None:
        observed = f"{exp.workload} bound, {exp.want} not yet"
    else:
        observed = (
            f"{exp.workload} {'before' if mine <= other else 'after'} {exp.want} ({abs(other - mine):.1f}s apart)"
        )
    return f"{exp.workload} first", observed, passed


def _pod_group_field(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    path, _, want = exp.want.partition("=")
    groups = obs.groups.get(exp.workload or "", [])
    seen = [_text(g.fields.get(path)) for g in groups]
    observed = ", ".join(seen) if seen else "no PodGroup yet"
    return want, observed, bool(seen) and all(v == want for v in seen)


def _scheduling_condition(exp: Expectation, obs: Observation, present: bool) -> tuple[str, str, bool]:
    groups = obs.groups.get(exp.workload or "", [])
    having = sum(exp.want in g.conditions for g in groups)
    observed = f"on {having} of {len(groups)} PodGroups" if groups else "no PodGroup yet"
    if present:
        return f"{exp.want} on a PodGroup", observed, having > 0
    return f"{exp.want} on none", observed, bool(groups) and having == 0


TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")  # RFC 3339, as KAI writes times


def _pod_group_reason(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    """A reason (and words of its message) in one of the workload's PodGroups' scheduling conditions."""
    reason, _, words = exp.want.partition(": ")
    groups = obs.groups.get(exp.workload or "", [])
    given = [(r, m) for g in groups for r, m in g.reasons]
    hit = next((m for r, m in given if r == reason and words.lower() in m.lower()), None)
    if hit is not None:  # a time in the message (the end of a window) would make each run's row differ
        observed = f"{reason}: {TIMESTAMP.sub('<time>', hit)}"
    elif given:
        observed = "; ".join(dict.fromkeys(r for r, _ in given))
    else:
        observed = "no reason on its PodGroup" if groups else "no PodGroup yet"
    return exp.want, _short(observed), hit is not None


def _pod_group_annotation(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    groups = obs.groups.get(exp.workload or "", [])
    having = [g.annotations[exp.want] for g in groups if exp.want in g.annotations]
    observed = f"on {len(having)} of {len(groups)} PodGroups" if groups else "no PodGroup yet"
    return f"{exp.want} on a PodGroup", observed, bool(having)


def _fair_share(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    share = obs.fair_share.get(exp.queue or "")
    assert exp.bound is not None  # a count: the loader gives it a bound
    if share is None:
        return str(exp.bound), "not published yet", False
    return str(exp.bound), f"{share:g}", exp.bound.holds(share)


def _domains(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    """How many values of a node label (racks, zones) the bound pods in scope are on; ``want`` is ``label=count``."""
    label, _, wanted = exp.want.partition("=")
    bound = Bound.parse(wanted)
    nodes = [p.node for p in _scoped(exp, obs) if p.node]
    values = sorted({obs.node_labels.get(n, {}).get(label, "(no label)") for n in nodes})
    observed = (
        f"{_count(len(nodes), 'bound pod')} on {_count(len(values), 'value')}: {', '.join(values)}"
        if nodes
        else "no pod bound"
    )
    one = bound.op == "==" and bound.low == 1
    return f"{bound} {'value' if one else 'values'} of {label}", observed, bool(nodes) and bound.holds(len(values))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _queue_exists(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    exists = (exp.queue or "") in obs.queues
    return exp.want, str(exists).lower(), exists == (exp.want == "true")


def _queue_allocated(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    q = obs.queues.get(exp.queue or "")
    assert exp.bound is not None  # a count: the loader gives it a bound
    if q is None:
        return str(exp.bound), "no such Queue", False
    return str(exp.bound), f"{q.allocated:g}", exp.bound.holds(q.allocated)


def _on_node_with(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    """Some node holds bound pods of both workloads."""

    def nodes(workload: str) -> set[str]:
        return {p.node for p in obs.pods if p.workload == workload and p.node}

    mine, theirs = nodes(exp.workload or ""), nodes(exp.want)
    shared = sorted(mine & theirs)
    if shared:
        observed = f"both on {', '.join(shared)}"
    elif not mine or not theirs:
        observed = f"{exp.workload if not mine else exp.want} has no bound pod"
    else:
        observed = f"no node in common ({exp.workload} on {', '.join(sorted(mine))}; {exp.want} on {', '.join(sorted(theirs))})"
    return f"a node with {exp.want}", _short(observed), bool(shared)


def _any_of(exp: Expectation, obs: Observation) -> tuple[str, str, bool]:
    """An either-or claim: one alternative's expectations all hold."""
    seen = [[evaluate(e, obs) for e in group] for group in exp.either]
    held = [all(c.passed for c in group) for group in seen]
    observed = " | ".join(
        ("✓ " if ok else "✗ ") + ", ".join(f"{c.title}: {c.observed}" for c in group)
        for ok, group in zip(held, seen, strict=True)
    )
    return exp.want, _short(observed, 240), any(held)


def _text(value) -> str:
    return "-" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


# measure → (expected, observed, passed) for the properties; counts go through COUNTERS.
PROPERTIES: dict[str, Callable[[Expectation, Observation], tuple[str, str, bool]]] = {
    "all_or_none": _all_or_none,
    "placement": _placement,
    "reason": _reason,
    "not_reason": lambda e, o: _reason(e, o, mentioned=False),
    "bound_before": _bound_before,
    "pod_group_field": _pod_group_field,
    "fair_share": _fair_share,
    "domains": _domains,
    "scheduling_condition": lambda e, o: _scheduling_condition(e, o, True),
    "no_scheduling_condition": lambda e, o: _scheduling_condition(e, o, False),
    "pod_group_reason": _pod_group_reason,
    "pod_group_annotation": _pod_group_annotation,
    "queue_exists": _queue_exists,
    "queue_allocated": _queue_allocated,
    "on_node_with": _on_node_with,
}


def evaluate(exp: Expectation, obs: Observation) -> Check:
    """Decide one expectation. The observed text says what was seen, in the expectation's terms."""
    if exp.either:  # an either-or claim, made of expectations: no measure of its own
        expected, observed, passed = _any_of(exp, obs)
    elif exp.measure in PROPERTIES:
        expected, observed, passed = PROPERTIES[exp.measure](exp, obs)
    else:
        assert exp.bound is not None  # a count: the loader gives it a bound
        value = count(exp, obs)
        expected, observed, passed = str(exp.bound), f"{value:g}", exp.bound.holds(value)
    return Check(
        title=exp.title, expected=expected, observed=observed, passed=passed, scope=exp.scope, measure=exp.measure
    )


def timed(exp: Expectation, first_held: float | None, by_cluster: bool = False) -> list[Check]:
    """The rows of an expectation's time bounds: it first held ``first_held`` seconds after the last step that
    changed the cluster (None: it never held). ``by_cluster``: those seconds are the cluster's, from the API server's
    timestamps (whole seconds: a bound is met within one second of it); else kailab's clock (streams recorded before
    kailab kept the cluster's times). The observed text names the bound, not the exact second, so a recording
    replays to the same row; the seconds are in the row's detail."""
    slack = 1.0 if by_cluster else 0.0
    rows = []
    for bound, limit, early in (("notBefore", exp.not_before, True), ("within", exp.within, False)):
        if limit is None:
            continue
        words = f"no earlier than {limit:g}s after" if early else f"within {limit:g}s after"
        if first_held is None:
            observed, passed = "never held", False
        elif early:
            passed = first_held >= limit - slack
            observed = f"not before {limit:g}s" if passed else f"already after {first_held:.1f}s"
        else:
            passed = first_held <= limit + slack
            observed = f"by {limit:g}s" if passed else f"only after {first_held:.1f}s"
        clock = " (the cluster's clock)" if by_cluster else ""
        rows.append(
            Check(
                title=f"{exp.title}, {words} the last step",
                expected=f"{'≥' if early else '≤'} {limit:g}s after the last step that changed the cluster",
                observed=observed,
                passed=passed,
                scope=exp.scope,
                measure=bound,
                detail=[] if first_held is None else [f"first held {first_held:.2f}s after that step{clock}"],
            )
        )
    return rows


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stragglers(exp: Expectation, obs: Observation, limit: int = 6) -> list[str]:
    """For a failed check: the pods not where expected, each with the scheduler's reason."""
    pods = _scoped(exp, obs)
    waiting = [p for p in pods if not p.node]
    lines = []
    for p in waiting[:limit]:
        why = (obs.reasons.get(p.workload) or ["no reason reported by the scheduler"])[-1]
        lines.append(f"{p.name} Pending (queue {p.queue or '-'}): {_short(why, 200)}")
    if len(waiting) > limit:
        lines.append(f"… and {len(waiting) - limit} more Pending")
    if not waiting and pods:
        by_node: dict[str, int] = {}
        for p in pods:
            by_node[p.node] = by_node.get(p.node, 0) + 1
        lines.append("all bound: " + ", ".join(f"{n}×{c}" for n, c in sorted(by_node.items())))
    return lines


@dataclass
class Verdict:
    """A scenario's result: its checks, and whether every one passed."""

    scenario: str
    title: str
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    verify: str = ""
    error: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    namespace: str = ""
    started: str = ""  # UTC, ISO 8601
    timeline: list = field(default_factory=list)  # [[seconds since start, {queue: GPUs allocated}], …]
    applied: list = field(default_factory=list)  # the objects kailab applied, in order
    not_applicable: str = ""  # why the scenario does not fit this fleet (then it did not run)
    answers: dict = field(default_factory=dict)  # prediction key → its answer, measured (kailab/predictions.py)
    load: str = ""  # how busy the lab was when the scenario started, when far slower than quiet (kailab/pace.py)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks) and not self.error and not self.not_applicable

    @property
    def undecided(self) -> bool:
        """Nothing failed, and some check could not be decided (the host was too busy): neither PASS nor FAIL."""
        return (
            not self.error
            and not self.not_applicable
            and any(c.undecided for c in self.checks)
            and all(c.passed or c.undecided for c in self.checks)
        )

    @property
    def outcome(self) -> str:
        """PASS, FAIL, UNDECIDED (the host was too busy to tell: run it again on a quieter one), or NOT APPLICABLE
        (the scenario needs another fleet: not a failure)."""
        if self.not_applicable:
            return "NOT APPLICABLE"
        return "PASS" if self.passed else UNDECIDED if self.undecided else "FAIL"

    @property
    def ok(self) -> bool:
        """Nothing to fix: it passed, or it does not apply to this fleet."""
        return self.passed or bool(self.not_applicable)

    def to_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "title": self.title,
            "passed": self.passed,
            "outcome": self.outcome,
            "not_applicable": self.not_applicable,
            "seconds": round(self.seconds, 2),
            "verify": self.verify,
            "error": self.error,
            "timings": self.timings,
            "checks": [c.to_dict() for c in self.checks],
            **({"load": self.load} if self.load else {}),
        }

    def to_record(self) -> dict:
        """Everything, for evidence: the verdict plus its timeline and the objects applied."""
        return {
            **self.to_dict(),
            "namespace": self.namespace,
            "started": self.started,
            "timeline": self.timeline,
            "applied": self.applied,
            "answers": self.answers,
        }

    @property
    def exit_code(self) -> int:
        """0 passed or not applicable, 1 failed, :data:`EXIT_UNDECIDED` undecided."""
        return 0 if self.ok else EXIT_UNDECIDED if self.undecided else 1

    @classmethod
    def from_record(cls, d: dict) -> Verdict:
        """The inverse of :meth:`to_record` (``passed`` is derived, not read)."""
        fields = {
            k: d[k]
            for k in (
                "scenario",
                "title",
                "seconds",
                "verify",
                "error",
                "timings",
                "namespace",
                "started",
                "timeline",
                "applied",
                "not_applicable",
                "answers",
                "load",
            )
            if k in d
        }
        return cls(**fields, checks=[Check(**c) for c in d.get("checks", [])])


EXIT_UNDECIDED = 3  # a command's exit status when nothing failed and some verdict is UNDECIDED (README)


def exit_code(verdicts: list[Verdict]) -> int:
    """A command's exit status for its verdicts: 1 if any failed, :data:`EXIT_UNDECIDED` if none failed and some
    could not be decided, else 0."""
    codes = {v.exit_code for v in verdicts}
    return 1 if 1 in codes else EXIT_UNDECIDED if EXIT_UNDECIDED in codes else 0


def tally(verdicts: list[Verdict]) -> dict[str, int]:
    """How many verdicts came out each way: PASS, FAIL, UNDECIDED, NOT APPLICABLE (those with none are left out)."""
    out: dict[str, int] = {}
    for v in verdicts:
        out[v.outcome] = out.get(v.outcome, 0) + 1
    return out


@dataclass(frozen=True)
class FleetNode:
    """What a scenario's ``requires:`` may ask of one node of the fleet."""

    name: str
    gpus: float  # 0 for a CPU-only node
    cpus: float = 0.0  # allocatable cores
    labels: dict[str, str] = field(default_factory=dict, compare=False)


def misfit(requires: RequiresFile | None, nodes: list[FleetNode]) -> str:
    """Why a fleet does not fit a scenario's requirements; "" if it does."""
    if requires is None:
        return ""
    node_gpus = [n.gpus for n in nodes]
    gpu_nodes = [g for g in node_gpus if g > 0]
    wrong = []
    if requires.gpus and not requires.gpus.holds(sum(gpu_nodes)):
        wrong.append(f"it needs {requires.gpus} GPUs, the fleet has {sum(gpu_nodes):g}")
    if requires.nodes and not requires.nodes.holds(len(node_gpus)):
        wrong.append(f"it needs {requires.nodes} nodes, the fleet has {len(node_gpus)}")
    if requires.gpusPerNode and not all(requires.gpusPerNode.holds(g) for g in gpu_nodes):
        sizes = ", ".join(f"{g:g}" for g in sorted(set(gpu_nodes))) or "none"
        wrong.append(f"it needs {requires.gpusPerNode} GPUs on every GPU node, the fleet's nodes have {sizes}")
    if requires.homogeneous and len(set(gpu_nodes)) > 1:
        wrong.append(
            "it needs every GPU node alike, the fleet mixes "
            + ", ".join(f"{g:g}" for g in sorted(set(gpu_nodes)))
            + " GPUs per node"
        )
    cpu_only = len(node_gpus) - len(gpu_nodes)
    if requires.cpuOnlyNodes and not requires.cpuOnlyNodes.holds(cpu_only):
        wrong.append(f"it needs {requires.cpuOnlyNodes} CPU-only nodes, the fleet has {cpu_only}")
    wrong.extend(_misfit_nodes(requires, nodes))
    return "; ".join(wrong)


def _misfit_nodes(requires: RequiresFile, nodes: list[FleetNode]) -> list[str]:
    """The node names, CPUs and labels a scenario requires that the fleet lacks."""
    wrong = []
    missing = [n for n in requires.nodeNames if n not in {node.name for node in nodes}]
    if missing:
        wrong.append(f"it needs the nodes {', '.join(missing)}, which the fleet does not have")
    if requires.cpusPerNode and not all(requires.cpusPerNode.holds(n.cpus) for n in nodes):
        sizes = ", ".join(f"{c:g}" for c in sorted({n.cpus for n in nodes})) or "none"
        wrong.append(f"it needs {requires.cpusPerNode} CPUs on every node, the fleet's nodes have {sizes}")
    for key in requires.nodeLabels:
        unlabelled = [n.name for n in nodes if n.gpus > 0 and key not in n.labels]
        if unlabelled:
            wrong.append(f"it needs the label {key} on every GPU node, {len(unlabelled)} have none ({unlabelled[0]} …)")
    return wrong


def unable(needs: frozenset[str], abilities: frozenset[str]) -> str:
    """Why a cluster cannot run a scenario that needs these abilities (see model.ABILITIES); "" if it can."""
    return "; ".join(why_unable(n) for n in sorted(needs - abilities))
