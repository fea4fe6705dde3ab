"""Which fake GPU each pod holds: fake-gpu-operator's GPU topology, for the local runtime.

On a real cluster fake-gpu-operator's status-updater keeps, per node, which pod holds which GPU,
and annotates each of KAI's GPU reservation pods with the GPU it got
(``run.ai/reserve_for_gpu_index``; internal/status-updater/handlers/pod/gpu_reservation_pod_handler.go).
KAI v0.17.0's binder waits for that annotation before it binds a fractional pod
(pkg/binder/binding/resourcereservation/resource_reservation.go, waitForGPUReservationPodAllocation:
"Reached timeout while waiting for GPU reservation pod to be allocated" after 40 s). The local runtime
has no fake-gpu-operator, so this module plays that part, and one part of KAI's admission webhook
that the binder cannot do without (see :func:`shared_gpu_prep`).

Two layers, as in the scenario engine:
- :class:`Topology` is pure: pod and node facts in, GPU ids and the annotations to write out. No I/O.
- :func:`main` is the process the local runtime starts (``python -m kailab.gpu_ledger``): it watches
  nodes and pods, feeds a Topology, writes the annotations and the ledger.

The ledger lives in the ConfigMap ``kailab-gpu-ledger`` in ``kai-resource-reservation``: one key per
node, its value JSON ``{"gpus": 8, "memoryMiB": 81920, "cells": {"<gpu id>": [holder, …]}}`` with only
the GPUs someone holds; a holder is ``{"namespace", "name", "uid", "kind", "portion"}``, kind ``whole``,
``reservation`` or ``fraction``. A ConfigMap rather than annotations on pods: the ledger is read in one
GET, it survives the component restarting (whole-GPU pods have nowhere else to keep their ids), and
the component never writes to pods for its own bookkeeping, so the pod watches that scenarios record
see no extra changes. :func:`read_ledger` reads it; :func:`parse_ledger` is the pure half.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kailab.labels import GPU, GPU_FRACTION_ANNOTATION, KAI_SCHEDULER, MANAGED

# KAI v0.17.0's names (pkg/common/constants/constants.go, pkg/binder/binding/resourcereservation/)
RESERVATION_NAMESPACE = "kai-resource-reservation"
RESERVATION_SERVICE_ACCOUNT = "kai-resource-reservation"  # the binder's --resource-reservation-service-account default
RESERVE_ANNOTATION = "run.ai/reserve_for_gpu_index"
GPU_GROUP_LABEL = "runai-gpu-group"
MULTI_GROUP_PREFIX = GPU_GROUP_LABEL + "/"
GPU_MEMORY_ANNOTATION = "gpu-memory"
CONFIGMAP_ANNOTATION = "runai/shared-gpu-configmap"
FRACTION_CONTAINER_ANNOTATION = "gpu-fraction-container-name"
# fake-gpu-operator's node labels (kailab/fleet.py writes them)
COUNT_LABEL = "nvidia.com/gpu.count"
MEMORY_LABEL = "nvidia.com/gpu.memory"

LEDGER_CONFIGMAP = "kailab-gpu-ledger"
FORMAT_ANNOTATION = "kailab.io/gpu-ledger-format"
FORMAT = "1"
PROCESS_NAME = "kailab-gpu-ledger"

WHOLE, RESERVATION, FRACTION = "whole", "reservation", "fraction"

log = logging.getLogger("kailab.gpu_ledger")


# -- facts -------------------------------------------------------------------------------------


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
        """One of KAI's GPU reservation pods: a whole GPU in the reservation namespace."""
        return self.namespace == RESERVATION_NAMESPACE and self.gpus > 0

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


