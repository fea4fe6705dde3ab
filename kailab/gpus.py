"""How many GPUs a pod, a node and a queue hold: kailab's one rule for it. Pure: no I/O.

A node has the GPUs its ``nvidia.com/gpu.count`` label says (fake-gpu-operator's, and kailab's fleet's), else its
allocatable ``nvidia.com/gpu`` (what a device plugin reports): KAI counts them so.

A pod asks for whole GPUs (``nvidia.com/gpu`` in its containers' limits, else their requests) or for a
fraction of one GPU (KAI's ``gpu-fraction`` annotation). It holds what it asked for from the moment it is
bound to a node until it finishes or is gone — also while it is being deleted, as KAI counts a releasing
pod's GPUs as used on its node: they are not free before the pod is gone.

KAI shares a GPU through a reservation pod: for each shared GPU its binder makes one pod in the namespace
``kai-resource-reservation`` that asks for one whole GPU, and labels it and every fractional pod on that GPU
with one GPU group (``runai-gpu-group``). So:

- A node's GPUs in use are the GPUs held whole by workload pods, plus its shared GPUs counted once each:
  a shared GPU is the pair (node, GPU group), whether kailab sees its reservation pod, its fractional pods or
  both. A reservation pod whose fractions are gone still counts until KAI deletes it: its GPU is not free.
  A fractional pod bound without a group label yet counts as a shared GPU of its own.
- A queue holds the whole GPUs and the fractions of its pods (two halves are 1 GPU, as KAI counts a queue's
  allocation). A reservation pod is in no queue: its GPU is counted through its fractions' queues.

Not modelled, as kailab's workloads never ask for them: KAI's multi-GPU fractions (``gpu-fraction-num-devices``),
and fractions asked for as GPU memory (``gpu-memory``: such a pod counts 0 for its queue; its shared GPU still
counts on its node, through its reservation pod).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kailab.labels import GPU, GPU_COUNT_LABEL, GPU_FRACTION_ANNOTATION, RESERVATION_NAMESPACE

NO_QUEUE = "(no queue)"  # where pods without a queue label are counted


class Pod(Protocol):
    """What the rule needs of a pod (:class:`kailab.pods.PodView` has it). Read-only, so a frozen dataclass fits."""

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def phase(self) -> str: ...
    @property
    def gpus(self) -> float: ...
    @property
    def gpu_group(self) -> str: ...
    @property
    def queue(self) -> str: ...


# -- what a pod asks for ---------------------------------------------------------------------------


def quantity(value) -> int:
    """A GPU count as the API writes it ("2", 2, "2.0"); 0 when it is not one."""
    try:
        return int(float(str(value)))
    except (TypeError, ValueError):
        return 0


# -- what a node has -------------------------------------------------------------------------------


def node_gpus(allocatable: Mapping | None, labels: Mapping | None = None) -> int:
    """A node's GPUs: its ``nvidia.com/gpu.count`` label when ``labels`` are given and have it (as KAI counts them),
    else its allocatable ``nvidia.com/gpu``; 0 when it has none."""
    count = (labels or {}).get(GPU_COUNT_LABEL)
    return quantity(count if count is not None else (allocatable or {}).get(GPU, 0))


def whole_asked(resources: Iterable[tuple[Mapping | None, Mapping | None]]) -> int:
    """Whole GPUs asked for by containers given as (limits, requests): each one's limit, else its request."""
    total = 0
    for limits, requests in resources:
        asked = (limits or {}).get(GPU) or (requests or {}).get(GPU)
        total += quantity(asked) if asked is not None else 0
    return total


def fraction_asked(annotations: Mapping | None) -> float | None:
    """The fraction of one GPU asked for by KAI's ``gpu-fraction`` annotation; None when there is none (or no number)."""
    try:
        return float((annotations or {})[GPU_FRACTION_ANNOTATION])
    except (KeyError, TypeError, ValueError):
        return None


def asked(whole: int, fraction: float | None) -> float:
    """GPUs a pod asks for, as one number: its whole GPUs, else its fraction, else 0."""
    return whole if whole else (fraction or 0)


def request(gpus: float) -> tuple[dict, dict]:
    """How a pod asks for ``gpus`` (whole, or a fraction of one): (its container's limits, its annotations)."""
    if is_fraction(gpus):
        return {}, {GPU_FRACTION_ANNOTATION: f"{gpus:g}"}
    return ({GPU: str(int(gpus))} if gpus else {}), {}


# -- what a pod holds ------------------------------------------------------------------------------


