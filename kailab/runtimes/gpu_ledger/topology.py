"""Which GPU id of its node each pod holds, and the annotations that follow: the ledger's pure core (no I/O)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kailab.labels import RESERVE_ANNOTATION
from kailab.runtimes.gpu_ledger.facts import NodeShape, PodFacts

WHOLE, RESERVATION, FRACTION = "whole", "reservation", "fraction"

log = logging.getLogger("kailab.gpu_ledger")


@dataclass(frozen=True)
class Holder:
    """One pod on one GPU: the whole of it, or a portion shared through a reservation pod."""

    namespace: str
    name: str
    uid: str
    kind: str  # whole, reservation or fraction
    portion: float | None = 1.0  # of this GPU; None when not known (gpu-memory on a node without a memory label)

    def to_dict(self) -> dict:
        """Its fields as a dict (made directly: ``dataclasses.asdict`` copies deeply, a ledger write made hundreds)."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "kind": self.kind,
            "portion": self.portion,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Holder:
        portion = d.get("portion")
        return cls(
            str(d.get("namespace", "")),
            str(d.get("name", "")),
            str(d.get("uid", "")),
            str(d.get("kind", WHOLE)),
            float(portion) if isinstance(portion, (int, float)) else None,
        )


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
        holders = self.holders()
        held_on: dict[str, list[str]] = {}  # node → its GPUs someone holds (not every holder for every node)
        for n, gpu in holders:
            held_on.setdefault(n, []).append(gpu)
        out: dict[str, list[GpuCell]] = {}
        for node in sorted(self.nodes):
            shape = self.nodes[node]
            if shape.gpus <= 0:
                continue
            numbered = [str(i) for i in range(shape.gpus)]
            numbered += sorted((gpu for gpu in held_on.get(node, ()) if gpu not in numbered), key=id_order)
            out[node] = [GpuCell(node, gpu, holders.get((node, gpu), ())) for gpu in numbered]
        return out

    def holders(self) -> dict[tuple[str, str], tuple[Holder, ...]]:
        """(node, GPU id) → its holders in order, for the GPUs someone holds (what :meth:`cells` adds the free ones
        to; the ledger's writes need these alone)."""
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
                        Holder(f.namespace, f.name, f.uid, FRACTION, self._portion(f, self.nodes.get(node)))
                    )
        return {cell: tuple(sorted(held, key=_holder_order)) for cell, held in holders.items()}

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
        log.debug("%s: GPU %s freed by %s", node, ",".join(ids), key)

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
            node = f.node
            if node is None or node not in self.nodes:
                continue  # its node is not known yet
            ids = self._choose(f, node)
            if ids is None:
                continue
            self.waiting.pop(key)
            self.told.discard(key)
            self.assigned[key] = (node, ids)
            for gpu in ids:
                self.held.setdefault(node, {}).setdefault(gpu, []).append(key)
            self.version += 1
            log.debug("%s: GPU %s held by %s (%s)", node, ",".join(ids), key, RESERVATION if f.reservation else WHOLE)
            if f.reservation:
                actions += self._ask(f)
        return actions

    def _choose(self, f: PodFacts, node: str) -> tuple[str, ...] | None:
        """The GPU ids of ``node`` that ``f`` takes now, or None while it waits."""
        free = self._free_ids(node)
        need = 1 if f.reservation else f.gpus
        if f.reservation and f.reserved_index is not None:
            if f.reserved_index not in free:
                log.warning(
                    "%s: %s is annotated for GPU %s, which %s already holds",
                    node,
                    f.key,
                    f.reserved_index,
                    ", ".join(self.held.get(node, {}).get(f.reserved_index, [])) or "no GPU of the node is",
                )
            return (f.reserved_index,)  # set by someone else: it is the truth, as for fake-gpu-operator
        node_ids = self.remembered.pop(f.uid, None) if f.uid else None
        if (
            node_ids is not None
            and node_ids[0] == node
            and len(node_ids[1]) == need
            and all(i in free for i in node_ids[1])
        ):
            return node_ids[1]
        if self.syncing:
            return None  # no claim: after the listing, once every claim is in
        if len(free) < need:
            if f.key not in self.told:
                self.told.add(f.key)
                log.info("%s: %s waits for %d free GPUs (%d free)", node, f.key, need, len(free))
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


def id_order(gpu: str):
    """GPU ids in order: numbers by value ("2" before "10"), then any other id."""
    return (0, int(gpu), "") if gpu.isdigit() else (1, 0, gpu)


def _holder_order(h: Holder):
    return ({RESERVATION: 0, WHOLE: 1, FRACTION: 2}.get(h.kind, 3), h.namespace, h.name)