def _quantity(value) -> int:
    try:
        return int(float(str(value)))
    except (TypeError, ValueError):
        return 0


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def facts_of(pod) -> PodFacts:
    """The facts of a pod as the kubernetes client gives it (``V1Pod``)."""
    meta, spec, status = pod.metadata, pod.spec, pod.status
    ann, labels = meta.annotations or {}, meta.labels or {}
    gpus = 0
    for c in (spec.containers if spec else None) or []:
        res = c.resources
        asked = ((res.limits or {}).get(GPU) or (res.requests or {}).get(GPU)) if res else None
        gpus += _quantity(asked) if asked is not None else 0
    groups = [labels[GPU_GROUP_LABEL]] if labels.get(GPU_GROUP_LABEL) else []
    groups += sorted(v for k, v in labels.items() if k.startswith(MULTI_GROUP_PREFIX) and v and v not in groups)
    memory = _float(ann.get(GPU_MEMORY_ANNOTATION))
    owners = meta.owner_references or []
    return PodFacts(
        namespace=meta.namespace, name=meta.name, uid=meta.uid or "",
        node=(spec.node_name if spec else None) or None,
        gpus=gpus, groups=tuple(groups),
        fraction=_float(ann.get(GPU_FRACTION_ANNOTATION)),
        memory_mib=int(memory) if memory is not None else None,
        finished=(status.phase if status else None) in ("Succeeded", "Failed"),
        reserved_index=ann.get(RESERVE_ANNOTATION) or None,
        scheduler=(spec.scheduler_name if spec else "") or "",
        configmap_prefix=ann.get(CONFIGMAP_ANNOTATION) or None,
        owner=owners[0].name if owners else "",
        fraction_container=_fraction_container(spec, ann.get(FRACTION_CONTAINER_ANNOTATION)),
    )


def _fraction_container(spec, name: str | None) -> str:
    """Which container gets the fraction, as KAI's ConfigMap names number it (pkg/binder/common/utils.go,
    GetFractionContainerRef): the one the annotation names — an init container first, as "i<index>" —
    else the first container."""
    if name and spec is not None:
        for i, c in enumerate(spec.init_containers or []):
            if c.name == name:
                return f"i{i}"
        for i, c in enumerate(spec.containers or []):
            if c.name == name:
                return str(i)
    return "0"


def node_shape(node) -> NodeShape:
    """A node's GPUs as KAI counts them: the ``nvidia.com/gpu.count`` label, else allocatable ``nvidia.com/gpu``."""
    labels = node.metadata.labels or {}
    count = labels.get(COUNT_LABEL)
    gpus = _quantity(count) if count is not None else _quantity((node.status.allocatable or {}).get(GPU, 0) if node.status else 0)
    memory = _quantity(labels.get(MEMORY_LABEL)) or None
    return NodeShape(gpus, memory)


# -- the ledger --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Holder:
    """One pod on one GPU: the whole of it, or a portion shared through a reservation pod."""

    namespace: str
    name: str
    uid: str
    kind: str  # whole, reservation or fraction
    portion: float | None = 1.0  # of this GPU; None when not known (gpu-memory on a node without a memory label)

    def to_dict(self) -> dict:
        return {"namespace": self.namespace, "name": self.name, "uid": self.uid, "kind": self.kind, "portion": self.portion}

    @classmethod
    def from_dict(cls, d: dict) -> "Holder":
        portion = d.get("portion")
        return cls(str(d.get("namespace", "")), str(d.get("name", "")), str(d.get("uid", "")), str(d.get("kind", WHOLE)),
                   float(portion) if isinstance(portion, (int, float)) else None)


@dataclass(frozen=True)
class GpuCell:
    """One fake GPU of one node and who holds it."""

    node: str
    gpu: str  # its id: "0" … "gpus-1" (what run.ai/reserve_for_gpu_index carries)
    holders: tuple[Holder, ...] = ()

    @property
    def free(self) -> bool:
        return not self.holders

    @property
    def shared(self) -> bool:
        """Held by a reservation pod, for fractional pods."""
        return any(h.kind == RESERVATION for h in self.holders)

    @property
    def pods(self) -> tuple[Holder, ...]:
        """The workload pods on it (not KAI's reservation pod)."""
        return tuple(h for h in self.holders if h.kind != RESERVATION)

    @property
    def used(self) -> float:
        """How much of it is in use: 1 for a whole pod, the sum of known portions when shared."""
        if any(h.kind == WHOLE for h in self.holders):
            return 1.0
        return sum(h.portion or 0.0 for h in self.holders if h.kind == FRACTION)


