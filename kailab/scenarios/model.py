"""A loaded scenario, and what its words become: expectations, the step types, the prediction kinds.

The loader (``loader.py``) builds these from YAML (the words are declared in ``steps.py``, ``measures.py`` and
``schema.py``) and checks them; the engine (``engine.py``) plays each step type; ``manifests.py`` turns the workloads
and queues into Kubernetes objects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, dataclass_transform

from kailab.scenarios.objects import (
    OPERATED_KINDS,
    PriorityClassFile,
    QueueFile,
    RequiresFile,
    TopologyFile,
    WorkloadFile,
)
from kailab.scenarios.values import Bound
from kailab.scheduler_settings import SchedulerSettings

# The windows KAI measures on a PodGroup (kailab/scenarios/timing.py reads each one's start from the API objects).
WINDOWS = ("reclaimMinRuntime", "preemptMinRuntime", "preemptionDelay", "stalenessGracePeriod")


@dataclass(frozen=True)
class Window:
    """A window KAI measures on each of a workload's PodGroups: ``kind`` one of WINDOWS, ``seconds`` its length (the
    loader reads it from the queue or workload that sets it)."""

    workload: str
    kind: str
    seconds: float

    def __str__(self) -> str:
        return f"{self.workload}'s {self.kind} ({self.seconds:g}s)"


@dataclass(frozen=True)
class Expectation:
    """One thing that must hold, about a queue, a workload (or one of its subgroups), a node, or every pod.

    ``measure`` names one of measures.MEASURES: a count — then ``bound`` is the number wanted — or a
    property, whose ``want`` is its text. ``line`` is where the scenario file says it.
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
    not_before: float | None = None  # it may first hold no earlier than this long after the last changing step
    within: float | None = None  # it must first hold within this long after the last changing step
    window: Window | None = None  # it must keep holding until this window of KAI's ends (the cluster's clock)
    line: int = 0
    needs: str = ""  # what its measure needs of a cluster (see ABILITIES), "" for nothing
    # measure "any_of": it holds when every expectation of one of these alternatives holds (an either-or claim)
    either: tuple[tuple[Expectation, ...], ...] = ()

    def parts(self) -> list[Expectation]:
        """This expectation, or the expectations of its alternatives (an either-or claim)."""
        return [p for group in self.either for e in group for p in e.parts()] if self.either else [self]

    def mapped(self, change: Callable[[Expectation], Expectation]) -> Expectation:
        """``change`` applied to this expectation, or to each of its alternatives' expectations."""
        if not self.either:
            return change(self)
        return dataclasses.replace(self, either=tuple(tuple(e.mapped(change) for e in g) for g in self.either))

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


@dataclass_transform(frozen_default=True, kw_only_default=True)
@dataclass(frozen=True, kw_only=True)
class Step:
    """What every step has. The engine dispatches on the step's type (steps.STEPS declares the words). Every step
    type is a frozen, keyword-only dataclass, made so here."""

    needs: ClassVar[frozenset[str]] = frozenset()  # what the step needs of a cluster (see ABILITIES)
    timeout: float = 30.0
    note: str = ""
    line: int = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True, kw_only=True)(cls)


class WorkloadStep(Step):
    """A step about one of the scenario's workloads."""

    workload: str


class Apply(WorkloadStep):
    """Create (or update) a workload's objects."""


class Delete(WorkloadStep):
    """Delete a workload's objects and its pods."""


class Scale(WorkloadStep):
    """Set how many pods a workload asks for."""

    pods: int


class SetQueue(Step):
    """Create or change a queue mid-scenario."""

    queue: QueueFile


class Sleep(Step):
    """Let time pass (changes are still folded in), e.g. for a protection window to elapse."""

    seconds: float


class NodeStep(Step):
    """A step about one node of the fleet."""

    node: str


class DeletePods(Step):
    """Delete the scenario's pods on one node, of one workload, or both; ``count`` of them (bound ones first, by
    name) or all. Their owners may make new ones; a hand-made PodGroup's bare pods stay gone."""

    node: str | None = None
    workload: str | None = None
    count: int | None = None


class DeleteWorkloads(NodeStep):
    """Delete every workload that has a pod on one node."""


