"""What a scenario declares (queues, priority classes, topologies, workloads, the fleet it needs); KAI's Queue.

Each key is a field (``extra="forbid"``). KAI's Queue object is declared as ``manifests/queues.yaml`` writes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

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
    PRIORITY_CLASS_LABEL,
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
from kailab.scenarios import operated
from kailab.scenarios.operated import RayWorkerGroupFile, Replicas, ReplicatedJobFile
from kailab.scenarios.values import (
    MAX_NAME,
    MAX_PODS,
    UNLIMITED,
    Amount,
    Count,
    FileModel,
    GoDuration,
    Gpus,
    Name,
    Seconds,
    SignedGoDuration,
    Want,
    WholeWant,
)


class ResourceFile(FileModel):
    """One resource of a queue. ``-1`` is unlimited; KAI reads an unset limit as 0, so kailab writes -1."""

    quota: Amount = 0
    limit: Amount = UNLIMITED
    overQuotaWeight: Amount = 1

    def surprise(self) -> str | None:
        """What KAI does with a quota above the limit, which it accepts: the limit caps the queue, so the quota above
        it is never given (pkg/scheduler/plugins/proportion/resource_division/resource_division.go,
        setDeservedResource: a queue's share from its quota is at most its limit); None when the two agree."""
        if self.limit != UNLIMITED and (self.quota == UNLIMITED or self.quota > self.limit):
            quota = "an unlimited quota (-1)" if self.quota == UNLIMITED else f"quota {self.quota:g}"
            return (
                f"{quota} is above limit {self.limit:g}: KAI accepts it, but a queue never gets more than its "
                "limit, so the quota above it is never given"
            )
        return None


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

    def surprises(self) -> list[str]:
        """What KAI accepts in this queue but a reader may not expect (a quota above its limit), one line each."""
        return [
            f"queue {self.name}: {word}: {said}"
            for word, r in (("gpu", self.gpu), ("cpu", self.cpu), ("memory", self.memory))
            if (said := r.surprise()) is not None
        ]


class PriorityClassFile(FileModel):
    name: Name
    value: Annotated[StrictInt, Field(ge=-(2**31), le=1_000_000_000)]
    preemptible: StrictBool | None = None
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"] | None = None  # Kubernetes' field; KAI does not read it


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


# A workload's ``labels:`` and ``annotations:`` reach the cluster as written — KAI's own keys too, exactly as KAI's docs
# write them (tests/unit/test_kai_keys.py holds each documented key to this). Only kailab's own keys are refused:
# those it finds its objects by (MANAGED, kailab.io/…).
OWN_PREFIX = "kailab.io/"

# KAI's keys that kailab also writes from a word of its own. Given as a label or annotation, the key is read as that
# word (so kailab's checks see what KAI will: the queue, a fraction, the gang size…); given both ways, the two must
# agree. key → (labels or annotations, the word, the kinds whose top owner or pods carry it as that word).
_OPERATED = ("RayCluster", *operated.KIND_WORDS)
# Kubernetes' own controllers of long-running pods: kailab gives their replicas as ``pods``; KAI's pod-grouper never makes
# them a gang (the not-a-gang lesson): a Deployment gets a PodGroup per pod, a StatefulSet one PodGroup of minMember 1.
CONTROLLED = ("Deployment", "StatefulSet")
KAI_KEY_WORDS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    QUEUE_LABEL: ("labels", "queue", ("Job", "Pod", "PodGroup", *CONTROLLED, *_OPERATED)),
    PRIORITY_CLASS_LABEL: ("labels", "priorityClassLabel", ("Job", "Pod", *CONTROLLED, *_OPERATED)),
    PREEMPTIBILITY_LABEL: ("labels", "preemptibility", ("Job", "Pod", "PodGroup", *CONTROLLED, *_OPERATED)),
    NODEPOOL_LABEL: ("labels", "nodePool", ("Job", "Pod", "PodGroup", *CONTROLLED, *_OPERATED)),
    MIN_MEMBER_ANNOTATION: ("annotations", "minMember", ("Job",)),
    PREEMPTION_DELAY_ANNOTATION: ("annotations", "preemptionDelay", ("Job", "Pod", *CONTROLLED, *_OPERATED)),
    STALENESS_ANNOTATION: ("annotations", "stalenessGracePeriod", ("Job", "Pod", *CONTROLLED, *_OPERATED)),
    GPU_FRACTION_ANNOTATION: ("annotations", "gpus", ("Job", "Pod", "PodGroup", *CONTROLLED)),
    GPU_MEMORY_ANNOTATION: ("annotations", "gpuMemory", ("Job", "Pod", *CONTROLLED)),
}

