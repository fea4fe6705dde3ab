"""The steps a scenario may take: each step's key, what the key holds, and the step it becomes.

:data:`STEPS` declares them; the step types are in ``model.py``, their players in ``engine.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, get_type_hints

from pydantic import AfterValidator, BaseModel, Field, StrictInt, StrictStr, create_model, model_validator
from pydantic.alias_generators import to_camel

from kailab.errors import KailabError
from kailab.scenarios.measures import Conditions
from kailab.scenarios.model import (
    Apply,
    Delete,
    DeletePods,
    DeleteWorkloads,
    Expect,
    Expectation,
    GpuLedger,
    Scale,
    SetQueue,
    Sleep,
    StartScheduler,
    Step,
    StopScheduler,
    Wait,
)
from kailab.scenarios.objects import QueueFile, WorkloadFile
from kailab.scenarios.operated import KIND_WORDS
from kailab.scenarios.values import MAX_PODS, Count, FileModel, Name, Seconds, exactly_one
from kailab.scheduler_settings import SchedulerSettings


class Where(Protocol):
    """What a step's declaration may ask of the loader while it builds the step (every error names file:line)."""

    common: dict  # timeout, note and line: every step has them

    def fail(self, message: str, *loc: Any) -> Exception: ...

    def workload(self, name: str, *loc: Any) -> WorkloadFile:
        """The declared workload of that name, or an error at ``loc`` (below the step's key)."""

    def queue(self, q: QueueFile) -> QueueFile:
        """A queue a step sets, its parent checked."""

    def conditions(self) -> tuple[Expectation, ...]:
        """The step's conditions, one expectation per measure."""


def _scale(v: ScaleFile, at: Where) -> Scale:
    w = at.workload(v.workload, "workload")
    if w.jobs is not None or w.kind == "PodGroup":
        raise at.fail(
            f"workload '{w.name}' cannot be scaled: scale a single Job, a Deployment, a StatefulSet or bare Pods"
        )
    if w.kind in KIND_WORDS:  # its operator makes the pods from its own counts
        raise at.fail(f"workload '{w.name}' is a {w.kind}, whose pods its operator makes: kailab does not scale it")
    if (too_long := w.longest_name(v.pods)) is not None:
        raise at.fail(too_long, "pods")
    return Scale(workload=w.name, pods=v.pods, **at.common)


class ScaleFile(FileModel):
    workload: Name
    pods: Count


class OnNodeFile(FileModel):
    node: Name


class DeletePodsFile(FileModel):
    node: Name | None = None
    workload: Name | None = None
    count: Annotated[StrictInt, Field(ge=1, le=MAX_PODS)] | None = None  # how many (all when left out)

    @model_validator(mode="after")
    def _some_scope(self):
        if self.node is None and self.workload is None:
            raise ValueError("deletePods needs a node, a workload or both: {node: NAME} or {workload: NAME, count: 1}")
        return self


def _delete_pods(v: DeletePodsFile, at: Where) -> DeletePods:
    workload = at.workload(v.workload, "workload").name if v.workload is not None else None
    return DeletePods(node=v.node, workload=workload, count=v.count, **at.common)


def _settings(given: BaseModel) -> SchedulerSettings:
    """A ``schedulerConfig:`` value → the scheduler's settings; a key left out keeps the lab's default."""
    try:
        return SchedulerSettings(
            **{f.name: v for f in fields(SchedulerSettings) if (v := getattr(given, to_camel(f.name))) is not None}
        )
    except KailabError as e:  # a value its type lets through, refused by the settings (usageParams' forms)
        raise ValueError(e.message) from None


# What a scenario may set in KAI's scheduler: SchedulerSettings' fields, in camelCase, each optional.
_hints = get_type_hints(SchedulerSettings)
_setting_fields: dict[str, Any] = {to_camel(f.name): (_hints[f.name] | None, None) for f in fields(SchedulerSettings)}
if TYPE_CHECKING:
    SchedulerFile = FileModel
else:
    SchedulerFile = create_model("SchedulerFile", __base__=FileModel, **_setting_fields)
SchedulerConfig = Annotated[SchedulerFile, AfterValidator(_settings)]


@dataclass(frozen=True)
class StepWord:
    """One step a scenario may take: its key, what the key holds, and the step it becomes."""

    word: str
    value: Any
    build: Callable[[Any, Where], Step]


STEPS = (
    StepWord("apply", Name, lambda v, at: Apply(workload=at.workload(v).name, **at.common)),
    StepWord("delete", Name, lambda v, at: Delete(workload=at.workload(v).name, **at.common)),
    StepWord("scale", ScaleFile, _scale),
    StepWord("queue", QueueFile, lambda v, at: SetQueue(queue=at.queue(v), **at.common)),
    StepWord("wait", Conditions, lambda v, at: Wait(expectations=at.conditions(), **at.common)),
    StepWord("expect", Conditions, lambda v, at: Expect(expectations=at.conditions(), **at.common)),
    StepWord("sleep", Seconds, lambda v, at: Sleep(seconds=v, **at.common)),
    StepWord("deletePods", DeletePodsFile, _delete_pods),  # the scenario's pods on a node, or N pods of a workload
    StepWord(
        "deleteWorkloads",
        OnNodeFile,  # every workload with a pod on that node
        lambda v, at: DeleteWorkloads(node=v.node, **at.common),
    ),
    StepWord("stopScheduler", Literal[True], lambda v, at: StopScheduler(**at.common)),
    StepWord("startScheduler", Literal[True], lambda v, at: StartScheduler(**at.common)),
    StepWord(
        "gpuLedger",
        Literal["stop", "start"],  # what gives GPU reservation pods their GPU (local runtime only)
        lambda v, at: GpuLedger(running=v == "start", **at.common),
    ),
    StepWord(
        "schedulerConfig",
        SchedulerConfig,  # restart the scheduler with these settings
        lambda v, at: StartScheduler(settings=v, restart=True, **at.common),
    ),
)
STEP_OF = {s.word: s for s in STEPS}
ACTIONS = tuple(STEP_OF)


class _Step(FileModel):
    """One step: exactly one of the STEPS' keys, and what every step may have."""

    timeout: Seconds | None = None
    note: StrictStr | None = None

    @model_validator(mode="after")
    def _one_action(self):
        exactly_one(self, ACTIONS, "a step")
        return self

    @property
    def action(self) -> str:
        return next(a for a in ACTIONS if getattr(self, a) is not None)


_step_fields: dict[str, Any] = {s.word: (s.value | None, None) for s in STEPS}
if TYPE_CHECKING:
    StepFile = _Step
else:
    StepFile = create_model("StepFile", __base__=_Step, **_step_fields)
