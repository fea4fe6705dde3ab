"""The scenario vocabulary: every word of a scenario file, declared once, and what the loader makes of it.

A workload key is a field of :class:`WorkloadFile` (manifests.py writes it into objects). A measure
is one line of :data:`MEASURES` (its check is in ``kailab/checks.py``). A step is one line of
:data:`STEPS` — its key, what it holds and the step it becomes (its player is in ``engine.py``). A kind of
graded prediction is one line of :data:`PREDICTIONS` (its answer is measured in ``kailab/predictions.py``).
The file's shape (``ConditionFile``, ``StepFile``), the loader's tables and the verdict titles
are derived from these declarations; exercises/README.md is tested against them.

Keys are the file's own (camelCase); unknown keys are errors (``extra="forbid"``). Checks
that need the whole file (a queue's parent exists, a step names a declared workload) are
in the loader, where every error still carries its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol, get_type_hints

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
    create_model,
    model_validator,
)
from pydantic.alias_generators import to_camel

from kailab.errors import KailabError
from kailab.labelfield import LabelKey, LabelValue
from kailab.labels import (
    COMPLETE_DELAY_ANNOTATION,
    GPU_FRACTION_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    HOSTNAME_LABEL,
    KAI_SCHEDULER_NAME,
    MANAGED,
    MIN_MEMBER_ANNOTATION,
    NODEPOOL_LABEL,
    POD_GROUP_ANNOTATION,
    PREEMPTIBILITY_LABEL,
    PREEMPTION_DELAY_ANNOTATION,
    QUEUE_API,
    QUEUE_LABEL,
    SKIP_PODGROUPER_ANNOTATION,
    STALENESS_ANNOTATION,
    SUBGROUP_LABEL,
    TOPOLOGY_ANNOTATION,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_REQUIRED_ANNOTATION,
)
from kailab.quantity import Quantity, amount
from kailab.scenarios.model import (
    Bound,
    ChoicePrediction,
    Expectation,
    NumberPrediction,
    Prediction,
    Step,
    WhichPrediction,
)
from kailab.scheduler_settings import SchedulerSettings

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
MAX_PODS = 1000  # per workload: the lab's fleets hold dozens; `kailab bench` is for thousands
MAX_SECONDS = 3600  # a sleep, timeout, hold or completeAfter: a lesson takes seconds, an hour is a mistake
MAX_NAME = 63  # a Kubernetes name that is also a label value or a DNS label

Name = Annotated[StrictStr, Field(pattern=DNS_LABEL, max_length=MAX_NAME)]
RESOURCE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)?$")


def _resource_name(text: str) -> str:
    if not RESOURCE_NAME.match(text):
        raise ValueError(
            f"{text!r} is not a resource a ResourceQuota limits; want one such as pods, requests.cpu or "
            "requests.nvidia.com/gpu"
        )
    return text


ResourceName = Annotated[StrictStr, AfterValidator(_resource_name)]  # a ResourceQuota's key
Count = Annotated[StrictInt, Field(ge=0, le=MAX_PODS)]


def seconds(text: Any) -> float:
    """``"30s"`` / ``"500ms"`` / ``"2m"`` / ``5`` → seconds, at most an hour."""
    m = DURATION.match(str(text)) if not isinstance(text, bool) else None
    if not m:
        raise ValueError(f"{text!r} is not a duration; want one such as 30s, 500ms or 2m")
    number, unit = float(m.group(1)), m.group(2) or "s"
    value = number / 1000 if unit == "ms" else number * 60 if unit == "m" else number
    if value > MAX_SECONDS:
        raise ValueError(
            f"{text!r} is {value:g} seconds; kailab waits at most 1h ({MAX_SECONDS}s): a lesson takes seconds"
        )
    return value


def _go_duration(text: Any) -> str:
    if not isinstance(text, str) or not GO_DURATION.match(text):
        raise ValueError(f"{text!r} is not a duration KAI reads; want one such as 30s, 5m or 1h30m")
    return text


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_seconds(text: str) -> float:
    """A Go duration that GO_DURATION accepts (``15s``, ``1m30s``) → seconds."""
    return sum(float(n) * _GO_UNITS[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


def _signed_go_duration(text: Any) -> str:
    """A Go duration that may be negative (KAI reads a negative staleness grace period as "never evict")."""
    if not isinstance(text, str) or not GO_DURATION.match(text.removeprefix("-")):
        raise ValueError(f"{text!r} is not a duration KAI reads; want one such as 30s, 5m, 1h30m (or -1s: never)")
    return text


def _bound(value: Any) -> Bound:
    if isinstance(value, Bound):
        return value
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a count; want 8, >=8, <=8, >8, <8 or 8..12")
    return Bound.parse(str(value))


def _whole_bound(value: Any) -> Bound:
    bound = _bound(value)
    if any(n is not None and not float(n).is_integer() for n in (bound.low, bound.high)):
        raise ValueError(f"{value!r} — this counts pods or nodes: want a whole number (8, >=8, 8..12)")
    return bound


Seconds = Annotated[StrictInt | StrictFloat | StrictStr, AfterValidator(seconds)]
GoDuration = Annotated[Any, AfterValidator(_go_duration)]
SignedGoDuration = Annotated[Any, AfterValidator(_signed_go_duration)]
Want = Annotated[Any, AfterValidator(_bound)]  # a count that may have decimals (GPUs)
WholeWant = Annotated[Any, AfterValidator(_whole_bound)]  # a count of pods or nodes
Number = StrictInt | StrictFloat


class FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _amount(value: float) -> float:
    if value < 0 and value != -1:
        raise ValueError(f"{value!r} — want a number ≥ 0, or -1 for unlimited")
    return value


Amount = Annotated[Number, AfterValidator(_amount)]
UNLIMITED = -1


class ResourceFile(FileModel):
    """One resource of a queue. ``-1`` is unlimited; KAI reads an unset limit as 0, so kailab writes -1."""

    quota: Amount = 0
    limit: Amount = UNLIMITED
    overQuotaWeight: Amount = 1

    @model_validator(mode="after")
    def _quota_within_limit(self):
        if self.limit != UNLIMITED and (self.quota == UNLIMITED or self.quota > self.limit):
            quota = "an unlimited quota (-1)" if self.quota == UNLIMITED else f"quota {self.quota:g}"
            raise ValueError(
                f"{quota} is above limit {self.limit:g}: a queue never gets more than its limit; "
                "raise the limit (or -1, unlimited) or lower the quota"
            )
        return self


_UNLIMITED = ResourceFile(quota=UNLIMITED)


class QueueFile(FileModel):
    """A queue; CPU and memory default to unlimited (an unset limit is 0 to KAI, which would block every pod)."""

    name: Name
    parent: Name | None = None
    priority: StrictInt | None = None
    gpu: ResourceFile = ResourceFile()
    cpu: ResourceFile = _UNLIMITED
    memory: ResourceFile = _UNLIMITED
    preemptMinRuntime: GoDuration | None = None
    reclaimMinRuntime: GoDuration | None = None
    nodePool: Name | None = None  # label kai.scheduler/node-pool: only the scheduler of that partition sees the queue


class PriorityClassFile(FileModel):
    name: Name
    value: Annotated[StrictInt, Field(ge=-(2**31), le=1_000_000_000)]
    preemptible: StrictBool | None = None
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"] | None = None  # Kubernetes' field; KAI does not read it


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


class TopologyLevelFile(FileModel):
    """One level of a Topology: the node label that names its domains, and an optional alias for it."""

    nodeLabel: LabelKey
    alias: LabelKey | None = None


class TopologyFile(FileModel):
    """A KAI Topology object (``kai.scheduler/v1alpha1``, cluster-scoped): its levels, the widest first.

    The rules KAI's CRD (its CEL rules, checked by the API server) and its admission webhook
    (``pkg/admission/webhook/topologyhooks/topology_validator.go``, which the local runtime does not run) hold a
    Topology to are checked here, so a file is refused with its line on every runtime.
    """

    name: Name
    levels: Annotated[list[TopologyLevelFile], Field(min_length=1, max_length=16)]

    @model_validator(mode="after")
    def _kais_rules(self):
        labels = [level.nodeLabel for level in self.levels]
        if len(set(labels)) != len(labels):
            raise ValueError("two levels have the same nodeLabel; KAI's CRD wants each nodeLabel once")
        if HOSTNAME_LABEL in labels[:-1]:
            raise ValueError(f"{HOSTNAME_LABEL} can only be the last (lowest) level of a topology (KAI's CRD)")
        aliases = [level.alias for level in self.levels if level.alias]
        if len(set(aliases)) != len(aliases):
            raise ValueError("two levels have the same alias; KAI's admission webhook wants each alias once")
        if clash := sorted(set(aliases) & set(labels)):
            raise ValueError(
                f"alias {clash[0]!r} is also a nodeLabel; KAI's admission webhook refuses an alias that equals "
                "a nodeLabel (a level would then be ambiguous)"
            )
        return self

    def level(self, name: str) -> int | None:
        """The index of the level a constraint names by nodeLabel or alias; None if none has that name."""
        return next((i for i, lv in enumerate(self.levels) if name in (lv.nodeLabel, lv.alias)), None)


class WorkloadTopologyFile(FileModel):
    """A workload's topology constraint: which Topology, the level its pods must share, the level they prefer."""

    name: Name
    required: LabelKey | None = None
    preferred: LabelKey | None = None

    @model_validator(mode="after")
    def _a_level(self):
        if self.required is None and self.preferred is None:
            raise ValueError("a topology constraint needs required: LEVEL, preferred: LEVEL or both")
        return self