def is_fraction(gpus: float) -> bool:
    return 0 < gpus < 1


def holds(p: Pod) -> bool:
    """Bound and not finished: what it asked for is taken (also while it is being deleted)."""
    return bool(p.node) and p.phase in ("Pending", "Running")


def is_reservation(namespace: str, whole: float) -> bool:
    """One of KAI's GPU reservation pods: whole GPUs asked for in KAI's reservation namespace."""
    return namespace == RESERVATION_NAMESPACE and whole >= 1


def for_queue(p: Pod) -> float:
    """GPUs a pod holds for its queue: whole GPUs or its fraction; 0 for a reservation pod or one that holds none."""
    return 0 if not holds(p) or is_reservation(p.namespace, p.gpus) else p.gpus


def shared_gpu(p: Pod) -> tuple[str, str] | None:
    """The shared GPU a pod holds, as (node, GPU group); None when it holds none (whole-GPU pods hold none)."""
    if not holds(p) or not (is_fraction(p.gpus) or is_reservation(p.namespace, p.gpus)):
        return None
    return p.node, p.gpu_group or f"{p.namespace}/{p.name}"


# -- per queue, per node ---------------------------------------------------------------------------


def queue_share(p: Pod) -> tuple[str, float] | None:
    """What a pod adds to :func:`per_queue`: (its queue, its GPUs) while it holds them; None for a reservation pod
    or one that holds none."""
    return (p.queue or NO_QUEUE, p.gpus) if holds(p) and not is_reservation(p.namespace, p.gpus) else None


def per_queue(pods: Iterable[Pod]) -> dict[str, float]:
    """GPUs held per queue (pods without a queue label under ``NO_QUEUE``); every queue with a holding pod,
    even when it holds 0 GPUs (a CPU pod). Sums of fractions are binary floats (0.5 + 0.9 + 0.3 + 0.5 is
    2.1999999999999997): round them to show them."""
    out: dict[str, float] = {}
    for share in map(queue_share, pods):
        if share is not None:
            out[share[0]] = out.get(share[0], 0) + share[1]
    return out


def shared_gpus(pods: Iterable[Pod]) -> set[tuple[str, str]]:
    """The distinct shared GPUs the pods hold: (node, GPU group)."""
    return {g for g in map(shared_gpu, pods) if g is not None}


@dataclass(frozen=True)
class GpuInUse:
    """One GPU of a node in use: held whole by one pod, or shared by fractional pods."""

    queues: tuple[
        str, ...
    ]  # the queue of its whole pod, or of each fractional pod on it (none: its reservation pod only)
    shared: bool = False
    portion: float = 1.0  # how much of it is taken: 1 when whole, the sum of the fractions on it when shared
    pods: tuple[str, ...] = field(default=(), compare=False)  # "namespace/name" of the pods on it (a page links them)

    @property
    def queue(self) -> str:
        """The queue it is shown in: its first pod's (``NO_QUEUE`` for a reservation pod alone)."""
        return self.queues[0] if self.queues else NO_QUEUE


def in_use(pods: Iterable[Pod]) -> dict[str, list[GpuInUse]]:
    """node → its GPUs in use: the whole ones, in the order of their pods by (queue, name), then the shared ones."""
    whole: dict[str, list[GpuInUse]] = {}
    shared: dict[tuple[str, str], list[Pod]] = {}
    for p in sorted(pods, key=lambda p: (p.queue, p.namespace, p.name)):
        if not holds(p):
            continue
        key = shared_gpu(p)
        if key is not None:
            shared.setdefault(key, []).append(p)
        elif p.gpus >= 1:
            held = GpuInUse((p.queue or NO_QUEUE,), pods=(f"{p.namespace}/{p.name}",))
            whole.setdefault(p.node, []).extend([held] * int(p.gpus))
    for (node, _), on_it in sorted(shared.items()):
        fractions = [p for p in on_it if not is_reservation(p.namespace, p.gpus)]
        whole.setdefault(node, []).append(
            GpuInUse(
                tuple(p.queue or NO_QUEUE for p in fractions),
                shared=True,
                portion=round(sum(p.gpus for p in fractions), 6),
                pods=tuple(f"{p.namespace}/{p.name}" for p in fractions),
            )
        )
    return whole


def used_per_node(pods: Iterable[Pod]) -> dict[str, int]:
    """node → how many of its GPUs are in use (a shared GPU once)."""
    return {node: len(gpus) for node, gpus in in_use(pods).items()}