# Keys kailab writes itself when a word asks it to (key → the word, and whether this workload's words ask): given
# too, kailab would write over them, so the file must say it once.
WRITTEN_FOR: dict[str, tuple[str, Callable[[WorkloadFile], bool]]] = {
    POD_GROUP_ANNOTATION: ("kind: PodGroup or podGroup:", lambda w: w.kind == "PodGroup" or w.podGroup is not None),
    SKIP_PODGROUPER_ANNOTATION: (
        "kind: PodGroup or podGroup:",
        lambda w: w.kind == "PodGroup" or w.podGroup is not None,
    ),
    SUBGROUP_LABEL: ("subGroups:", lambda w: bool(w.subGroups)),
    TOPOLOGY_ANNOTATION: ("topology:", lambda w: w.topology is not None),
    TOPOLOGY_REQUIRED_ANNOTATION: ("topology:", lambda w: w.topology is not None),
    TOPOLOGY_PREFERRED_ANNOTATION: ("topology:", lambda w: w.topology is not None),
    COMPLETE_DELAY_ANNOTATION: ("completeAfter:", lambda w: w.completeAfter is not None),
}


def _own_key(key: str) -> str | None:
    """Why kailab refuses a label or annotation key that is its own; None if the key is the file's to write."""
    if key in MANAGED:
        return "kailab sets it on everything it makes"
    if key.startswith(OWN_PREFIX):
        return f"kailab sets the keys under {OWN_PREFIX} itself"
    return None


def _as_word(word: str, text: str) -> Any:
    """A key's text as its word's value (``gpus``, ``minMember``, ``gpuMemory`` are numbers)."""
    if word in ("minMember", "gpuMemory"):
        return int(text) if text.strip().isdigit() else text
    if word == "gpus":
        try:
            return float(text)
        except ValueError:
            return text
    return text


def _kai_value(model: type[BaseModel], word: str, key: str, words: str, text: str) -> Any:
    """The text of KAI's key as its word's value, checked as the word is; an error names the key."""
    info = model.model_fields[word]
    try:
        shape: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        return TypeAdapter(shape).validate_python(_as_word(word, text))
    except ValidationError as e:
        said = e.errors()[0]["msg"].removeprefix("Value error, ")
        raise ValueError(f"{words}: '{key}': {text!r} is not a value KAI reads there ({word}: {said})") from None


# The workload kinds whose pods an operator makes (kailab/operators.py runs it); kailab applies the kind, the
# operator makes the pods, KAI's pod-grouper gangs them.
OPERATED_KINDS = _OPERATED
# Words a RayCluster leaves to KAI's Ray grouper and to KubeRay
NOT_FOR_RAY = ("jobs", "minMember", "subGroups", "podGroup", "podGroupAfterPods", "completeAfter", "scheduler")