@dataclass(frozen=True)
class Annotate:
    """An action for the driver: set one annotation on one pod."""

    namespace: str
    name: str
    key: str
    value: str


@dataclass
class Topology:
    """The GPUs of every node and who holds them; pure (no I/O), fed one change at a time.

    Whole-GPU pods and KAI's reservation pods get the lowest free ids of their node once they are
    bound (``spec.nodeName``); a reservation pod that already carries ``run.ai/reserve_for_gpu_index``
    keeps that id. A fractional pod joins the GPU of the reservation pod of its GPU group. An id is
    free again when its pod is deleted or finished. A pod that finds too few free ids waits, in
    arrival order, until ids are freed.
    """

    nodes: dict[str, NodeShape] = field(default_factory=dict)
    pods: dict[str, PodFacts] = field(default_factory=dict)
    held: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # node → gpu id → pod keys
    assigned: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # pod key → (node, ids)
    waiting: dict[str, None] = field(default_factory=dict)  # pod keys, in arrival order
    remembered: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # uid → (node, ids)
    asked: dict[str, str] = field(default_factory=dict)  # reservation pod key → the id its annotation was asked for
    told: set[str] = field(default_factory=set)  # waiting pods whose wait was logged
    syncing: bool = False  # between restore() and synced(): only pods with a claim on an id get one
    version: int = 0  # counts changes of the ledger

    # -- changes ------------------------------------------------------------------------------

    def set_node(self, name: str, shape: NodeShape) -> list[Annotate]:
        if self.nodes.get(name) == shape:
            return []
        self.nodes[name] = shape
        self.version += 1
        return self._assign_waiting()

    def drop_node(self, name: str) -> list[Annotate]:
        if self.nodes.pop(name, None) is None:
            return []
        for key, (node, _) in list(self.assigned.items()):
            if node == name:
                self._free(key)
                self.waiting[key] = None
        self.version += 1
        return []

    def update(self, facts: PodFacts) -> list[Annotate]:
        """A pod was added or changed."""
        old = self.pods.get(facts.key)
        self.pods[facts.key] = facts
        if facts.key in self.assigned:
            node, _ = self.assigned[facts.key]
            if not facts.holds_whole or node != facts.node or (old is not None and old.uid != facts.uid):
                self._free(facts.key)
        if facts.holds_whole and facts.key not in self.assigned:
            self.waiting.setdefault(facts.key, None)
        elif not facts.holds_whole:
            self.waiting.pop(facts.key, None)
        if old is None or _shown(old) != _shown(facts):
            self.version += 1
        # while the cluster is being listed only this pod can have news (a claim); the others wait for synced()
        return self._assign_waiting(only=facts.key if self.syncing else None)

    def remove(self, key: str) -> list[Annotate]:
        """A pod was deleted."""
        if self.pods.pop(key, None) is None:
            return []
        self.waiting.pop(key, None)
        self.told.discard(key)
        self._free(key)
        self.version += 1
        return self._assign_waiting()

    def restore(self, stored: dict[str, list[GpuCell]]) -> None:
        """Remember ids a stored ledger gave whole pods, so a restarted component gives them the same ones.

        Until :meth:`synced`, only pods with a claim — remembered ids, or a reservation pod's annotation —
        get ids: a new pod listed before an old one must not take the old one's GPU.
        """
        self.syncing = True
        for node, cells in stored.items():
            for cell in cells:
                for h in cell.holders:
                    if h.kind == WHOLE and h.uid:
                        _, ids = self.remembered.get(h.uid, (node, ()))
                        self.remembered[h.uid] = (node, ids + (cell.gpu,))

    def synced(self) -> list[Annotate]:
        """Every node and pod of the cluster has been seen once: what was remembered of the others is gone,
        and the pods without a claim get ids now."""
        self.syncing = False
        self.remembered.clear()
        return self._assign_waiting()

    def forget_asked(self, key: str) -> None:
        """The annotation could not be written: ask again on the next change."""
        self.asked.pop(key, None)

    def wants(self, action: Annotate) -> bool:
        """Whether a reservation annotation is still what the ledger holds (for a retried write)."""
        key = f"{action.namespace}/{action.name}"
        node_ids = self.assigned.get(key)
        return action.key != RESERVE_ANNOTATION or (node_ids is not None and node_ids[1] == (action.value,))

    # -- reading ------------------------------------------------------------------------------

    def cells(self) -> dict[str, list[GpuCell]]:
        """Every GPU of every GPU node, in id order, with its holders."""
        group_gpu: dict[str, tuple[str, str]] = {}  # GPU group → (node, id) of its reservation pod
        for key, (node, ids) in self.assigned.items():
            facts = self.pods.get(key)
            if facts is not None and facts.reservation:
                for g in facts.groups:
                    group_gpu[g] = (node, ids[0])
        holders: dict[tuple[str, str], list[Holder]] = {}
        for key, (node, ids) in self.assigned.items():
            f = self.pods[key]
            for gpu in ids:
                kind = RESERVATION if f.reservation else WHOLE
                holders.setdefault((node, gpu), []).append(Holder(f.namespace, f.name, f.uid, kind))
        for f in self.pods.values():
            if not f.shares:
                continue
            for g in f.groups:
                if g in group_gpu:
                    node, gpu = group_gpu[g]
                    holders.setdefault((node, gpu), []).append(
                        Holder(f.namespace, f.name, f.uid, FRACTION, self._portion(f, self.nodes.get(node))))
        out: dict[str, list[GpuCell]] = {}
        for node in sorted(self.nodes):
            shape = self.nodes[node]
            if shape.gpus <= 0:
                continue
            ids = [str(i) for i in range(shape.gpus)]
            ids += sorted((gpu for (n, gpu) in holders if n == node and gpu not in ids), key=_id_order)
            out[node] = [GpuCell(node, gpu, tuple(sorted(holders.get((node, gpu), []), key=_holder_order))) for gpu in ids]
        return out

    # -- internals ----------------------------------------------------------------------------

    @staticmethod
    def _portion(f: PodFacts, shape: NodeShape | None) -> float | None:
        if f.fraction is not None:
            return f.fraction
        if f.memory_mib is not None and shape is not None and shape.memory_mib:
            return round(f.memory_mib / shape.memory_mib, 4)
        return None

    def _free(self, key: str) -> None:
        node_ids = self.assigned.pop(key, None)
        self.asked.pop(key, None)
        if node_ids is None:
            return
        node, ids = node_ids
        on_node = self.held.get(node, {})
        for gpu in ids:
            keys = on_node.get(gpu, [])
            if key in keys:
                keys.remove(key)
            if not keys:
                on_node.pop(gpu, None)
        log.info("%s: GPU %s freed by %s", node, ",".join(ids), key)

    def _free_ids(self, node: str) -> list[str]:
        on_node = self.held.get(node, {})
        return [str(i) for i in range(self.nodes[node].gpus) if str(i) not in on_node]

    def _assign_waiting(self, only: str | None = None) -> list[Annotate]:
        actions: list[Annotate] = []
        keys = list(self.waiting) if only is None else [only] if only in self.waiting else []
        for key in keys:
            f = self.pods.get(key)
            if f is None or not f.holds_whole:
                self.waiting.pop(key, None)
                self.told.discard(key)
                continue
            if f.node not in self.nodes:
                continue  # its node is not known yet
            ids = self._choose(f)
            if ids is None:
                continue
            self.waiting.pop(key)
            self.told.discard(key)
            self.assigned[key] = (f.node, ids)
            for gpu in ids:
                self.held.setdefault(f.node, {}).setdefault(gpu, []).append(key)
            self.version += 1
            log.info("%s: GPU %s held by %s (%s)", f.node, ",".join(ids), key, RESERVATION if f.reservation else WHOLE)
            if f.reservation:
                actions += self._ask(f)
        return actions

    def _choose(self, f: PodFacts) -> tuple[str, ...] | None:
        free = self._free_ids(f.node)
        need = 1 if f.reservation else f.gpus
        if f.reservation and f.reserved_index is not None:
            if f.reserved_index not in free:
                log.warning("%s: %s is annotated for GPU %s, which %s already holds", f.node, f.key, f.reserved_index,
                            ", ".join(self.held.get(f.node, {}).get(f.reserved_index, [])) or "no GPU of the node is")
            return (f.reserved_index,)  # set by someone else: it is the truth, as for fake-gpu-operator
        node_ids = self.remembered.pop(f.uid, None) if f.uid else None
        if node_ids is not None and node_ids[0] == f.node and len(node_ids[1]) == need and all(i in free for i in node_ids[1]):
            return node_ids[1]
        if self.syncing:
            return None  # no claim: after the listing, once every claim is in
        if len(free) < need:
            if f.key not in self.told:
                self.told.add(f.key)
                log.info("%s: %s waits for %d free GPUs (%d free)", f.node, f.key, need, len(free))
            return None
        return tuple(free[:need])

    def _ask(self, f: PodFacts) -> list[Annotate]:
        gpu = self.assigned[f.key][1][0]
        if f.reserved_index == gpu or self.asked.get(f.key) == gpu:
            return []
        self.asked[f.key] = gpu
        return [Annotate(f.namespace, f.name, RESERVE_ANNOTATION, gpu)]


