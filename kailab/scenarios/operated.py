"""The words of the kinds whose pods an operator makes: a RayCluster's worker group, PyTorchJob, JobSet, LWS.

Each is one object kailab applies; its operator (Kubeflow's training-operator, JobSet, LeaderWorkerSet) makes the
pods, and KAI's pod-grouper gangs them.

What KAI v0.17.0 makes of each (pkg/podgrouper/podgrouper/plugins/):

- PyTorchJob (``kubeflow/distributed_common.go``, ``kubeflow/pytorch/pytorch_grouper.go``): one PodGroup whose
  ``minMember`` is every replica (master + workers), or ``runPolicy.schedulingPolicy.minAvailable`` when given;
  subgroups ``master`` and ``worker``.
- JobSet (``jobset/jobset_grouper.go``): one PodGroup per JobSet; a subgroup per replicatedJob needing all its
  replicas, and per replica a leaf needing its Job's ``parallelism`` — not its ``completions``.
- LeaderWorkerSet (``leaderworkerset/lws_grouper.go``): one PodGroup per group (``replicas`` of them), each needing
  its whole group of ``size`` pods: the leader and ``size - 1`` workers.

The words are checked here (file and line through the loader); ``manifests.py`` writes the objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, StrictInt, model_validator

from kailab.labelfield import LabelKey, LabelValue
from kailab.labels import MANAGED, RAY_HEAD_GROUP
from kailab.scenarios.values import MAX_PODS, Count, FileModel, Gpus, Name

if TYPE_CHECKING:
    from kailab.scenarios.objects import WorkloadFile

Replicas = Annotated[StrictInt, Field(ge=1, le=MAX_PODS)]

# The training-operator's webhook wants exactly one master (pkg/webhooks/pytorch/pytorchjob_webhook.go)
PYTORCH_MASTERS = 1


class ReplicatedJobFile(FileModel):
    """One of a JobSet's replicatedJobs: ``replicas`` Jobs, each running ``parallelism`` pods at once until
    ``completions`` (default: ``parallelism``) have finished."""

    name: Name
    replicas: Replicas = 1
    parallelism: Replicas = 1
    completions: Replicas | None = None

    @property
    def pods(self) -> int:
        """The pods the Job controller makes for it: each Job runs min(parallelism, completions) at once."""
        return self.replicas * min(self.parallelism, self.completions or self.parallelism)


# kind → the words that are its own (on any other kind they are refused)
KIND_WORDS: dict[str, tuple[str, ...]] = {
    "PyTorchJob": ("master", "workers", "minAvailable"),
    "JobSet": ("replicatedJobs",),
    "LeaderWorkerSet": ("replicas", "size"),
}
# Words these kinds leave to KAI's grouper and the operator (the gang, the pods, their groups)
NOT_FOR_OPERATED = ("pods", "jobs", "minMember", "subGroups", "podGroup", "podGroupAfterPods", "completeAfter")
GROUPERS = {
    "PyTorchJob": "KAI's PyTorch grouper sizes its gang from the replicas (or minAvailable)",
    "JobSet": "KAI's JobSet grouper sizes its gang from the replicatedJobs",
    "LeaderWorkerSet": "KAI's LWS grouper makes a gang of each group of size pods",
}


def check_words(w: WorkloadFile) -> None:
    """A ValueError that says what is wrong with a workload's words for these kinds; nothing when they hold."""
    for kind, words in KIND_WORDS.items():
        given = [word for word in words if word in w.model_fields_set]
        if given and w.kind != kind:
            # a Deployment's or StatefulSet's replicas, as Kubernetes writes them, are kailab's pods
            hint = (
                f"; a {w.kind}'s replicas are its pods: write pods" if w.kind in ("Deployment", "StatefulSet") else ""
            )
            raise ValueError(f"{', '.join(given)}: a {kind}'s words; they need kind: {kind}{hint}")
    if w.kind not in KIND_WORDS:
        return
    refused = [word for word in NOT_FOR_OPERATED if word in w.model_fields_set]
    if refused:
        hint = "; give minAvailable" if w.kind == "PyTorchJob" and "minMember" in refused else ""
        raise ValueError(
            f"{', '.join(refused)}: not for a {w.kind} — {GROUPERS[w.kind]}, and its operator makes the pods{hint}"
        )
    if w.fraction:
        raise ValueError(f"GPU fractions in a {w.kind} are not among kailab's words yet: give whole GPUs")
    if w.kind == "PyTorchJob":
        _pytorch(w)
    elif w.kind == "JobSet":
        _jobset(w)
    elif w.size is None:
        raise ValueError(
            "a LeaderWorkerSet needs size: N, the pods of each group (its leader and N - 1 workers); "
            "replicas: M groups (default 1)"
        )


def _pytorch(w: WorkloadFile) -> None:
    if w.master != PYTORCH_MASTERS:
        said = "has no master" if not w.master else f"has master: {w.master}"
        raise ValueError(
            f"a PyTorchJob {said}: give master: 1 (the training-operator's webhook wants exactly one master; "
            "workers: N for the rest)"
        )
    if w.minAvailable is not None and w.minAvailable > w.total_pods:
        raise ValueError(
            f"minAvailable {w.minAvailable} is more than the PyTorchJob's {w.total_pods} pods (master + workers): "
            "KAI's gang would wait for pods that never come; lower it or add workers"
        )


def _jobset(w: WorkloadFile) -> None:
    if not w.replicatedJobs:
        raise ValueError(
            "a JobSet needs at least one replicated job "
            "(replicatedJobs: [{name: …, replicas: N, parallelism: P, completions: C}])"
        )
    names = [rj.name for rj in w.replicatedJobs]
    if len(set(names)) != len(names):
        raise ValueError("two replicatedJobs have the same name (JobSet names their Jobs and KAI its subgroups by it)")


def total_pods(w: WorkloadFile) -> int:
    """The pods the operator makes for one of these workloads."""
    if w.kind == "PyTorchJob":
        return (w.master or 0) + w.workers
    if w.kind == "JobSet":
        return sum(rj.pods for rj in w.replicatedJobs)
    return w.replicas * (w.size or 0)


class RayWorkerGroupFile(FileModel):
    """A RayCluster's worker group: ``replicas`` pods of ``gpus`` each (whole GPUs, or a fraction of one: KAI's
    gpu-fraction annotation on the group's pod template), ``minReplicas`` of them in KAI's gang."""

    name: Name
    replicas: Count
    minReplicas: Count = 0
    gpus: Gpus = 1
    # labels on this group's pod template only (not the RayCluster's, nor the head's): where a queue label is often
    # put by mistake (runbooks/operator-queue-on-template.md)
    labels: dict[LabelKey, LabelValue] = {}

    @model_validator(mode="after")
    def _min_within_replicas(self):
        # KAI refuses such a group (ray_grouper.go, getReplicaCountersForWorkerGroup), and makes no PodGroup
        if self.minReplicas > self.replicas:
            raise ValueError(
                f"minReplicas {self.minReplicas} is more than replicas {self.replicas}; KAI's Ray grouper makes no "
                "PodGroup for such a group: raise replicas or lower minReplicas"
            )
        for key in self.labels:  # kailab finds its objects by these (as a workload's labels, objects.py)
            if key in MANAGED or key.startswith("kailab.io/"):
                raise ValueError(f"labels: '{key}' is kailab's own key: it sets it itself")
        if self.name == RAY_HEAD_GROUP:
            raise ValueError(f"'{RAY_HEAD_GROUP}' is the head's group (KubeRay's name, and KAI's subgroup of it)")
        return self
