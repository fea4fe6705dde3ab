"""The scenario file format, declared: what each key may hold. ``loader.py`` turns it into the model.

Keys are the file's own (camelCase); unknown keys are errors (``extra="forbid"``). Checks
that need the whole file (a queue's parent exists, a step names a declared workload) are
in the loader, where every error still carries its line.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    model_validator,
)

from kailab.scenarios.model import Bound

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
QUANTITY = re.compile(r"^\d+(\.\d+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_PODS = 1000  # per workload: the lab's fleets hold dozens; `kailab bench` is for thousands

Name = Annotated[StrictStr, Field(pattern=DNS_LABEL, max_length=63)]
Count = Annotated[StrictInt, Field(ge=0, le=MAX_PODS)]


def seconds(text: Any) -> float:
    """``"30s"`` / ``"500ms"`` / ``"2m"`` / ``5`` → seconds."""
    m = DURATION.match(str(text)) if not isinstance(text, bool) else None
    if not m:
        raise ValueError(f"{text!r} is not a duration; want one such as 30s, 500ms or 2m")
    number, unit = float(m.group(1)), m.group(2) or "s"
    return number / 1000 if unit == "ms" else number * 60 if unit == "m" else number


def _go_duration(text: Any) -> str:
    if not isinstance(text, str) or not GO_DURATION.match(text):
        raise ValueError(f"{text!r} is not a duration KAI reads; want one such as 30s, 5m or 1h30m")
    return text


def _quantity(text: Any) -> str:
    if isinstance(text, bool) or not QUANTITY.match(str(text)):
        raise ValueError(f"{text!r} is not a Kubernetes quantity; want one such as 1, 500m or 2")
    return str(text)


def _label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or not LABEL_NAME.match(name):
        raise ValueError(f"{key!r} is not a valid label or annotation key (an optional DNS prefix and '/', "
                         "then up to 63 letters, digits, '-', '_' or '.')")
    return key


def _bound(value: Any) -> Bound:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a count; want 8, >=8, <=8, >8, <8 or 8..12")
    return Bound.parse(str(value))


Seconds = Annotated[Union[StrictInt, StrictFloat, StrictStr], AfterValidator(seconds)]
GoDuration = Annotated[Any, AfterValidator(_go_duration)]
Quantity = Annotated[Any, AfterValidator(_quantity)]
LabelKey = Annotated[StrictStr, AfterValidator(_label_key)]
Want = Annotated[Any, AfterValidator(_bound)]
Number = Union[StrictInt, StrictFloat]


class FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _amount(value: float) -> float:
    if value < 0 and value != -1:
        raise ValueError(f"{value!r} — want a number ≥ 0, or -1 for unlimited")
    return value


Amount = Annotated[Number, AfterValidator(_amount)]


class ResourceFile(FileModel):
    quota: Amount = 0
    limit: Amount = -1  # KAI reads an omitted limit as 0; kailab writes -1 (unlimited) unless given
    overQuotaWeight: Amount = 1


class QueueFile(FileModel):
    name: Name
    parent: Name | None = None
    priority: StrictInt | None = None
    gpu: ResourceFile | None = None
    cpu: ResourceFile | None = None
    memory: ResourceFile | None = None
    preemptMinRuntime: GoDuration | None = None
    reclaimMinRuntime: GoDuration | None = None


class PriorityClassFile(FileModel):
    name: Name
    value: Annotated[StrictInt, Field(ge=-(2**31), le=1_000_000_000)]
    preemptible: StrictBool | None = None


def _gpus(value: float) -> float:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= 64:
        return value
    if isinstance(value, float) and 0 < value < 1:
        return value
    raise ValueError(f"{value!r} — want whole GPUs (0 to 64) or a fraction of one GPU (0.5)")


Gpus = Annotated[Number, AfterValidator(_gpus)]


class SubGroupFile(FileModel):
    """A subgroup of a hand-made PodGroup: its own gang size and pods (label kai.scheduler/subgroup-name)."""

    name: Name
    pods: Count
    minMember: Annotated[StrictInt, Field(ge=1)] | None = None


class WorkloadFile(FileModel):
    name: Name
    kind: Literal["Job", "Pod", "PodGroup", "Deployment"] = "Job"
    pods: Count = 1
    jobs: Annotated[StrictInt, Field(ge=1, le=MAX_PODS)] | None = None  # that many separate Jobs (kind Job)
    gpus: Gpus = 1
    queue: Name | None = None
    scheduler: Name = "kai-scheduler"
    priorityClass: Name | None = None  # the priorityClassName label on the owner and the pods' spec
    priorityClassName: Name | None = None  # only the pods' spec.priorityClassName (no label)
    preemptibility: Literal["preemptible", "non-preemptible"] | None = None
    minMember: Annotated[StrictInt, Field(ge=1)] | None = None
    subGroups: list[SubGroupFile] = []
    podGroupAfterPods: StrictBool = False
    node: Name | None = None  # pin the pods to this node (nodeSelector kubernetes.io/hostname)
    completeAfter: Seconds | None = None
    cpu: Quantity | None = None
    labels: dict[LabelKey, StrictStr] = {}
    annotations: dict[LabelKey, StrictStr] = {}

    @model_validator(mode="after")
    def _kind_words(self):
        if self.jobs is not None and self.kind != "Job":
            raise ValueError("jobs: N makes N separate Jobs; it needs kind: Job")
        if (self.subGroups or self.podGroupAfterPods) and self.kind != "PodGroup":
            raise ValueError("subGroups and podGroupAfterPods are for a hand-made PodGroup (kind: PodGroup)")
        if self.priorityClass and self.priorityClassName:
            raise ValueError("give priorityClass (label and spec) or priorityClassName (spec only), not both")
        if self.subGroups and sum(g.pods for g in self.subGroups) != self.pods:
            raise ValueError(f"the subgroups' pods add up to {sum(g.pods for g in self.subGroups)}, "
                             f"but the workload has pods: {self.pods}")
        return self


class PodGroupFieldFile(FileModel):
    """A PodGroup field's value, e.g. ``{path: spec.preemptibility, equals: preemptible}``."""

    path: Annotated[StrictStr, Field(pattern=r"^(spec|status|metadata)(\.[A-Za-z][A-Za-z0-9]*)+$")]
    equals: Union[StrictStr, StrictInt, StrictBool]


