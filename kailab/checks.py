"""Where a verdict is decided: an expectation against what the cluster shows → a Check.

Pure functions over an :class:`Observation` (a plain snapshot of pods, evictions
and the scheduler's reasons), so they are unit-tested without a cluster; the
engine builds the Observation from watches of the real cluster.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kailab.pods import PodView
from kailab.scenarios.model import Expectation


@dataclass
class Observation:
    """A snapshot of one scenario's namespace."""

    pods: list[PodView] = field(default_factory=list)
    evicted: dict[str, set[str]] = field(default_factory=dict)  # workload → pods evicted/preempted
    evicted_queue: dict[str, set[str]] = field(default_factory=dict)  # queue → pods evicted/preempted
    reasons: dict[str, list[str]] = field(default_factory=dict)  # workload → why it waits (scheduler's words)
    first_bound: dict[str, float] = field(default_factory=dict)  # workload → time its first pod was bound
    sizes: dict[str, int] = field(default_factory=dict)  # workload → pods it asks for


@dataclass
class Check:
    """One row of the verdict table."""

    title: str
    expected: str
    observed: str
    passed: bool
    scope: str = ""
    measure: str = ""
    detail: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _in_scope(exp: Expectation, pod: PodView, deleting: bool = False) -> bool:
    """Is the pod about this expectation? Pods being deleted count only where ``deleting`` says."""
    if exp.workload and pod.workload != exp.workload:
        return False
    if exp.queue and pod.queue != exp.queue:
        return False
    return deleting or not pod.deleting


def count(exp: Expectation, obs: Observation) -> int:
    """The number an expectation of a counting kind is about."""
    # A pod being deleted still holds its GPUs until it is gone.
    holding = exp.measure in ("bound", "allocated")
    pods = [p for p in obs.pods if _in_scope(exp, p, deleting=holding)]
    if exp.measure == "running":
        return sum(p.phase == "Running" for p in pods)
    if exp.measure == "pending":
        return sum(p.phase == "Pending" for p in pods)
    if exp.measure == "bound":
        return sum(bool(p.node) for p in pods)
    if exp.measure == "unschedulable":
        return sum(p.unschedulable and not p.node for p in pods)
    if exp.measure == "allocated":
        return sum(p.gpus for p in pods if p.holds_gpus)
    if exp.measure == "evicted":
        if exp.workload:
            return len(obs.evicted.get(exp.workload, set()))
        if exp.queue:
            return len(obs.evicted_queue.get(exp.queue, set()))
        return len(set().union(*obs.evicted.values())) if obs.evicted else 0
    raise ValueError(f"not a counting measure: {exp.measure}")


def evaluate(exp: Expectation, obs: Observation) -> Check:
    """Decide one expectation. The observed text says what was seen, in the expectation's terms."""
    base = {"title": exp.title, "scope": exp.scope, "measure": exp.measure}
    if exp.measure == "all_or_none":
        pods = [p for p in obs.pods if _in_scope(exp, p)]
        size = obs.sizes.get(exp.workload or "", len(pods))
        bound = sum(bool(p.node) for p in pods)
        return Check(expected=f"0 or {size} of {size} bound", observed=f"{bound} of {size} bound",
                     passed=bound in (0, size), **base)
    if exp.measure == "reason":
        said = obs.reasons.get(exp.workload or "", []) if exp.workload else [m for ms in obs.reasons.values() for m in ms]
        hit = next((m for m in said if exp.want.lower() in m.lower()), None)
        observed = hit or (said[-1] if said else "no reason reported yet")
        return Check(expected=f"mentions “{exp.want}”", observed=_short(observed), passed=hit is not None, **base)
    if exp.measure == "bound_before":
        mine, other = obs.first_bound.get(exp.workload or ""), obs.first_bound.get(exp.want)
        passed = mine is not None and (other is None or mine <= other)
        if mine is None:
            observed = f"{exp.workload} not bound yet"
        elif other is None:
            observed = f"{exp.workload} bound, {exp.want} not yet"
        else:
            observed = f"{exp.workload} {'before' if mine <= other else 'after'} {exp.want} ({abs(other - mine):.1f}s apart)"
        return Check(expected=f"{exp.workload} first", observed=observed, passed=passed, **base)
    value = count(exp, obs)
    return Check(expected=str(exp.bound), observed=str(value), passed=exp.bound.holds(value), **base)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stragglers(exp: Expectation, obs: Observation, limit: int = 6) -> list[str]:
    """For a failed check: the pods not where expected, each with the scheduler's reason."""
    pods = [p for p in obs.pods if _in_scope(exp, p)]
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

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks) and not self.error

    def to_dict(self) -> dict:
        return {"scenario": self.scenario, "title": self.title, "passed": self.passed, "seconds": round(self.seconds, 2),
                "verify": self.verify, "error": self.error, "timings": self.timings,
                "checks": [c.to_dict() for c in self.checks]}

    def to_record(self) -> dict:
        """Everything, for evidence: the verdict plus its timeline and the objects applied."""
        return {**self.to_dict(), "namespace": self.namespace, "started": self.started,
                "timeline": self.timeline, "applied": self.applied}

    @classmethod
    def from_record(cls, d: dict) -> "Verdict":
        """The inverse of :meth:`to_record` (``passed`` is derived, not read)."""
        fields = {k: d[k] for k in ("scenario", "title", "seconds", "verify", "error", "timings", "namespace",
                                    "started", "timeline", "applied") if k in d}
        return cls(**fields, checks=[Check(**c) for c in d.get("checks", [])])
