"""The scenario file as a whole, and the graded predictions a lesson may ask.

:class:`ScenarioFile` is the file; :data:`PREDICTIONS` each prediction kind's key, what it holds and the prediction
it becomes (answers measured in ``kailab/predictions.py``).

The vocabulary's other words have a module each: what a scenario declares (``objects.py``: queues, workloads…), the
measures of its conditions (``measures.py``), its steps (``steps.py``); exercises/README.md is tested against them.
Keys are the file's own (camelCase); unknown keys are errors (``extra="forbid"``). Checks that need the whole file (a
queue's parent exists, a step names a declared workload) are in the loader, where every error still carries its line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import Discriminator, Field, StrictInt, StrictStr, Tag, create_model, model_validator

from kailab.quantity import Quantity
from kailab.scenarios.measures import _NEEDS_SCOPE, MEASURE_OF_KEY, Conditions
from kailab.scenarios.model import ChoicePrediction, Expectation, NumberPrediction, Prediction, WhichPrediction
from kailab.scenarios.objects import PriorityClassFile, QueueFile, RequiresFile, TopologyFile, WorkloadFile
from kailab.scenarios.steps import StepFile
from kailab.scenarios.values import MAX_NAME, FileModel, Name, Number, ResourceName, exactly_one

# -- predictions ---------------------------------------------------------------------------------

# The measures a prediction may count: the counting ones (fairShare, a queue's, only for a number).
COUNT_WORDS = tuple(k for k, m in MEASURE_OF_KEY.items() if m.counted)
WORKLOAD_COUNT_WORDS = tuple(k for k in COUNT_WORDS if not MEASURE_OF_KEY[k].about)


class NumberFile(FileModel):
    """``number: {queue: team-ops, measure: allocated, tolerance: 1}``: how many, in a scope, after the step."""

    queue: Name | None = None
    workload: Name | None = None
    node: Name | None = None
    measure: Literal[COUNT_WORDS]  # type: ignore[valid-type]
    tolerance: Annotated[Number, Field(ge=0)] = 0

    @model_validator(mode="after")
    def _scope(self):
        about = MEASURE_OF_KEY[self.measure].about
        if about and getattr(self, about) is None:
            raise ValueError(_NEEDS_SCOPE[about].format(word=self.measure))
        return self


class WhichFile(FileModel):
    """``which: {measure: evicted, among: [keeper, low]}``: the workload with the most of a count after the step."""

    measure: Literal[WORKLOAD_COUNT_WORDS]  # type: ignore[valid-type]
    among: Annotated[list[Name], Field(min_length=2)] | None = None  # default: every workload a step applies


Choices = Annotated[dict[Name, Conditions], Field(min_length=2)]  # option → the conditions that make it right


class PredictionWhere(Protocol):
    """What a prediction's declaration may ask of the loader while it builds it (every error names file:line)."""

    common: dict  # key, ask, at and line: every prediction has them

    def fail(self, message: str, *loc: Any) -> Exception: ...

    def scope(self, value: Any, *loc: Any) -> Expectation:
        """A scope (queue, workload, node) and a measure → an expectation to count with; its names checked."""

    def conditions(self, option: str) -> tuple[Expectation, ...]:
        """An option's conditions, one expectation per measure."""

    def applied(self) -> tuple[str, ...]:
        """The workloads some step applies, in the file's order."""


def _which(v: WhichFile, at: PredictionWhere) -> WhichPrediction:
    applied = at.applied()
    among = tuple(v.among) if v.among is not None else applied
    for i, name in enumerate(among):
        if name not in applied:
            raise at.fail(f"'{name}' is not a workload any step applies (applied: {', '.join(applied)})", "among", i)
    if len(set(among)) != len(among):
        raise at.fail("a workload is named twice", "among")
    if len(among) < 2:
        raise at.fail("'which' needs at least two workloads to choose from (list them under among:)")
    return WhichPrediction(measure=MEASURE_OF_KEY[v.measure].name, among=among, **at.common)


@dataclass(frozen=True)
class PredictionWord:
    """One kind of graded prediction: its key, what the key holds, the prediction it becomes, and how the learner
    answers it."""

    word: str
    value: Any
    build: Callable[[Any, PredictionWhere], Prediction]
    answer: str  # how a learner answers, for prompts and errors


PREDICTIONS = (
    PredictionWord(
        "number",
        NumberFile,
        lambda v, at: NumberPrediction(of=at.scope(v), tolerance=v.tolerance, **at.common),
        "a number",
    ),
    PredictionWord(
        "choice",
        Choices,
        lambda v, at: ChoicePrediction(choices=tuple((o, at.conditions(o)) for o in v), **at.common),
        "one of the choices",
    ),
    PredictionWord("which", WhichFile, _which, "a workload's name, or none"),
)
PREDICTION_OF = {p.word: p for p in PREDICTIONS}


class _Prediction(FileModel):
    """One prediction: a key, a question, when it is measured, and exactly one of the PREDICTIONS' keys."""

    key: Name
    ask: Annotated[StrictStr, Field(min_length=1)]
    at: Annotated[StrictInt, Field(ge=1)] | None = None  # the expect step it is measured at; default: the last

    @model_validator(mode="after")
    def _one_kind(self):
        exactly_one(self, tuple(PREDICTION_OF), "a prediction")
        return self

    @property
    def kind(self) -> PredictionWord:
        return next(p for p in PREDICTIONS if getattr(self, p.word) is not None)


_prediction_fields: dict[str, Any] = {p.word: (p.value | None, None) for p in PREDICTIONS}
if TYPE_CHECKING:
    PredictionFile = _Prediction
else:
    PredictionFile = create_model("PredictionFile", __base__=_Prediction, **_prediction_fields)


# -- the file ------------------------------------------------------------------------------------


def _lesson_or_queue(value: Any) -> str:
    return "lesson" if value == "lesson" else "queue"


QueueItem = Annotated[
    Annotated[Literal["lesson"], Tag("lesson")] | Annotated[QueueFile, Tag("queue")],
    Discriminator(_lesson_or_queue),
]


def _queues_shape(value: Any) -> str:
    return "lesson" if value == "lesson" else "list"


Queues = Annotated[
    Annotated[Literal["lesson"], Tag("lesson")] | Annotated[list[QueueItem], Tag("list")],
    Discriminator(_queues_shape),
]


class ScenarioFile(FileModel):
    name: Annotated[Name, Field(max_length=MAX_NAME - len("kailab-"))]  # the namespace kailab-<name> must fit
    title: StrictStr | None = None
    lesson: StrictStr = ""
    namespace: Name | None = None
    queues: Queues = []
    missingQueues: list[Name] = []
    missingSchedulers: list[Name] = []  # scheduler names no scheduler answers to (a typo, on purpose)
    missingPriorityClasses: list[Name] = []  # priority class names nobody made (a typo, on purpose)
    onParentQueue: list[Name] = []  # workloads on a parent queue on purpose (KAI leaves them Pending, silently)
    priorityClasses: list[PriorityClassFile] = []
    workloads: list[WorkloadFile] = []
    requires: RequiresFile | None = None
    topologies: list[TopologyFile] = []  # KAI Topology objects the scenario's workloads name
    # A ResourceQuota in the scenario's namespace: the API server refuses pods past it (runbooks/pods-refused.md)
    namespaceQuota: Annotated[dict[ResourceName, Quantity], Field(min_length=1)] | None = None
    steps: Annotated[list[StepFile], Field(min_length=1)]
    predictions: list[PredictionFile] = []
    verify: StrictStr = ""
