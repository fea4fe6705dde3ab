"""What a scenario file says, as plain data: queues, workloads, steps, expectations.

The loader (``loader.py``) builds these from YAML and checks them; the engine
(``engine.py``) runs them; ``manifests.py`` turns them into Kubernetes objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

UNLIMITED = -1
_N = r"\d+(?:\.\d+)?"
_BOUND = re.compile(rf"^\s*(?:(>=|<=|>|<|==)?\s*({_N})|({_N})\s*\.\.\s*({_N}))\s*$")


@dataclass(frozen=True)
class Bound:
    """The count an expectation wants: exactly 8, ``">=8"``, ``"<=8"``, ``">8"``, ``"<8"`` or ``"8..12"``.

    Numbers may have decimals (GPUs allocated to fractional pods: ``"1.5"``).
    """

    op: str
    low: float
    high: float | None = None

    @classmethod
    def parse(cls, text: str) -> "Bound":
        m = _BOUND.match(text)
        if not m:
            raise ValueError(f"{text!r} is not a count; want 8, >=8, <=8, >8, <8 or 8..12")
        if m.group(3) is not None:
            low, high = _number(m.group(3)), _number(m.group(4))
            if low > high:
                raise ValueError(f"{text!r} is an empty range; write the smaller number first ({high}..{low})")
            return cls("..", low, high)
        return cls(m.group(1) or "==", _number(m.group(2)))

    def holds(self, value: float) -> bool:
        a, b = self.low, self.high
        return {"==": value == a, ">=": value >= a, "<=": value <= a, ">": value > a, "<": value < a,
                "..": b is not None and a <= value <= b}[self.op]

    def __str__(self) -> str:
        a = f"{self.low:g}"
        if self.op == "..":
            return f"{a} to {self.high:g}"
        return {"==": a, ">=": f"≥ {a}", "<=": f"≤ {a}", ">": f"> {a}", "<": f"< {a}"}[self.op]


def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() else value


@dataclass(frozen=True)
class Resource:
    """One resource of a queue. ``-1`` is unlimited; KAI reads an unset limit as 0."""

    quota: float = 0
    limit: float = UNLIMITED
    over_quota_weight: float = 1


@dataclass(frozen=True)
class QueueSpec:
    name: str
    parent: str | None = None
    priority: int | None = None
    gpu: Resource = field(default_factory=Resource)
    cpu: Resource = field(default_factory=lambda: Resource(UNLIMITED, UNLIMITED))
    memory: Resource = field(default_factory=lambda: Resource(UNLIMITED, UNLIMITED))
    preempt_min_runtime: str | None = None
    reclaim_min_runtime: str | None = None


@dataclass(frozen=True)
class PriorityClassSpec:
    name: str
    value: int
    preemptible: bool | None = None


WorkloadKind = Literal["Job", "Pod", "PodGroup", "Deployment"]


@dataclass(frozen=True)
class SubGroupSpec:
    name: str
    pods: int
    min_member: int | None = None


@dataclass(frozen=True)
class WorkloadSpec:
    """A group of identical pods: a Job (or ``jobs`` Jobs), bare Pods, a hand-made PodGroup with pods, or a Deployment."""

    name: str
    kind: WorkloadKind = "Job"
    pods: int = 1  # per Job when ``jobs`` is set
    jobs: int | None = None  # that many separate Jobs, <name>-0 …, each its own PodGroup
    gpus: float = 1  # whole GPUs, or a fraction of one (KAI's gpu-fraction annotation)
    queue: str | None = None
    scheduler: str = "kai-scheduler"
    priority_class: str | None = None
    priority_in_spec_only: bool = False  # priorityClassName only in the pods' spec, no label
    preemptibility: str | None = None  # "preemptible" | "non-preemptible"
    min_member: int | None = None  # gang: batch-min-member on a Job, minMember on a PodGroup
    subgroups: tuple[SubGroupSpec, ...] = ()  # a hand-made PodGroup's subgroups
    pod_group_after_pods: bool = False  # a hand-made PodGroup is created after its pods
    node: str | None = None  # pods pinned to this node
    complete_after: str | None = None  # let KWOK complete the pods after this delay ("30s")
    cpu: str | None = None  # CPU request per pod ("1"); pods ask for no CPU unless set
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    line: int = 0

    @property
    def fraction(self) -> bool:
        return 0 < self.gpus < 1

    @property
    def total_pods(self) -> int:
        return self.pods * (self.jobs or 1)


# Measures that count (their ``bound`` is the number wanted); the rest are properties with a text ``want``.
COUNTS = ("pods", "running", "pending", "bound", "evicted", "allocated", "unschedulable", "nodes", "fraction_gpus")


@dataclass(frozen=True)
class Expectation:
    """One thing that must hold, about a queue, a workload (or one of its subgroups), a node, or every pod.

    ``measure`` is a count (see COUNTS) — then ``bound`` is the number wanted — or a property
    (all_or_none, placement, reason, not_reason, bound_before, pod_group_field,
    scheduling_condition, no_scheduling_condition), whose ``want`` is its text.
    """

    title: str
    measure: str
    want: str
    bound: Bound | None = None
    queue: str | None = None
    workload: str | None = None
    node: str | None = None
    subgroup: str | None = None
    stable: float = 0.0  # the expectation must keep holding this long (seconds)
    line: int = 0

    @property
    def scope(self) -> str:
        parts = []
        if self.workload:
            parts.append(f"workload {self.workload}" + (f" subgroup {self.subgroup}" if self.subgroup else ""))
        if self.queue:
            parts.append(f"queue {self.queue}")
        if self.node:
            parts.append(f"node {self.node}")
        return ", ".join(parts) or "all pods"


@dataclass(frozen=True, kw_only=True)
class Step:
    """What every step has. The engine dispatches on the step's type."""

    timeout: float = 30.0
    note: str = ""
    line: int = 0