class StopScheduler(Step):
    """Stop KAI's scheduler: pods submitted now wait, together, until it starts."""

    needs: ClassVar[frozenset[str]] = frozenset({"scheduler-control"})


class StartScheduler(Step):
    """Start KAI's scheduler with these settings (the lab's defaults when empty)."""

    needs: ClassVar[frozenset[str]] = frozenset({"scheduler-control"})
    settings: SchedulerSettings = field(default_factory=SchedulerSettings)
    restart: bool = False  # stop it first (a configuration change)


class GpuLedger(Step):
    """Stop or start what gives KAI's GPU reservation pods their GPU (the GPU operator's part; kailab's GPU
    ledger on the local runtime): stopped, a GPU-sharing pod's reservation never gets one and KAI's binder gives up."""

    needs: ClassVar[frozenset[str]] = frozenset({"gpu-ledger-control"})
    running: bool


class Wait(Step):
    """Wait until every expectation holds; a row in the verdict only when it fails."""

    expectations: tuple[Expectation, ...]


class Expect(Wait):
    """Wait until every expectation holds (and keeps holding); one verdict row each."""


@dataclass(frozen=True, kw_only=True)
class Prediction:
    """A question a lesson asks before its run. Its answer is measured from what KAI did, on the observation of the
    ``at``-th expect step (1 = the first); kailab/predictions.py measures, reads and grades. schema.PREDICTIONS
    declares the kinds."""

    word: ClassVar[str]  # the kind's key in a scenario file
    key: str  # what the learner names it by: --predict KEY=VALUE
    ask: str
    at: int
    line: int = 0

    @property
    def options(self) -> tuple[str, ...]:
        """The answers a learner may give; () when any number is an answer."""
        return ()

    def expectations(self) -> tuple[Expectation, ...]:
        """The conditions its answer is measured with (queue and node names that a lab's prefix renames)."""
        return ()

    def renamed(self, rename: Callable[[Expectation], Expectation]) -> Prediction:
        """The same prediction with every condition renamed (a lab's prefix, a learner's nodes)."""
        return self


@dataclass(frozen=True, kw_only=True)
class NumberPrediction(Prediction):
    """A "how many …?" question: a count (``of``: its scope and measure) after the step; right within ``tolerance``."""

    word: ClassVar[str] = "number"
    of: Expectation
    tolerance: float = 0

    def expectations(self) -> tuple[Expectation, ...]:
        return (self.of,)

    def renamed(self, rename: Callable[[Expectation], Expectation]) -> Prediction:
        return dataclasses.replace(self, of=rename(self.of))


@dataclass(frozen=True, kw_only=True)
class ChoicePrediction(Prediction):
    """A "which of these happens?" question: named options, each a set of conditions; the right ones hold after the step."""

    word: ClassVar[str] = "choice"
    choices: tuple[tuple[str, tuple[Expectation, ...]], ...]

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.choices)

    def expectations(self) -> tuple[Expectation, ...]:
        return tuple(e for _, exps in self.choices for e in exps)

    def renamed(self, rename: Callable[[Expectation], Expectation]) -> Prediction:
        return dataclasses.replace(self, choices=tuple((name, tuple(map(rename, exps))) for name, exps in self.choices))


NOTHING = "none"  # the answer to "which workload …?" when the measure is 0 for every one