def _shown(f: PodFacts) -> tuple:
    """The facts that change what the ledger shows."""
    return (f.uid, f.node, f.gpus, f.groups, f.fraction, f.memory_mib, f.finished)


def _id_order(gpu: str):
    return (0, int(gpu), "") if gpu.isdigit() else (1, 0, gpu)


def _holder_order(h: Holder):
    return ({RESERVATION: 0, WHOLE: 1, FRACTION: 2}.get(h.kind, 3), h.namespace, h.name)


# -- KAI's admission, the one part the binder needs ---------------------------------------------

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of k8s.io/apimachinery's rand.String


@dataclass(frozen=True)
class SharedGpuPrep:
    """An action for the driver: what KAI's admission and binder expect of a fractional pod before it binds."""

    namespace: str
    name: str
    uid: str
    prefix: str  # runai/shared-gpu-configmap
    container: str
    annotate: bool  # the pod does not carry the annotation yet

    @property
    def configmaps(self) -> tuple[str, str]:
        """The binder's two ConfigMaps for the fraction's container (capabilities, and direct env vars)."""
        return f"{self.prefix}-{self.container}", f"{self.prefix}-{self.container}-evar"


def shared_gpu_prep(f: PodFacts, scheduler: str, rand: random.Random) -> SharedGpuPrep | None:
    """For a fractional pod KAI has not bound yet: its ``runai/shared-gpu-configmap`` name and ConfigMaps.

    KAI's admission webhook sets that annotation when a fractional pod is created (pkg/admission/webhook/
    v1alpha2/gpusharing/gpu_sharing.go, Mutate), and the binder's gpusharing plugin refuses to bind without it
    ("no desired configmap name found in pod … annotations", pkg/binder/common/gpusharingconfigmap/
    config_map.go). Admission is not run locally, so the ledger sets it: a name prefix ``<owner or pod
    name>-<7 random chars>-shared-gpu``, short enough for KAI's ``-<i>-evar`` and ``-vol`` suffixes (63
    characters). Only the annotation: the env vars and volume admission adds would change the pod's spec,
    which cannot change after creation; without them the binder writes NVIDIA_VISIBLE_DEVICES into the
    ``-evar`` ConfigMap.

    The two ConfigMaps are made here too, owned by the pod as the binder would own them: the binder creates
    them in PreBind and reads them back at once from its informer cache, and on the local runtime that read
    often comes before the cache has the new object ("ConfigMap … -evar not found", measured); the failed
    bind's rollback then races with the retry, which deleted a reservation pod while its GPU id was reused.
    Made early, they are in the cache long before KAI binds; the binder finds them with the same owner
    and only updates their data.
    """
    if not f.asks_fraction or f.finished or f.node is not None or f.scheduler != scheduler or not f.uid:
        return None
    prefix = f.configmap_prefix
    if prefix is None:
        base = (f.owner or f.name)[:33].rstrip(".-")
        prefix = f"{base}-{''.join(rand.choice(_NAME_CHARS) for _ in range(7))}-shared-gpu"
    return SharedGpuPrep(f.namespace, f.name, f.uid, prefix, f.fraction_container, annotate=f.configmap_prefix is None)