@dataclass(frozen=True, kw_only=True)
class WorkloadStep(Step):
    """A step about one of the scenario's workloads."""

    workload: str


class Apply(WorkloadStep):
    """Create (or update) a workload's objects."""


class Delete(WorkloadStep):
    """Delete a workload's objects and its pods."""


@dataclass(frozen=True, kw_only=True)
class Scale(WorkloadStep):
    """Set how many pods a workload asks for."""

    pods: int


@dataclass(frozen=True, kw_only=True)
class SetQueue(Step):
    """Create or change a queue mid-scenario."""

    queue: QueueSpec


@dataclass(frozen=True, kw_only=True)
class Sleep(Step):
    """Let time pass (changes are still folded in), e.g. for a protection window to elapse."""

    seconds: float


@dataclass(frozen=True, kw_only=True)
class DeletePods(Step):
    """Delete the scenario's pods on one node (their owners may make new ones)."""

    node: str


@dataclass(frozen=True, kw_only=True)
class DeleteWorkloads(Step):
    """Delete every workload that has a pod on one node."""

    node: str


@dataclass(frozen=True)
class SchedulerChange:
    """Settings of KAI's scheduler a scenario changes; None keeps the lab's default."""

    gpu_placement: str | None = None  # binpack | spread
    cpu_placement: str | None = None
    full_hierarchy_fairness: bool | None = None


@dataclass(frozen=True, kw_only=True)
class StopScheduler(Step):
    """Stop KAI's scheduler: pods submitted now wait, together, until it starts."""


@dataclass(frozen=True, kw_only=True)
class StartScheduler(Step):
    """Start KAI's scheduler with these settings (the lab's defaults when empty)."""

    settings: SchedulerChange = field(default_factory=SchedulerChange)
    restart: bool = False  # stop it first (a configuration change)


@dataclass(frozen=True, kw_only=True)
class Wait(Step):
    """Wait until every expectation holds; a row in the verdict only when it fails."""

    expectations: tuple[Expectation, ...]


@dataclass(frozen=True, kw_only=True)
class Expect(Wait):
    """Wait until every expectation holds (and keeps holding); one verdict row each."""


@dataclass(frozen=True)
class Requirements:
    """What a scenario needs of the fleet (None: anything)."""

    gpus: Bound | None = None
    nodes: Bound | None = None
    gpus_per_node: Bound | None = None
    homogeneous: bool | None = None
    cpu_only_nodes: Bound | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    path: str
    lesson: str = ""
    namespace: str = ""
    queues: tuple[QueueSpec, ...] = ()
    priority_classes: tuple[PriorityClassSpec, ...] = ()
    workloads: tuple[WorkloadSpec, ...] = ()
    steps: tuple[Step, ...] = ()
    verify: str = ""
    missing_queues: tuple[str, ...] = ()  # queues that must not exist (kailab deletes them first)
    requires: Requirements = field(default_factory=Requirements)

    def workload(self, name: str) -> WorkloadSpec:
        return next(w for w in self.workloads if w.name == name)

    @property
    def expectations(self) -> list[Expectation]:
        """Every expectation of every wait and expect step, in order."""
        return [e for step in self.steps if isinstance(step, Wait) for e in step.expectations]

    @property
    def needs(self) -> frozenset[str]:
        """What the scenario needs of the cluster beyond its fleet (see ABILITIES)."""
        out = set()
        if any(isinstance(s, (StopScheduler, StartScheduler)) for s in self.steps):
            out.add("scheduler-control")
        if any(e.measure == "fair_share" for e in self.expectations):
            out.add("fair-share")
        if any(w.fraction for w in self.workloads):
            out.add("gpu-sharing")
        return frozenset(out)


# What a cluster may or may not let a scenario do, and why a scenario needs it (said when it cannot).
ABILITIES = {
    "scheduler-control": "it stops, starts or reconfigures KAI's scheduler, which kailab does only on a cluster it made",
    "fair-share": "it checks KAI's fair share, read from the scheduler's metrics, which kailab cannot read here",
    "gpu-sharing": "it runs GPU fractions, and KAI's GPU sharing is not known to be on here",
}