class ConditionFile(FileModel):
    """One condition of a wait or expect step: a scope and one or more measures."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    queue: Name | None = None
    workload: Name | None = None
    node: Name | None = None
    subGroup: Name | None = None
    title: StrictStr | None = None
    stable: Seconds | None = None
    pods: Want | None = None
    running: Want | None = None
    pending: Want | None = None
    bound: Want | None = None
    evicted: Want | None = None
    allocated: Want | None = Field(None, alias="gpus")
    unschedulable: Want | None = None
    nodes: Want | None = None
    fractionGpus: Want | None = None  # distinct GPUs the scope's bound fraction pods are on
    fairShare: Want | None = None  # the queue's fair share of GPUs, as KAI's scheduler publishes it
    placement: Literal["distinct", "oneNode"] | None = None
    allOrNone: Literal[True] | None = None
    reason: StrictStr | None = None
    notReason: StrictStr | None = None
    boundBefore: Name | None = None
    podGroupField: PodGroupFieldFile | None = None
    schedulingCondition: StrictStr | None = None
    noSchedulingCondition: StrictStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _allocated(cls, data: Any) -> Any:
        # ``allocated`` and its short form ``gpus`` are one measure.
        if isinstance(data, dict) and "allocated" in data:
            if "gpus" in data:
                raise ValueError("give allocated or gpus, not both")
            data = {("gpus" if k == "allocated" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _one_measure(self):
        if not any(getattr(self, m) is not None for m in MEASURES):
            raise ValueError("a condition needs a measure: " + ", ".join(MEASURE_WORDS.values()))
        for m in ("allOrNone", "boundBefore", "podGroupField", "schedulingCondition", "noSchedulingCondition"):
            if getattr(self, m) is not None and not self.workload:
                raise ValueError(f"{m} is about one workload: add 'workload: NAME'")
        if self.fairShare is not None and not self.queue:
            raise ValueError("fairShare is a queue's: add 'queue: NAME'")
        if self.subGroup is not None and not self.workload:
            raise ValueError("subGroup names a subgroup of one workload: add 'workload: NAME'")
        return self


# measure attribute → the word a scenario file uses
MEASURE_WORDS = {"pods": "pods", "running": "running", "pending": "pending", "bound": "bound", "evicted": "evicted",
                 "allocated": "allocated", "unschedulable": "unschedulable", "nodes": "nodes", "fractionGpus": "fractionGpus", "fairShare": "fairShare",
                 "placement": "placement", "allOrNone": "allOrNone", "reason": "reason", "notReason": "notReason",
                 "boundBefore": "boundBefore", "podGroupField": "podGroupField",
                 "schedulingCondition": "schedulingCondition", "noSchedulingCondition": "noSchedulingCondition"}
MEASURES = tuple(MEASURE_WORDS)


def _one_or_many(value: Any) -> str:
    return "many" if isinstance(value, list) else "one"


Conditions = Annotated[
    Union[Annotated[ConditionFile, Tag("one")], Annotated[list[ConditionFile], Tag("many")]],
    Discriminator(_one_or_many),
]


class ScaleFile(FileModel):
    workload: Name
    pods: Count


class OnNodeFile(FileModel):
    node: Name


class SchedulerFile(FileModel):
    """What a scenario may set in KAI's scheduler; what is left out keeps the lab's default."""

    gpuPlacement: Literal["binpack", "spread"] | None = None
    cpuPlacement: Literal["binpack", "spread"] | None = None
    fullHierarchyFairness: StrictBool | None = None


ACTIONS = ("apply", "delete", "scale", "queue", "wait", "expect", "sleep", "deletePods", "deleteWorkloads",
           "stopScheduler", "startScheduler", "schedulerConfig")


class StepFile(FileModel):
    apply: Name | None = None
    delete: Name | None = None
    scale: ScaleFile | None = None
    queue: QueueFile | None = None
    wait: Conditions | None = None
    expect: Conditions | None = None
    sleep: Seconds | None = None
    deletePods: OnNodeFile | None = None  # the scenario's pods on that node
    deleteWorkloads: OnNodeFile | None = None  # every workload with a pod on that node
    stopScheduler: Literal[True] | None = None
    startScheduler: Literal[True] | None = None
    schedulerConfig: SchedulerFile | None = None  # restart the scheduler with these settings
    timeout: Seconds | None = None
    note: StrictStr | None = None

    @model_validator(mode="after")
    def _one_action(self):
        given = [a for a in ACTIONS if getattr(self, a) is not None]
        if len(given) != 1:
            raise ValueError(f"a step needs exactly one of {', '.join(ACTIONS)}"
                             + (f"; this one has {', '.join(given)}" if given else ""))
        return self

    @property
    def action(self) -> str:
        return next(a for a in ACTIONS if getattr(self, a) is not None)


def _lesson_or_queue(value: Any) -> str:
    return "lesson" if value == "lesson" else "queue"


QueueItem = Annotated[
    Union[Annotated[Literal["lesson"], Tag("lesson")], Annotated[QueueFile, Tag("queue")]],
    Discriminator(_lesson_or_queue),
]


def _queues_shape(value: Any) -> str:
    return "lesson" if value == "lesson" else "list"


Queues = Annotated[
    Union[Annotated[Literal["lesson"], Tag("lesson")], Annotated[list[QueueItem], Tag("list")]],
    Discriminator(_queues_shape),
]


class RequiresFile(FileModel):
    """What the scenario needs of the fleet; on another fleet its verdict is "not applicable"."""

    gpus: Want | None = None
    nodes: Want | None = None
    gpusPerNode: Want | None = None  # every GPU node
    homogeneous: StrictBool | None = None  # every GPU node has the same number of GPUs
    cpuOnlyNodes: Want | None = None


class ScenarioFile(FileModel):
    name: Annotated[Name, Field(max_length=56)]  # the namespace kailab-<name> must fit in 63
    title: StrictStr | None = None
    lesson: StrictStr = ""
    namespace: Name | None = None
    queues: Queues = []
    missingQueues: list[Name] = []
    missingSchedulers: list[Name] = []  # scheduler names no scheduler answers to (a typo, on purpose)
    priorityClasses: list[PriorityClassFile] = []
    workloads: list[WorkloadFile] = []
    requires: RequiresFile | None = None
    steps: Annotated[list[StepFile], Field(min_length=1)]
    verify: StrictStr = ""


class QueueResources(FileModel):
    gpu: ResourceFile | None = None
    cpu: ResourceFile | None = None
    memory: ResourceFile | None = None


class QueueObjectSpec(FileModel):
    parentQueue: Name | None = None
    priority: StrictInt | None = None
    resources: QueueResources = QueueResources()
    preemptMinRuntime: GoDuration | None = None
    reclaimMinRuntime: GoDuration | None = None


class QueueMetadata(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: Name


class QueueObject(FileModel):
    """A KAI Queue object as ``kubectl apply`` takes it (manifests/queues.yaml)."""

    apiVersion: Literal["scheduling.run.ai/v2"]
    kind: Literal["Queue"]
    metadata: QueueMetadata
    spec: QueueObjectSpec = QueueObjectSpec()