# -- the stored ledger -------------------------------------------------------------------------


def dump_ledger(cells: dict[str, list[GpuCell]], nodes: dict[str, NodeShape]) -> dict[str, str]:
    """The ConfigMap's data: per node, its GPU count and memory and the GPUs someone holds."""
    data = {}
    for node, node_cells in cells.items():
        shape = nodes.get(node, NodeShape(len(node_cells)))
        held = {c.gpu: [h.to_dict() for h in c.holders] for c in node_cells if c.holders}
        data[node] = json.dumps({"gpus": shape.gpus, "memoryMiB": shape.memory_mib, "cells": held},
                                sort_keys=True, separators=(",", ":"))
    return data


def parse_ledger(data: dict[str, str] | None) -> dict[str, list[GpuCell]]:
    """The ledger from the ConfigMap's data: node → every GPU of the node, in id order (free ones without holders).

    A value that is not the ledger's JSON is skipped, not raised: a reader draws what it can.
    """
    out: dict[str, list[GpuCell]] = {}
    for node, text in sorted((data or {}).items()):
        try:
            doc = json.loads(text)
            gpus = int(doc.get("gpus", 0))
            held = doc.get("cells") or {}
            ids = [str(i) for i in range(gpus)]
            ids += sorted((g for g in held if g not in ids), key=_id_order)  # held past the count: shown, not lost
            out[node] = [GpuCell(node, gpu, tuple(Holder.from_dict(h) for h in held.get(gpu, []))) for gpu in ids]
        except (ValueError, TypeError, AttributeError):
            continue
    return out