class TolerationFile(FileModel):
    """One toleration of a workload's pods (Kubernetes' fields)."""

    key: LabelKey | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    @model_validator(mode="after")
    def _kubernetes_rules(self):
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("a toleration with operator: Exists matches any value: leave value out")
        if self.key is None and self.operator == "Equal":
            raise ValueError("a toleration without a key needs operator: Exists (it then tolerates every taint)")
        return self


class NodeRequirementFile(FileModel):
    """One requirement of a workload's required node affinity (Kubernetes' matchExpressions)."""

    key: LabelKey
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[LabelValue, ...] = ()

    @model_validator(mode="after")
    def _kubernetes_rules(self):
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator: {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator: {self.operator} takes no values: leave them out")
        return self


class PodAffinityTermFile(FileModel):
    """One required pod (anti-)affinity term: pods with these labels, in the same domain of ``topologyKey``."""

    matchLabels: Annotated[dict[LabelKey, LabelValue], Field(min_length=1)]
    topologyKey: LabelKey = HOSTNAME_LABEL


class DisruptionBudgetFile(FileModel):
    """A PodDisruptionBudget over the workload's pods (Kubernetes' ``policy/v1``)."""

    minAvailable: Annotated[StrictInt, Field(ge=0, le=MAX_PODS)]


# Labels and annotations kailab or KAI set on a workload's objects → what to write instead. A workload's
# ``labels:``/``annotations:`` may not set them: kailab would lose track of its pods, or KAI misread them.
OWN_KEYS = {
    **{key: "kailab sets it on everything it makes" for key in MANAGED},
    QUEUE_LABEL: "write queue: instead",
    PREEMPTIBILITY_LABEL: "write preemptibility: instead",
    "priorityClassName": "write priorityClass: instead",
    MIN_MEMBER_ANNOTATION: "write minMember: instead",
    SUBGROUP_LABEL: "write subGroups: instead",
    GPU_FRACTION_ANNOTATION: "write gpus: 0.5 instead",
    GPU_MEMORY_ANNOTATION: "write gpuMemory: MiB instead",
    POD_GROUP_ANNOTATION: "write kind: PodGroup instead",
    SKIP_PODGROUPER_ANNOTATION: "write kind: PodGroup instead",
    COMPLETE_DELAY_ANNOTATION: "write completeAfter: instead",
    TOPOLOGY_ANNOTATION: "write topology: {name: …} instead",
    TOPOLOGY_REQUIRED_ANNOTATION: "write topology: {required: LEVEL} instead",
    TOPOLOGY_PREFERRED_ANNOTATION: "write topology: {preferred: LEVEL} instead",
    PREEMPTION_DELAY_ANNOTATION: "write preemptionDelay: instead",
    STALENESS_ANNOTATION: "write stalenessGracePeriod: instead",
    NODEPOOL_LABEL: "write nodePool: instead",
}
OWN_PREFIXES = ("kailab.io/", "kai.scheduler/", "scheduling.run.ai/", "run.ai/")


# KAI's keys a workload may still write as annotations: where KAI reads them only as labels, the annotation is the
# mistake a runbook shows (runbooks/queue-annotation.md: KAI ignores it, the pods go to default-queue).
ANNOTATION_MISTAKES = frozenset({QUEUE_LABEL})


def _own_key(key: str) -> str | None:
    """What to do instead of setting a label or annotation key that is kailab's or KAI's; None if the key is free."""
    if key in OWN_KEYS:
        return OWN_KEYS[key]
    prefix = next((p for p in OWN_PREFIXES if key.startswith(p)), None)
    return None if prefix is None else f"kailab and KAI set the keys under {prefix} themselves"


class WorkloadFile(FileModel):
    """A group of identical pods: a Job (or ``jobs`` Jobs), bare Pods, a hand-made PodGroup with pods, or a Deployment."""

    name: Name
    kind: Literal["Job", "Pod", "PodGroup", "Deployment"] = "Job"
    pods: Count = 1  # per Job when ``jobs`` is set
    jobs: Annotated[StrictInt, Field(ge=1, le=MAX_PODS)] | None = None  # that many separate Jobs <name>-0 …
    gpus: Gpus = 1  # whole GPUs, or a fraction of one (KAI's gpu-fraction annotation)
    queue: Name | None = None
    scheduler: Name = KAI_SCHEDULER_NAME
    priorityClass: Name | None = None  # the priorityClassName label on the owner and the pods' spec
    priorityClassName: Name | None = None  # only the pods' spec.priorityClassName (no label)
    priorityClassLabel: Name | None = None  # only the priorityClassName label: KAI reads it, nobody checks it
    preemptibility: Literal["preemptible", "non-preemptible"] | None = None
    minMember: Annotated[StrictInt, Field(ge=1)] | None = None  # gang: batch-min-member (Job), minMember (PodGroup)
    subGroups: tuple[SubGroupFile, ...] = ()
    podGroupAfterPods: StrictBool = False  # a hand-made PodGroup is created after its pods
    node: Name | None = None  # pin the pods to this node (nodeSelector kubernetes.io/hostname)
    completeAfter: Seconds | None = None  # KWOK completes the pods after this long
    cpu: Quantity | None = None  # CPU request per pod; pods ask for no CPU unless set
    topology: WorkloadTopologyFile | None = None  # KAI's topology annotations (a PodGroup: spec.topologyConstraint)
    labels: dict[LabelKey, LabelValue] = {}
    annotations: dict[LabelKey, StrictStr] = {}
    # Resources beyond GPUs and a CPU request, and KAI's policies of one workload (the policies lessons)
    cpuLimit: Quantity | None = None  # CPU limit per pod
    memory: Quantity | None = None  # memory request per pod ("512Mi")
    memoryLimit: Quantity | None = None  # memory limit per pod
    preemptionDelay: GoDuration | None = None  # it may not evict anyone until it has waited this long
    stalenessGracePeriod: SignedGoDuration | None = None  # a gang short of pods is evicted after this long
    podGroupAnnotations: dict[LabelKey, StrictStr] = {}  # on a hand-made PodGroup (kind: PodGroup)
    podGroup: Name | None = None  # this Job's (or Pod's) pods join another workload's hand-made PodGroup
    nodePool: Name | None = None  # the kai.scheduler/node-pool label: only the KAI scheduler of that pool sees it
    nodeSelector: dict[LabelKey, LabelValue] = {}  # the pods' spec.nodeSelector, beside node:
    tolerations: tuple[TolerationFile, ...] | None = None  # unset: KWOK's fake-node taint, which every lab node has
    nodeAffinity: tuple[NodeRequirementFile, ...] = ()  # required node affinity: every requirement must hold
    schedulingGates: tuple[LabelKey, ...] = ()  # the pods' spec.schedulingGates: no scheduler looks at them
    # Words of the runbooks' causes (runbooks/scenarios/): what a pod asks of its node, its neighbours, its volumes
    gpuMemory: Annotated[StrictInt, Field(ge=1, le=1_048_576)] | None = None  # MiB of one GPU: KAI's gpu-memory
    podAffinity: tuple[PodAffinityTermFile, ...] = ()  # required: on a node (domain) with such pods
    podAntiAffinity: tuple[PodAffinityTermFile, ...] = ()  # required: on none with such pods
    volumeClaim: Name | None = None  # the pods mount this PersistentVolumeClaim, which kailab makes and nothing binds
    disruptionBudget: DisruptionBudgetFile | None = None  # a PodDisruptionBudget over the pods

    @model_validator(mode="after")
    def _requests_within_limits(self):
        for request, limit, word in ((self.cpu, self.cpuLimit, "cpu"), (self.memory, self.memoryLimit, "memory")):
            if request and limit and amount(request) > amount(limit):
                raise ValueError(
                    f"{word}: {request} is more than {word}Limit: {limit}; Kubernetes refuses a pod whose request "
                    "is above its limit: raise the limit or lower the request"
                )
        return self

    @model_validator(mode="after")
    def _policy_words(self):
        if self.podGroupAnnotations and self.kind != "PodGroup":
            raise ValueError("podGroupAnnotations are for a hand-made PodGroup (kind: PodGroup)")
        for key in self.podGroupAnnotations:
            if key in MANAGED or key.startswith("kailab.io/"):
                raise ValueError(f"podGroupAnnotations: '{key}' is kailab's own (it finds its objects by it)")
        if self.podGroup is not None:
            if self.kind not in ("Job", "Pod") or self.jobs is not None:
                raise ValueError("podGroup: joins another workload's PodGroup; it needs kind: Job (one Job) or Pod")
            if self.minMember is not None or self.preemptionDelay or self.stalenessGracePeriod is not None:
                raise ValueError(
                    "a workload that joins another's PodGroup (podGroup:) takes that PodGroup's minMember, "
                    "preemptionDelay and stalenessGracePeriod: set them on the PodGroup's workload"
                )
        return self

    @model_validator(mode="after")
    def _kind_words(self):
        if self.jobs is not None and self.kind != "Job":
            raise ValueError("jobs: N makes N separate Jobs; it needs kind: Job")
        if (self.subGroups or self.podGroupAfterPods) and self.kind != "PodGroup":
            raise ValueError("subGroups and podGroupAfterPods are for a hand-made PodGroup (kind: PodGroup)")
        if self.priorityClass and self.priorityClassName:
            raise ValueError("give priorityClass (label and spec) or priorityClassName (spec only), not both")
        if self.priorityClassLabel and self.priorityClass:
            raise ValueError(
                "give priorityClass (label and spec) or priorityClassLabel (label only), not both; "
                "priorityClassLabel with priorityClassName gives the label and the spec different names"
            )
        if self.priorityClassLabel and self.kind == "PodGroup":
            raise ValueError(
                "priorityClassLabel is read by KAI's pod-grouper, which leaves a hand-made PodGroup alone: "
                "give its class with priorityClass"
            )
        if self.node and HOSTNAME_LABEL in self.nodeSelector:
            raise ValueError(f"give node: or nodeSelector {HOSTNAME_LABEL}, not both")
        if len(set(self.schedulingGates)) != len(self.schedulingGates):
            raise ValueError("schedulingGates names a gate twice (Kubernetes refuses such a pod)")
        if self.subGroups and sum(g.pods for g in self.subGroups) != self.pods:
            raise ValueError(
                f"the subgroups' pods add up to {sum(g.pods for g in self.subGroups)}, "
                f"but the workload has pods: {self.pods}"
            )
        if self.gpuMemory is not None and ("gpus" in self.model_fields_set or self.kind == "PodGroup"):
            raise ValueError(
                "gpuMemory asks for part of one GPU by its memory (KAI's gpu-memory annotation), instead of gpus: "
                "give one or the other"
                + ("; a hand-made PodGroup's pods ask by gpus" if self.kind == "PodGroup" else "")
            )
        for words, keys in (("labels", self.labels), ("annotations", self.annotations)):
            for key in keys:
                if words == "annotations" and key in ANNOTATION_MISTAKES:
                    continue
                if (instead := _own_key(key)) is not None:
                    raise ValueError(
                        f"{words}: '{key}' is kailab's or KAI's own (kailab finds and counts its pods "
                        f"by such keys): leave it out; {instead}"
                    )
        if (too_long := self.longest_name(self.pods)) is not None:
            raise ValueError(too_long)
        return self

    def longest_name(self, pods: int) -> str | None:
        """Why the names kailab derives from this workload's (with ``pods`` pods) exceed Kubernetes' limit; None if they fit.

        Jobs are <name>-<i> with ``jobs:`` (a Job's name is also a label on its pods); bare pods are <name>-<i>.
        """
        many = self.jobs if self.jobs is not None else pods if self.kind in ("Pod", "PodGroup") else 0
        longest = f"{self.name}-{many - 1}" if many else self.name
        if len(longest) > MAX_NAME:
            what = "Job" if self.jobs is not None else "pod"
            return (
                f"the {what} names would be up to '{longest}' ({len(longest)} characters; Kubernetes allows "
                f"{MAX_NAME}): shorten the name to {MAX_NAME - len(longest) + len(self.name)} characters"
            )
        return None

    @property
    def priority_class(self) -> str | None:
        """The pods' priority class, whichever word gave it."""
        return self.priorityClassName or self.priorityClass

    @property
    def fraction(self) -> bool:
        return 0 < self.gpus < 1 and self.gpuMemory is None

    @property
    def total_pods(self) -> int:
        return self.pods * (self.jobs or 1)


class RequiresFile(FileModel):
    """What the scenario needs of the fleet; on another fleet its verdict is "not applicable"."""

    gpus: WholeWant | None = None
    nodes: WholeWant | None = None
    gpusPerNode: WholeWant | None = None  # every GPU node
    homogeneous: StrictBool | None = None  # every GPU node has the same number of GPUs
    cpuOnlyNodes: WholeWant | None = None
    nodeNames: list[Name] = []  # the fleet has nodes of these names
    cpusPerNode: Want | None = None  # every node's allocatable CPUs
    nodeLabels: list[LabelKey] = []  # every GPU node carries these labels (a Topology's levels)


class DomainsFile(FileModel):
    """How many values of a node label (racks, zones) a scope's bound pods are on: ``{label: rack-key, count: 1}``."""

    label: LabelKey
    count: WholeWant

    def __str__(self) -> str:
        c = self.count
        count = f"{c.low:g}..{c.high:g}" if c.op == ".." else f"{'' if c.op == '==' else c.op}{c.low:g}"
        return f"{self.label}={count}"


class PodGroupFieldFile(FileModel):
    """A PodGroup field's value, e.g. ``{path: spec.preemptibility, equals: preemptible}``."""

    path: Annotated[StrictStr, Field(pattern=r"^(spec|status|metadata)(\.[A-Za-z][A-Za-z0-9]*)+$")]
    equals: StrictStr | StrictInt | StrictBool

    def __str__(self) -> str:
        return f"{self.path}={str(self.equals).lower() if isinstance(self.equals, bool) else self.equals}"


class PodGroupReasonFile(FileModel):
    """A reason KAI gives in a PodGroup's ``status.schedulingConditions`` (and words its message holds)."""

    reason: Annotated[StrictStr, Field(pattern=r"^[A-Za-z][A-Za-z0-9]*$")]
    message: StrictStr | None = None

    def __str__(self) -> str:
        return self.reason + (f": {self.message}" if self.message else "")


# -- measures ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """One measure a condition may name: its key, what it holds, and the verdict row it makes."""

    word: str  # the file's key
    name: str  # the measure in the verdict (a check's ``measure``) and in kailab/checks.py
    value: Any  # what the file may give; Want or WholeWant: a count, checked against a Bound
    title: str | Callable[[str, str], str]  # the row's title, from who it is about and the wanted text
    about: str = ""  # "workload" or "queue": the scope it needs
    needs: str = ""  # what it needs of a cluster (model.ABILITIES)
    short: str = ""  # another key for the same measure

    @property
    def counted(self) -> bool:
        """A count, compared with a Bound (the rest are properties with a text)."""
        return self.value is Want or self.value is WholeWant

    def want(self, value: Any, raw: Any) -> str:
        """The wanted value as text: a count as the file wrote it, ``true``, or the property's text."""
        return str(raw) if self.counted else str(value).lower() if isinstance(value, bool) else str(value)

    def titled(self, who: str, want: str) -> str:
        return self.title(who, want) if callable(self.title) else self.title.format(who=who, want=want)


MEASURES = (
    Measure("pods", "pods", WholeWant, "{who}: pods that exist"),
    Measure("running", "running", WholeWant, "{who}: pods Running"),
    Measure("pending", "pending", WholeWant, "{who}: pods Pending"),
    Measure("bound", "bound", WholeWant, "{who}: pods bound to a node"),
    Measure("evicted", "evicted", WholeWant, "{who}: pods evicted or preempted"),
    Measure("allocated", "allocated", Want, "{who}: GPUs allocated", short="gpus"),
    Measure("unschedulable", "unschedulable", WholeWant, "{who}: pods marked unschedulable"),
    Measure("nodes", "nodes", WholeWant, "{who}: nodes its bound pods are on"),
    Measure("fractionGpus", "fraction_gpus", WholeWant, "{who}: GPUs its fractions are on"),
    Measure("fairShare", "fair_share", Want, "{who}: fair share of GPUs (KAI's)", about="queue", needs="fair-share"),
    Measure(
        "placement",
        "placement",
        Literal["distinct", "oneNode"],
        lambda who, want: f"{who}: pods {'on distinct nodes' if want == 'distinct' else 'all on one node'}",
    ),
    Measure("allOrNone", "all_or_none", Literal[True], "{who}: gang binds all or none", about="workload"),
    Measure("reason", "reason", StrictStr, "{who}: reason given for waiting"),
    Measure("notReason", "not_reason", StrictStr, "{who}: reason given does not mention"),
    Measure("boundBefore", "bound_before", Name, "{who} bound before {want}", about="workload"),
    Measure(
        "podGroupField",
        "pod_group_field",
        PodGroupFieldFile,
        lambda who, want: f"{who}: PodGroup {want.split('=')[0]}",
        about="workload",
    ),
    Measure(
        "domains",
        "domains",
        DomainsFile,
        lambda who, want: f"{who}: values of {want.partition('=')[0]} its pods are on",
    ),
    Measure(
        "schedulingCondition",
        "scheduling_condition",
        StrictStr,
        "{who}: PodGroup has scheduling condition",
        about="workload",
    ),
    Measure(
        "noSchedulingCondition",
        "no_scheduling_condition",
        StrictStr,
        "{who}: PodGroup has no scheduling condition",
        about="workload",
    ),
    Measure(
        "podGroupReason",
        "pod_group_reason",
        PodGroupReasonFile,
        lambda who, want: f"{who}: PodGroup says {want.split(':')[0]}",
        about="workload",
    ),
    Measure(
        "podGroupAnnotation", "pod_group_annotation", LabelKey, "{who}: PodGroup annotated {want}", about="workload"
    ),
    Measure("onNodeWith", "on_node_with", Name, "{who} on a node with {want}", about="workload"),
    Measure(
        "queueExists",
        "queue_exists",
        StrictBool,
        lambda who, want: f"{who}: Queue object {'exists' if want == 'true' else 'does not exist'}",
        about="queue",
    ),
    Measure("queueAllocated", "queue_allocated", Want, "{who}: GPUs allocated (Queue status)", about="queue"),
)
MEASURE_OF_KEY = {key: m for m in MEASURES for key in (m.word, m.short) if key}  # file key → measure
MEASURE_NAMED = {m.name: m for m in MEASURES}  # verdict name → measure
_NEEDS_SCOPE = {
    "workload": "{word} is about one workload: add 'workload: NAME'",
    "queue": "{word} is a queue's: add 'queue: NAME'",
}


class WindowFile(FileModel):
    """A window KAI measures on each PodGroup of a workload, which a condition must hold through (``throughWindow``):
    its queue's reclaimMinRuntime or preemptMinRuntime (from the PodGroup's last start), its preemptionDelay (from
    the PodGroup's creation or last eviction), its stalenessGracePeriod (from when KAI marked it stale)."""

    workload: Name
    kind: Literal["reclaimMinRuntime", "preemptMinRuntime", "preemptionDelay", "stalenessGracePeriod"]


class _Condition(FileModel):
    """One condition of a wait or expect step: a scope and one or more measures (the fields MEASURES adds)."""

    queue: Name | None = None
    workload: Name | None = None
    node: Name | None = None
    subGroup: Name | None = None
    title: StrictStr | None = None
    stable: Seconds | None = None
    notBefore: Seconds | None = None  # it may first hold no earlier than this long after the last changing step
    within: Seconds | None = None  # it must first hold within this long after the last changing step
    throughWindow: WindowFile | None = None  # it must keep holding until this window of KAI's ends

    @model_validator(mode="before")
    @classmethod
    def _short_keys(cls, data: Any) -> Any:
        # A measure's short key (``gpus`` for ``allocated``) is the same measure.
        if isinstance(data, dict):
            for m in MEASURES:
                if m.short and m.short in data:
                    if m.word in data:
                        raise ValueError(f"give {m.word} or {m.short}, not both")
                    data = {(m.word if k == m.short else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _one_measure(self):
        if not any(getattr(self, m.word) is not None for m in MEASURES):
            raise ValueError("a condition needs a measure: " + ", ".join(m.word for m in MEASURES))
        for m in MEASURES:
            if m.about and getattr(self, m.word) is not None and getattr(self, m.about) is None:
                raise ValueError(_NEEDS_SCOPE[m.about].format(word=m.word))
        if self.subGroup is not None and not self.workload:
            raise ValueError("subGroup names a subgroup of one workload: add 'workload: NAME'")
        if self.notBefore is not None and self.within is not None and self.notBefore > self.within:
            raise ValueError(
                f"notBefore ({self.notBefore:g}s) is after within ({self.within:g}s): nothing could hold in between"
            )
        if self.stable is not None and self.throughWindow is not None:
            raise ValueError(
                "give stable (seconds) or throughWindow (until a window of KAI's ends), not both: "
                "a window is timed by the cluster's clock"
            )
        return self


# The models below get one field per declared word, made at import time. A type checker cannot see fields made
# that way: to it each model is its base class (which it is), and a word's field reads as an unknown attribute.
_measure_fields: dict[str, Any] = {m.word: (m.value | None, None) for m in MEASURES}
if TYPE_CHECKING:
    ConditionFile = _Condition
else:
    ConditionFile = create_model("ConditionFile", __base__=_Condition, **_measure_fields)


class EitherFile(FileModel):
    """An either-or claim: it holds when every measure of one of its conditions holds."""

    anyOf: list[ConditionFile]
    title: StrictStr | None = None
    stable: Seconds | None = None

    @model_validator(mode="after")
    def _two_or_more(self):
        if len(self.anyOf) < 2:
            raise ValueError("anyOf needs two or more conditions (for one, write the condition itself)")
        return self


def _either_or_not(value: Any) -> str:
    return "either" if isinstance(value, dict) and "anyOf" in value else "condition"


OneCondition = Annotated[
    Annotated[ConditionFile, Tag("condition")] | Annotated[EitherFile, Tag("either")],
    Discriminator(_either_or_not),
]


def _one_or_many(value: Any) -> str:
    return "many" if isinstance(value, list) else "one"


Conditions = Annotated[
    Annotated[OneCondition, Tag("one")] | Annotated[list[OneCondition], Tag("many")],
    Discriminator(_one_or_many),
]


# -- steps ---------------------------------------------------------------------------------------


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

    queue: QueueFile


@dataclass(frozen=True, kw_only=True)
class Sleep(Step):
    """Let time pass (changes are still folded in), e.g. for a protection window to elapse."""

    seconds: float


@dataclass(frozen=True, kw_only=True)
class NodeStep(Step):
    """A step about one node of the fleet."""

    node: str


@dataclass(frozen=True, kw_only=True)
class DeletePods(Step):
    """Delete the scenario's pods on one node, of one workload, or both; ``count`` of them (bound ones first, by
    name) or all. Their owners may make new ones; a hand-made PodGroup's bare pods stay gone."""

    node: str | None = None
    workload: str | None = None
    count: int | None = None


class DeleteWorkloads(NodeStep):
    """Delete every workload that has a pod on one node."""


@dataclass(frozen=True, kw_only=True)
class StopScheduler(Step):
    """Stop KAI's scheduler: pods submitted now wait, together, until it starts."""

    needs: ClassVar[frozenset[str]] = frozenset({"scheduler-control"})


@dataclass(frozen=True, kw_only=True)
class StartScheduler(Step):
    """Start KAI's scheduler with these settings (the lab's defaults when empty)."""

    needs: ClassVar[frozenset[str]] = frozenset({"scheduler-control"})
    settings: SchedulerSettings = field(default_factory=SchedulerSettings)
    restart: bool = False  # stop it first (a configuration change)


@dataclass(frozen=True, kw_only=True)
class GpuLedger(Step):
    """Stop or start what gives KAI's GPU reservation pods their GPU (the GPU operator's part; kailab's GPU
    ledger on the local runtime): stopped, a GPU-sharing pod's reservation never gets one and KAI's binder gives up."""

    needs: ClassVar[frozenset[str]] = frozenset({"gpu-ledger-control"})
    running: bool


@dataclass(frozen=True, kw_only=True)
class Wait(Step):
    """Wait until every expectation holds; a row in the verdict only when it fails."""

    expectations: tuple[Expectation, ...]


@dataclass(frozen=True, kw_only=True)
class Expect(Wait):
    """Wait until every expectation holds (and keeps holding); one verdict row each."""


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
        raise at.fail(f"workload '{w.name}' cannot be scaled: scale a single Job, a Deployment or bare Pods")
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


def _exactly_one(model: Any, words: tuple[str, ...], what: str) -> None:
    """``model`` (a step, a prediction) has exactly one of ``words``; else the error says which it has."""
    given = [w for w in words if getattr(model, w) is not None]
    if len(given) != 1:
        raise ValueError(
            f"{what} needs exactly one of {', '.join(words)}" + (f"; this one has {', '.join(given)}" if given else "")
        )


class _Step(FileModel):
    """One step: exactly one of the STEPS' keys, and what every step may have."""

    timeout: Seconds | None = None
    note: StrictStr | None = None

    @model_validator(mode="after")
    def _one_action(self):
        _exactly_one(self, ACTIONS, "a step")
        return self

    @property
    def action(self) -> str:
        return next(a for a in ACTIONS if getattr(self, a) is not None)


_step_fields: dict[str, Any] = {s.word: (s.value | None, None) for s in STEPS}
if TYPE_CHECKING:
    StepFile = _Step
else:
    StepFile = create_model("StepFile", __base__=_Step, **_step_fields)


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
        _exactly_one(self, tuple(PREDICTION_OF), "a prediction")
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


class KaiResource(ResourceFile):
    """One resource of a Queue object as KAI reads it: a field left out is 0 (pkg/apis/scheduling/v2/resources.go has
    no defaults, and the CRD none), so an unset limit allows nothing and an unset weight gets no spare GPUs."""

    quota: Amount = 0
    limit: Amount = 0
    overQuotaWeight: Amount = 0

    @model_validator(mode="after")
    def _quota_within_limit(self):
        if "limit" not in self.model_fields_set and self.quota != 0:
            raise ValueError(
                "the limit is left out, and KAI reads an unset limit as 0 (no GPUs at all, whatever the quota): "
                "write limit: -1 for unlimited, or a number"
            )
        return ResourceFile._quota_within_limit(self)


_KAI_UNSET = KaiResource()


class QueueResources(FileModel):
    gpu: KaiResource = _KAI_UNSET
    cpu: KaiResource = _KAI_UNSET
    memory: KaiResource = _KAI_UNSET


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

    apiVersion: Literal[QUEUE_API]  # type: ignore[valid-type]
    kind: Literal["Queue"]
    metadata: QueueMetadata
    spec: QueueObjectSpec = QueueObjectSpec()