@dataclass(frozen=True, kw_only=True)
class WhichPrediction(Prediction):
    """A "which workload …?" question: of ``among``, the one with the largest ``measure`` (a count) after the step; ``none``
    when it is 0 for every one."""

    word: ClassVar[str] = "which"
    measure: str  # a counting measure's name (checks.COUNTERS, evicted)
    among: tuple[str, ...]

    @property
    def options(self) -> tuple[str, ...]:
        return (*self.among, NOTHING)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    path: str
    lesson: str = ""
    namespace: str = ""
    queues: tuple[QueueFile, ...] = ()
    priority_classes: tuple[PriorityClassFile, ...] = ()
    workloads: tuple[WorkloadFile, ...] = ()
    steps: tuple[Step, ...] = ()
    verify: str = ""
    missing_queues: tuple[str, ...] = ()  # queues that must not exist (kailab deletes them first)
    requires: RequiresFile | None = None  # None: any fleet
    workload_lines: dict[str, int] = field(default_factory=dict)  # workload → its line in the file
    topologies: tuple[TopologyFile, ...] = ()  # KAI Topology objects (cluster-scoped), applied before the workloads
    predictions: tuple[Prediction, ...] = ()  # what a lesson asks the learner before the run
    namespace_quota: dict[str, str] = field(default_factory=dict)  # a ResourceQuota's hard limits in the namespace
    warnings: tuple[str, ...] = ()  # what KAI accepts but may surprise ("file:line: …"), said before a run

    def workload(self, name: str) -> WorkloadFile:
        return self._workloads[name]

    @cached_property
    def _workloads(self) -> dict[str, WorkloadFile]:
        return {w.name: w for w in self.workloads}

    @property
    def expectations(self) -> list[Expectation]:
        """Every expectation of every wait and expect step, in order (an either-or claim's alternatives' ones)."""
        return [p for step in self.steps for e in getattr(step, "expectations", ()) for p in e.parts()]

    @property
    def nodes(self) -> dict[str, int]:
        """Node names the scenario uses (a workload's node, a step's, a condition's) → the line of the first."""
        out: dict[str, int] = {}
        for name, line in [
            *((w.node, self.workload_lines.get(w.name, 0)) for w in self.workloads),
            *((getattr(s, "node", None), s.line) for s in self.steps),
            *((e.node, e.line) for e in self.expectations),
            *((e.node, p.line) for p in self.predictions for e in p.expectations()),
        ]:
            if name and not out.get(name):
                out[name] = line
        return out

    @property
    def node_label_keys(self) -> tuple[str, ...]:
        """The node labels the conditions ask about (``domains``): the run records them for each node."""
        return tuple(sorted({e.want.partition("=")[0] for e in self.expectations if e.measure == "domains"}))

    @property
    def needs(self) -> frozenset[str]:
        """What the scenario needs of the cluster beyond its fleet (see ABILITIES)."""
        measured = [*self.expectations, *(e for p in self.predictions for e in p.expectations())]
        out = {n for s in self.steps for n in s.needs} | {e.needs for e in measured if e.needs}
        if any(w.any_fraction for w in self.workloads):
            out.add("gpu-sharing")
        if any(getattr(getattr(s, "settings", None), "usage_params", None) is not None for s in self.steps):
            out.add("usage-db")  # a schedulerConfig step with usageParams
        out |= {OPERATOR_NEED + w.kind for w in self.workloads if w.kind in OPERATED_KINDS}
        return frozenset(out)


# What a cluster may or may not let a scenario do, and why a scenario needs it (said when it cannot).
ABILITIES = {
    "scheduler-control": "it stops, starts or reconfigures KAI's scheduler, which kailab does only on a cluster it made",
    "fair-share": "it checks KAI's fair share, read from the scheduler's metrics, which kailab cannot read here",
    "gpu-sharing": "it runs GPU fractions, and KAI's GPU sharing is not known to be on here",
    "gpu-ledger-control": "it stops what gives KAI's GPU reservation pods their GPU, which kailab does only on a "
    "lab the local runtime made (its GPU ledger)",
    "usage-db": "it turns on KAI's usage database (time-based fair share), a Prometheus kailab runs only in a lab "
    "it made (the local and kind runtimes)",
}
# A workload kind whose pods an operator makes (``operator:RayCluster``): a lab it made starts the operator, a cluster
# kailab did not make must have it installed (``kailab up --runtime existing`` lists which are).
OPERATOR_NEED = "operator:"


def operator_needs() -> frozenset[str]:
    """Every operator need a scenario may have (a recording had what it needed)."""
    return frozenset(OPERATOR_NEED + kind for kind in OPERATED_KINDS)


def why_unable(need: str) -> str:
    """Why a scenario needs it, said when a cluster cannot give it."""
    if need.startswith(OPERATOR_NEED):
        kind = need.removeprefix(OPERATOR_NEED)
        return (
            f"it makes a {kind}, whose operator this cluster does not run (kailab starts one only in a lab it made; "
            "on a cluster it did not make, install it: kailab up --runtime existing says how)"
        )
    return ABILITIES[need]