class WorkloadFile(FileModel):
    """A group of identical pods: a Job (or ``jobs`` Jobs), bare Pods, a hand-made PodGroup with pods, a Deployment or a
    StatefulSet;
    or a RayCluster (KubeRay's): a head (``gpus``: its GPUs) and ``workerGroups``; or a PyTorchJob, JobSet or
    LeaderWorkerSet (kailab/scenarios/operated.py: ``gpus`` is each pod's)."""

    name: Name
    kind: Literal[
        "Job", "Pod", "PodGroup", "Deployment", "StatefulSet", "RayCluster", "PyTorchJob", "JobSet", "LeaderWorkerSet"
    ] = "Job"
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
    workerGroups: tuple[RayWorkerGroupFile, ...] = ()  # a RayCluster's worker groups (its head: the pods' words)
    master: Count | None = None  # a PyTorchJob's master replicas (1), workers: its Worker replicas
    workers: Count = 0
    minAvailable: Annotated[StrictInt, Field(ge=1)] | None = None  # a PyTorchJob's runPolicy.schedulingPolicy
    replicatedJobs: tuple[ReplicatedJobFile, ...] = ()  # a JobSet's
    replicas: Replicas = 1  # a LeaderWorkerSet's groups, each of size pods
    size: Replicas | None = None
    # Words of the runbooks' causes (runbooks/scenarios/): what a pod asks of its node, its neighbours, its volumes
    gpuMemory: Annotated[StrictInt, Field(ge=1, le=1_048_576)] | None = None  # MiB of one GPU: KAI's gpu-memory
    podAffinity: tuple[PodAffinityTermFile, ...] = ()  # required: on a node (domain) with such pods
    podAntiAffinity: tuple[PodAffinityTermFile, ...] = ()  # required: on none with such pods
    volumeClaim: Name | None = None  # the pods mount this PersistentVolumeClaim, which kailab makes and nothing binds
    disruptionBudget: DisruptionBudgetFile | None = None  # a PodDisruptionBudget over the pods

    @model_validator(mode="before")
    @classmethod
    def _kai_keys_as_words(cls, data: Any) -> Any:
        """KAI's keys given as labels or annotations (KAI_KEY_WORDS) read as kailab's words; both ways must agree."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        kind = out.get("kind", "Job")
        for key, (words, word, kinds) in KAI_KEY_WORDS.items():
            given = out.get(words)
            if not isinstance(given, dict) or key not in given or kind not in kinds or not isinstance(given[key], str):
                continue
            value = _kai_value(cls, word, key, words, given[key])
            if word == "priorityClassLabel" and "priorityClass" in out:  # priorityClass writes this label itself
                word = "priorityClass"
            if word in out and out[word] != value:
                raise ValueError(
                    f"{words}: '{key}' says {given[key]!r}, and {word}: says {out[word]!r}: KAI reads one of them; "
                    "give one (or the same in both)"
                )
            out[word] = value
        return out

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
    def _ray_words(self):
        if self.workerGroups and self.kind != "RayCluster":
            raise ValueError("workerGroups are a RayCluster's: they need kind: RayCluster")
        if self.kind != "RayCluster":
            return self
        if not self.workerGroups:
            raise ValueError(
                "a RayCluster needs at least one worker group (workerGroups: [{name: …, replicas: N, minReplicas: M}])"
            )
        names = [g.name for g in self.workerGroups]
        if len(set(names)) != len(names):
            raise ValueError("two worker groups have the same name (KubeRay names pods and KAI subgroups by it)")
        if "pods" in self.model_fields_set:
            raise ValueError("a RayCluster's pods are its head and its worker groups' replicas: leave pods out")
        refused = [word for word in NOT_FOR_RAY if word in self.model_fields_set]
        if refused:
            raise ValueError(
                f"{', '.join(refused)}: not for a RayCluster — KAI's Ray grouper sizes its gang from the head and "
                "each group's minReplicas, and KubeRay (run with --batch-scheduler=kai-scheduler) makes its pods"
            )
        if self.fraction:
            raise ValueError(
                "a fraction of a GPU for a RayCluster's head is not among kailab's words: give the head whole GPUs "
                "(or 0), and a worker group its fraction (workerGroups: [{…, gpus: 0.5}])"
            )
        return self

    @model_validator(mode="after")
    def _operated_words(self):
        operated.check_words(self)
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
                if (why := _own_key(key)) is not None:
                    raise ValueError(
                        f"{words}: '{key}' is kailab's own (kailab finds and counts its objects by it): leave it "
                        f"out; {why}"
                    )
                if key in WRITTEN_FOR and WRITTEN_FOR[key][1](self):
                    raise ValueError(
                        f"{words}: '{key}' is what kailab writes for {WRITTEN_FOR[key][0]}, which this workload "
                        "gives too: say it once"
                    )
        if (too_long := self.longest_name(self.pods)) is not None:
            raise ValueError(too_long)
        return self

    def longest_name(self, pods: int) -> str | None:
        """Why the names kailab derives from this workload's (with ``pods`` pods) exceed Kubernetes' limit; None if they fit.

        Jobs are <name>-<i> with ``jobs:`` (a Job's name is also a label on its pods); bare pods are <name>-<i>, and
        so are a StatefulSet's, whose revision (<name>-<hash>) is a label on each of its pods.
        """
        many = self.jobs if self.jobs is not None else pods if self.kind in ("Pod", "PodGroup", "StatefulSet") else 0
        longest = f"{self.name}-{many - 1}" if many else self.name
        what = f"the {'Job' if self.jobs is not None else 'pod'} names would be up to '{longest}'"
        revision = len(self.name) + 11  # a StatefulSet's pods' label controller-revision-hash: <name>-<hash of 10>
        if self.kind == "StatefulSet" and revision > len(longest):
            longest = "x" * revision
            what = f"the label controller-revision-hash on each pod would be '{self.name}-' and a hash of 10"
        if len(longest) > MAX_NAME:
            return (
                f"{what} ({len(longest)} characters; Kubernetes allows "
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
    def any_fraction(self) -> bool:
        """It asks for a fraction of a GPU anywhere: its pods, or a RayCluster's worker group."""
        return self.fraction or any(0 < g.gpus < 1 for g in self.workerGroups)

    @property
    def total_pods(self) -> int:
        if self.kind == "RayCluster":
            return 1 + sum(g.replicas for g in self.workerGroups)  # the head, and every worker
        if self.kind in operated.KIND_WORDS:
            return operated.total_pods(self)
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


class KaiResource(ResourceFile):
    """One resource of a Queue object as KAI reads it: a field left out is 0 (pkg/apis/scheduling/v2/resources.go has
    no defaults, and the CRD none), so an unset limit allows nothing and an unset weight gets no spare GPUs."""

    quota: Amount = 0
    limit: Amount = 0
    overQuotaWeight: Amount = 0

    @model_validator(mode="after")
    def _limit_given(self):
        if "limit" not in self.model_fields_set and self.quota != 0:
            raise ValueError(
                "the limit is left out, and KAI reads an unset limit as 0 (no GPUs at all, whatever the quota): "
                "write limit: -1 for unlimited, or a number"
            )
        return self


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
