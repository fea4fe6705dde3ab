"""What the GPU ledger reads of a pod and a node: plain facts from the objects as the API gives them (JSON). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from kailab import gpus
from kailab.labels import (
    FRACTION_CONTAINER_ANNOTATION,
    GPU_GROUP_LABEL,
    GPU_MEMORY_ANNOTATION,
    GPU_MEMORY_LABEL,
    RESERVE_ANNOTATION,
    SHARED_GPU_CONFIGMAP_ANNOTATION,
)
from kailab.pods import container_resources

MULTI_GROUP_PREFIX = GPU_GROUP_LABEL + "/"  # KAI v0.17.0's (pkg/common/constants/constants.go)


@dataclass(frozen=True)
class NodeShape:
    gpus: int
    memory_mib: int | None = None


@dataclass(frozen=True)
class PodFacts:
    """What the ledger needs of one pod."""

    namespace: str
    name: str
    uid: str = ""
    node: str | None = None
    gpus: int = 0  # whole GPUs in its containers' limits (else requests)
    groups: tuple[str, ...] = ()  # KAI's GPU groups (runai-gpu-group labels), set by the binder
    fraction: float | None = None  # the gpu-fraction annotation
    memory_mib: int | None = None  # the gpu-memory annotation
    finished: bool = False  # Succeeded or Failed
    reserved_index: str | None = None  # run.ai/reserve_for_gpu_index, on a reservation pod
    scheduler: str = ""
    configmap_prefix: str | None = None  # runai/shared-gpu-configmap
    owner: str = ""  # its first owner's name (what KAI names the shared-GPU ConfigMap after)
    fraction_container: str = "0"  # the container KAI gives the fraction, as its ConfigMaps name it ("0", "i0", …)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def reservation(self) -> bool:
        """One of KAI's GPU reservation pods (:func:`kailab.gpus.is_reservation`)."""
        return gpus.is_reservation(self.namespace, self.gpus)

    @property
    def asks_fraction(self) -> bool:
        return self.fraction is not None or self.memory_mib is not None

    @property
    def holds_whole(self) -> bool:
        """Holds whole GPUs of its node (a reservation pod holds the one it shares out)."""
        return self.gpus > 0 and self.node is not None and not self.finished

    @property
    def shares(self) -> bool:
        """Holds part of the GPUs its groups' reservation pods hold."""
        return bool(self.groups) and not self.reservation and not self.finished


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def facts_of(pod: dict) -> PodFacts:
    """The facts of a pod as the API gives it (its JSON)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    ann, labels = meta.get("annotations") or {}, meta.get("labels") or {}
    groups = [labels[GPU_GROUP_LABEL]] if labels.get(GPU_GROUP_LABEL) else []
    groups += sorted(v for k, v in labels.items() if k.startswith(MULTI_GROUP_PREFIX) and v and v not in groups)
    memory = _float(ann.get(GPU_MEMORY_ANNOTATION))
    owners = meta.get("ownerReferences") or []
    return PodFacts(
        namespace=meta.get("namespace") or "",
        name=meta.get("name") or "",
        uid=meta.get("uid") or "",
        node=spec.get("nodeName") or None,
        gpus=gpus.whole_asked(container_resources(spec)),
        groups=tuple(groups),
        fraction=gpus.fraction_asked(ann),
        memory_mib=int(memory) if memory is not None else None,
        finished=status.get("phase") in ("Succeeded", "Failed"),
        reserved_index=ann.get(RESERVE_ANNOTATION) or None,
        scheduler=spec.get("schedulerName") or "",
        configmap_prefix=ann.get(SHARED_GPU_CONFIGMAP_ANNOTATION) or None,
        owner=owners[0].get("name", "") if owners else "",
        fraction_container=_fraction_container(spec, ann.get(FRACTION_CONTAINER_ANNOTATION)),
    )


def _fraction_container(spec: dict, name: str | None) -> str:
    """Which container gets the fraction, as KAI's ConfigMap names number it (pkg/binder/common/utils.go,
    GetFractionContainerRef): the one the annotation names — an init container first, as "i<index>" —
    else the first container."""
    if name:
        for i, c in enumerate(spec.get("initContainers") or []):
            if c.get("name") == name:
                return f"i{i}"
        for i, c in enumerate(spec.get("containers") or []):
            if c.get("name") == name:
                return str(i)
    return "0"


def node_shape(node: dict) -> NodeShape:
    """A node's GPUs as KAI counts them (:func:`kailab.gpus.node_gpus`) and their memory."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    allocatable = (node.get("status") or {}).get("allocatable")
    return NodeShape(gpus.node_gpus(allocatable, labels), gpus.quantity(labels.get(GPU_MEMORY_LABEL)) or None)
