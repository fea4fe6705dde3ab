"""What a scenario file says, as plain data: queues, workloads, steps, expectations.

The loader (``loader.py``) builds these from YAML and checks them; the engine
(``engine.py``) runs them; ``manifests.py`` turns them into Kubernetes objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

UNLIMITED = -1
_BOUND = re.compile(r"^\s*(?:(>=|<=|>|<|==)?\s*(\d+)|(\d+)\s*\.\.\s*(\d+))\s*$")


@dataclass(frozen=True)
class Bound:
    """The count an expectation wants: exactly 8, ``">=8"``, ``"<=8"``, ``">8"``, ``"<8"`` or ``"8..12"``."""

    op: str
    low: int
    high: int | None = None

    @classmethod
    def parse(cls, text: str) -> "Bound":
        m = _BOUND.match(text)
        if not m:
            raise ValueError(f"{text!r} is not a count; want 8, >=8, <=8, >8, <8 or 8..12")
        if m.group(3) is not None:
            low, high = int(m.group(3)), int(m.group(4))
            if low > high:
                raise ValueError(f"{text!r} is an empty range; write the smaller number first ({high}..{low})")
            return cls("..", low, high)
        return cls(m.group(1) or "==", int(m.group(2)))

    def holds(self, value: int) -> bool:
        a, b = self.low, self.high
        return {"==": value == a, ">=": value >= a, "<=": value <= a, ">": value > a, "<": value < a,
                "..": b is not None and a <= value <= b}[self.op]

    def __str__(self) -> str:
        a = self.low
        return {"==": f"{a}", ">=": f"≥ {a}", "<=": f"≤ {a}", ">": f"> {a}", "<": f"< {a}", "..": f"{a} to {self.high}"}[self.op]


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
class WorkloadSpec:
    """A group of identical pods: a Job, bare Pods, a hand-made PodGroup with pods, or a Deployment."""

    name: str
    kind: WorkloadKind = "Job"
    pods: int = 1
    gpus: int = 1
    queue: str | None = None
    scheduler: str = "kai-scheduler"
    priority_class: str | None = None
    preemptibility: str | None = None  # "preemptible" | "non-preemptible"
    min_member: int | None = None  # gang: batch-min-member on a Job, minMember on a PodGroup
    complete_after: str | None = None  # let KWOK complete the pods after this delay ("30s")
    cpu: str | None = None  # CPU request per pod ("1"); pods ask for no CPU unless set
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class Expectation:
    """One thing that must hold, about a queue, a workload or the whole namespace.

    ``measure`` is what is counted (running, pending, bound, evicted, allocated,
    unschedulable) — then ``bound`` is the count wanted — or a property (all_or_none,
    reason, bound_before), whose ``want`` is its text (the reason, the other workload).
    """

    title: str
    measure: str
    want: str
    bound: Bound | None = None
    queue: str | None = None
    workload: str | None = None
    stable: float = 0.0  # the expectation must keep holding this long (seconds)
    line: int = 0

    @property
    def scope(self) -> str:
        if self.workload:
            return f"workload {self.workload}"
        if self.queue:
            return f"queue {self.queue}"
        return "all pods"


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
class Wait(Step):
    """Wait until every expectation holds; a row in the verdict only when it fails."""

    expectations: tuple[Expectation, ...]


@dataclass(frozen=True, kw_only=True)
class Expect(Wait):
    """Wait until every expectation holds (and keeps holding); one verdict row each."""


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

    def workload(self, name: str) -> WorkloadSpec:
        return next(w for w in self.workloads if w.name == name)

    @property
    def expectations(self) -> list[Expectation]:
        """Every expectation of every wait and expect step, in order."""
        return [e for step in self.steps if isinstance(step, Wait) for e in step.expectations]