def read_ledger(kube) -> dict[str, list[GpuCell]]:
    """The ledger as last written: node → its GPUs (``GpuCell``), every one, in id order.

    Empty when there is none (a lab without KAI, the kind runtime — fake-gpu-operator keeps its own —
    or the ledger's first write has not happened yet). One GET of the ConfigMap.
    """
    from kubernetes.client.exceptions import ApiException

    try:
        cm = kube.core.read_namespaced_config_map(LEDGER_CONFIGMAP, RESERVATION_NAMESPACE)
    except ApiException as e:
        if e.status == 404:
            return {}
        raise
    return parse_ledger(cm.data)


# -- the process -------------------------------------------------------------------------------


class Driver:
    """Watches nodes and pods, keeps a Topology, writes annotations and the ledger; one thread owns the Topology."""

    WRITE_EVERY = 0.2  # seconds: a burst of pod changes makes one ledger write, not one per change

    def __init__(self, kube, scheduler: str = KAI_SCHEDULER, seed: int | None = None):
        self.kube = kube
        self.scheduler = scheduler
        self.topology = Topology()
        self.events: queue.Queue = queue.Queue()
        self.rand = random.Random(seed)
        self.synced = threading.Event()
        self.stopping = threading.Event()
        self.written = -1
        self.last_write = 0.0
        self.watches: list = []
        self.prepared: dict[str, str] = {}  # uid → shared-GPU ConfigMap prefix, of fractional pods made ready

    # health: synced, and no watch failing for long
    def healthy(self) -> tuple[bool, str]:
        if not self.synced.is_set():
            return False, "starting: nodes and pods not listed yet"
        for w in self.watches:
            try:
                w.check()
            except Exception as e:  # noqa: BLE001 - reported, not raised
                return False, str(e)
        return True, "ok"

    def start(self) -> None:
        from kailab.kube import Watched

        self.topology.restore(read_ledger(self.kube))
        nodes = Watched(self.kube.core.list_node)
        nodes.on_change(lambda kind, obj: self.events.put(("node", kind, obj)))
        pods = Watched(self.kube.core.list_pod_for_all_namespaces)
        pods.on_change(lambda kind, obj: self.events.put(("pod", kind, obj)))
        self.watches = [nodes.start(), pods.start()]  # each lists first: every node and pod is queued
        self.events.put(("synced",))

    def run(self) -> None:
        while not self.stopping.is_set():
            due = self.last_write + self.WRITE_EVERY - time.monotonic()
            dirty = self.synced.is_set() and self.topology.version != self.written
            try:
                event = self.events.get(timeout=max(0.01, due) if dirty else 0.5)
            except queue.Empty:
                event = None
            if event is not None:
                self.handle(event)
            if self.synced.is_set() and self.topology.version != self.written and self.events.empty() \
                    and time.monotonic() - self.last_write >= self.WRITE_EVERY:
                self.write()

    def handle(self, event: tuple) -> None:
        what = event[0]
        actions: list[Annotate] = []
        if what == "node":
            _, kind, obj = event
            if kind == "DELETED":
                actions = self.topology.drop_node(obj.metadata.name)
            else:
                actions = self.topology.set_node(obj.metadata.name, node_shape(obj))
        elif what == "pod":
            _, kind, obj = event
            if kind == "DELETED":
                actions = self.topology.remove(f"{obj.metadata.namespace}/{obj.metadata.name}")
                self.prepared.pop(obj.metadata.uid, None)
            else:
                facts = facts_of(obj)
                actions = self.topology.update(facts)
                if facts.uid not in self.prepared:
                    prep = shared_gpu_prep(facts, self.scheduler, self.rand)
                    if prep is not None:
                        self.prepare(prep)
        elif what == "synced":
            actions = self.topology.synced()
            self.synced.set()
            log.info("synced: %d nodes, %d pods", len(self.topology.nodes), len(self.topology.pods))
        elif what == "retry":
            action = event[1]
            if isinstance(action, SharedGpuPrep):
                if action.uid not in self.prepared and any(f.uid == action.uid for f in self.topology.pods.values()):
                    self.prepare(action)
            elif self.topology.wants(action):
                actions = [action]
        for action in actions:
            self.annotate(action)

    def annotate(self, a: Annotate) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.kube.core.patch_namespaced_pod(a.name, a.namespace, {"metadata": {"annotations": {a.key: a.value}}})
            log.info("annotated %s/%s %s=%s", a.namespace, a.name, a.key, a.value)
        except ApiException as e:
            if e.status == 404:
                return  # the pod is gone
            self._retry(a, f"{e.status} {e.reason}")
        except Exception as e:  # noqa: BLE001 - the API server may be restarting; try again
            self._retry(a, f"{type(e).__name__}: {e}")

    def prepare(self, p: SharedGpuPrep) -> None:
        """The pod's shared-GPU ConfigMaps (an existing one is fine), then its annotation."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        owner = client.V1OwnerReference(api_version="v1", kind="Pod", name=p.name, uid=p.uid)
        try:
            for name in p.configmaps:
                body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, namespace=p.namespace,
                                                                       owner_references=[owner]), data={})
                try:
                    self.kube.core.create_namespaced_config_map(p.namespace, body)
                except ApiException as e:
                    if e.status != 409:
                        raise
            if p.annotate:
                self.kube.core.patch_namespaced_pod(p.name, p.namespace,
                                                    {"metadata": {"annotations": {CONFIGMAP_ANNOTATION: p.prefix}}})
            self.prepared[p.uid] = p.prefix
            log.info("prepared fractional pod %s/%s: %s=%s, ConfigMaps %s", p.namespace, p.name, CONFIGMAP_ANNOTATION,
                     p.prefix, ", ".join(p.configmaps))
        except ApiException as e:
            if e.status == 404:
                return  # the pod or its namespace is gone
            self._retry(p, f"{e.status} {e.reason}")
        except Exception as e:  # noqa: BLE001 - the API server may be restarting; try again
            self._retry(p, f"{type(e).__name__}: {e}")

    def _retry(self, a: "Annotate | SharedGpuPrep", why: str) -> None:
        log.warning("could not prepare or annotate %s/%s (%s); trying again in 1s", a.namespace, a.name, why)
        if isinstance(a, Annotate) and a.key == RESERVE_ANNOTATION:
            self.topology.forget_asked(f"{a.namespace}/{a.name}")
        timer = threading.Timer(1.0, lambda: self.events.put(("retry", a)))
        timer.daemon = True
        timer.start()

    def write(self) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        version = self.topology.version
        body = client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=LEDGER_CONFIGMAP, namespace=RESERVATION_NAMESPACE, labels=dict(MANAGED),
                                         annotations={FORMAT_ANNOTATION: FORMAT}),
            data=dump_ledger(self.topology.cells(), self.topology.nodes))
        self.last_write = time.monotonic()
        try:
            try:
                self.kube.core.replace_namespaced_config_map(LEDGER_CONFIGMAP, RESERVATION_NAMESPACE, body)
            except ApiException as e:
                if e.status != 404:
                    raise
                self.kube.core.create_namespaced_config_map(RESERVATION_NAMESPACE, body)
            self.written = version
        except Exception as e:  # noqa: BLE001 - written again on the next round
            log.warning("could not write the ledger: %s", str(e)[:300])


class _Health(BaseHTTPRequestHandler):
    driver: Driver

    def do_GET(self):  # noqa: N802 - http.server's name
        ok, why = self.driver.healthy()
        body = (why + "\n").encode()
        self.send_response(200 if ok and self.path.startswith("/healthz") else 503 if self.path.startswith("/healthz") else 404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet: the health check polls
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kailab.gpu_ledger", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--health-port", type=int, required=True, help="serve /healthz on 127.0.0.1:PORT")
    parser.add_argument("--scheduler-name", default=KAI_SCHEDULER)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.ERROR)

    from kailab.kube import Kube

    driver = Driver(Kube(args.kubeconfig), args.scheduler_name)
    handler = type("Health", (_Health,), {"driver": driver})
    server = ThreadingHTTPServer(("127.0.0.1", args.health_port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: driver.stopping.set())
    signal.signal(signal.SIGINT, lambda *_: driver.stopping.set())
    log.info("started; health on 127.0.0.1:%d/healthz", args.health_port)
    try:
        driver.start()
        driver.run()
        if driver.synced.is_set() and driver.topology.version != driver.written:
            driver.write()
    finally:
        log.info("stopped")
        logging.shutdown()
        # Watch threads may be blocked reading TLS: leave without finalising them (kube.Watched.stop says why).
        os._exit(0)


if __name__ == "__main__":
    main()
