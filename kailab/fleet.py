"""The fake GPU fleet: a fleet file (pools of identical nodes) → KWOK Node objects.

A node looks like one fake-gpu-operator makes for a KWOK node pool: GPUs in
``status.capacity/allocatable["nvidia.com/gpu"]``, the ``nvidia.com/gpu.*``
labels, the pool label, and KWOK's fake-node annotation and taint — and a pool's own labels (a zone, a rack)
and taints, from its ``labels:`` and ``taints:``.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

from kailab.errors import KailabError
from kailab.gpus import node_gpus
from kailab.kube import Kube, as_json, wait_until
from kailab.labelfield import LabelKey, LabelValue
from kailab.labels import (
    FAKE_GPU_LABEL,
    FLEET_LABEL,
    GPU,
    GPU_COUNT_LABEL,
    GPU_MEMORY_LABEL,
    GPU_PRESENT_LABEL,
    GPU_PRODUCT_LABEL,
    HOSTNAME_LABEL,
    LEARNER_LABEL,
    MANAGED,
    NODEPOOL_LABEL,
    POOL_LABEL,
)
from kailab.paths import MANIFESTS
from kailab.quantity import Quantity
from kailab.watched import Watched
from kailab.yamlfile import YamlFile

DEFAULT_FLEET = MANIFESTS / "fleet.yaml"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
MAX_NODES = 5000
MAX_GPU_MEMORY_MIB = 1024 * 1024  # a TiB: far above any GPU (the B200 has 180 GiB); its label must stay a label value
MANAGED_BY = {**MANAGED, FLEET_LABEL: "true"}


@dataclass(frozen=True)
class Pool:
    name: str
    nodes: int
    gpus_per_node: int
    gpu_product: str
    gpu_memory_mib: int
    labels: tuple[tuple[str, str], ...] = ()  # the fleet file's per-pool node labels (zone, rack …)
    taints: tuple[dict, ...] = ()  # the fleet file's per-pool taints, beside KWOK's


@dataclass(frozen=True)
class Fleet:
    pools: tuple[Pool, ...]
    node_cpu: str = "128"
    node_memory: str = "1Ti"
    node_pods: str = "110"
    source: str = field(default="", compare=False)
    taints: tuple[dict, ...] = ()  # beside KWOK's: nodes only pods that tolerate these may use (the bench's)

    @property
    def total_gpus(self) -> int:
        return sum(p.nodes * p.gpus_per_node for p in self.pools)

    @property
    def node_count(self) -> int:
        return sum(p.nodes for p in self.pools)

    def describe(self) -> str:
        """ "2×a100 (8 GPUs), 1×h100 (8 GPUs), …" for progress lines."""
        return ", ".join(
            f"{p.nodes}×{p.name} ({p.gpus_per_node} GPUs)" if p.gpus_per_node else f"{p.nodes}×{p.name} (CPU only)"
            for p in self.pools
        )

    def with_counts(self, counts: dict[str, int]) -> Fleet:
        """The same fleet with some pools resized (``--pool a100=3``)."""
        unknown = set(counts) - {p.name for p in self.pools}
        if unknown:
            names = ", ".join(p.name for p in self.pools)
            raise KailabError(f"No pool named {', '.join(sorted(unknown))} in the fleet.", hint=f"Pools: {names}.")
        pools = tuple(dataclasses.replace(p, nodes=counts.get(p.name, p.nodes)) for p in self.pools)
        resized = dataclasses.replace(self, pools=pools)
        problem = resized.capacity_problem()
        if problem:
            raise KailabError(
                f"With --pool, {problem}.",
                hint="Give each pool a count that leaves some GPUs, "
                f"and {MAX_NODES} nodes at most in all: --pool a100=3",
            )
        return resized

    def capacity_problem(self) -> str | None:
        """Why this fleet cannot hold a lesson (no GPU at all, or more nodes than kailab makes); None when it can."""
        if self.total_gpus == 0:
            return "the fleet has no GPU (every pool has 0 nodes, or only CPU-only pools have nodes)"
        if self.node_count > MAX_NODES:
            return f"the fleet has {self.node_count} nodes, more than the {MAX_NODES} kailab makes"
        return None


# Node labels kailab sets on every fleet node itself (node_objects, and a class's learner's nodes): a pool's
# ``labels:`` may not set them. Any other key is the pool's own, such as a zone or rack for KAI's Topology.
OWN_NODE_LABELS = {
    *MANAGED_BY,
    "type",
    HOSTNAME_LABEL,
    "kubernetes.io/os",
    "kubernetes.io/arch",
    POOL_LABEL,
    NODEPOOL_LABEL,
    LEARNER_LABEL,
    FAKE_GPU_LABEL,
}
OWN_NODE_LABEL_PREFIXES = ("nvidia.com/gpu.", "kailab.io/")


def _pool_label_key(key: str) -> str:
    if key in OWN_NODE_LABELS or key.startswith(OWN_NODE_LABEL_PREFIXES):
        raise ValueError(
            f"'{key}' is a label kailab sets on every node itself (names, GPUs, its pool, a class's learner): "
            "choose a key of your own, such as topology.kailab.io/rack"
        )
    return key


class _TaintFile(BaseModel):
    """A taint on each node of a pool: only pods that tolerate it may go there (KWOK's own taint is always there)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: LabelKey
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"

    @model_validator(mode="after")
    def _not_kwoks(self):
        if self.key == KWOK_TAINT["key"]:
            raise ValueError(f"'{self.key}' is KWOK's taint, which kailab puts on every node (its pods tolerate it)")
        return self


class _PoolFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[StrictStr, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)]
    nodes: Annotated[StrictInt, Field(ge=0, le=MAX_NODES)]
    gpusPerNode: Annotated[StrictInt, Field(ge=0, le=64)]  # 0: a CPU-only pool
    gpuProduct: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")] = "none"
    gpuMemoryMiB: Annotated[StrictInt, Field(ge=1, le=MAX_GPU_MEMORY_MIB)] = 1
    labels: dict[Annotated[LabelKey, AfterValidator(_pool_label_key)], LabelValue] = {}
    taints: list[_TaintFile] = []

    @model_validator(mode="after")
    def _gpu_shape(self):
        given = "gpuProduct" in self.model_fields_set or "gpuMemoryMiB" in self.model_fields_set
        if self.gpusPerNode == 0 and given:
            raise ValueError("a CPU-only pool (gpusPerNode: 0) has no gpuProduct or gpuMemoryMiB")
        if self.gpusPerNode > 0 and not (
            "gpuProduct" in self.model_fields_set and "gpuMemoryMiB" in self.model_fields_set
        ):
            raise ValueError("a GPU pool needs gpuProduct and gpuMemoryMiB")
        keys = [t.key for t in self.taints]
        if twice := sorted({k for k in keys if keys.count(k) > 1}):
            raise ValueError(f"two taints of this pool have the key {twice[0]}: give each key one taint")
        return self


class _FleetFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    pools: Annotated[list[_PoolFile], Field(min_length=1)]
    nodeCpu: Quantity = "128"
    nodeMemory: Quantity = "1Ti"
    nodePods: Quantity = "110"


def load_fleet(path: Path | None = None) -> Fleet:
    """Read a fleet file; a malformed one fails with its path, line and what is wrong."""
    path = path or DEFAULT_FLEET
    f = YamlFile(path, KailabError, hint=f"See {DEFAULT_FLEET} for the shape of a fleet file.")
    data = f.read_mapping("a fleet file is a mapping with a list of pools (pools: …)")
    doc = f.check(_FleetFile, data)
    seen: set[str] = set()
    for i, p in enumerate(doc.pools):
        if p.name in seen:
            raise f.fail(f.line_of(data, ("pools", i, "name")), f"two pools are named '{p.name}'")
        seen.add(p.name)
    pools = tuple(
        Pool(
            p.name,
            p.nodes,
            p.gpusPerNode,
            p.gpuProduct,
            p.gpuMemoryMiB,
            labels=tuple(p.labels.items()),
            taints=tuple(t.model_dump() for t in p.taints),
        )
        for p in doc.pools
    )
    fleet = Fleet(pools, doc.nodeCpu, doc.nodeMemory, doc.nodePods, source=str(path))
    problem = fleet.capacity_problem()
    if problem:
        raise f.fail(f.line_of(data, ("pools",)), problem)
    return fleet


def node_name(pool: Pool, index: int) -> str:
    return f"kwok-{pool.name}-{index}"


def node_objects(fleet: Fleet, prefix: str = "", labels: dict[str, str] | None = None) -> list[dict]:
    """The Node objects of the fleet, ready to create; ``prefix``: ``PREFIX-`` in front of each name and ``labels``
    on each node (a partition's fleet: kailab/partitions.py)."""
    nodes = []
    for pool in fleet.pools:
        for i in range(pool.nodes):
            name = f"{prefix}-{node_name(pool, i)}" if prefix else node_name(pool, i)
            resources = {"cpu": fleet.node_cpu, "memory": fleet.node_memory, "pods": fleet.node_pods}
            gpu_labels = {}
            if pool.gpus_per_node:  # what fake-gpu-operator labels a GPU node with; a CPU-only node has none
                resources[GPU] = str(pool.gpus_per_node)
                gpu_labels = {
                    GPU_PRESENT_LABEL: "true",
                    GPU_COUNT_LABEL: str(pool.gpus_per_node),
                    GPU_PRODUCT_LABEL: pool.gpu_product,
                    GPU_MEMORY_LABEL: str(pool.gpu_memory_mib),
                    FAKE_GPU_LABEL: "true",
                }
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                        "labels": {
                            **MANAGED_BY,
                            "type": "kwok",
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "kubernetes.io/arch": "amd64",
                            POOL_LABEL: pool.name,
                            **gpu_labels,
                            **dict(pool.labels),
                            **(labels or {}),
                        },
                    },
                    "spec": {"taints": [dict(KWOK_TAINT), *map(dict, pool.taints), *map(dict, fleet.taints)]},
                    "status": {"capacity": dict(resources), "allocatable": dict(resources)},
                }
            )
    return nodes


def node_ready(node: dict) -> bool:
    """A node (the API's JSON) whose Ready condition is True."""
    conditions = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def reported_gpus(node: dict) -> int:
    """The GPUs a node's status (the API's JSON) reports now (KWOK's device plugin stand-in applies them)."""
    return node_gpus((node.get("status") or {}).get("allocatable"))


def shared_labels(nodes: list[dict]) -> str:
    """A label selector every one of ``nodes`` matches (the labels they all carry): a watch of them alone, not of
    every node of the cluster (a partition's five, beside a class's or the other lessons' hundreds)."""
    common: dict[str, str] | None = None
    for n in nodes:
        labels = n["metadata"].get("labels") or {}
        common = dict(labels) if common is None else {k: v for k, v in common.items() if labels.get(k) == v}
    return ",".join(f"{k}={v}" for k, v in sorted((common or {}).items()))


def create_fleet(
    kube: Kube, fleet: Fleet, timeout: float = 120, logs_hint: str = "", nodes: list[dict] | None = None
) -> None:
    """Create (or re-apply) the fleet's nodes and wait until KWOK has each one Ready with its GPUs.

    Shared by every runtime: the same objects, the same wait, through the kubernetes client.
    Status is applied separately (the status subresource), as a kubelet would report it.
    """
    nodes = node_objects(fleet) if nodes is None else nodes  # ``nodes``: these instead (node_objects' own options)
    want = {n["metadata"]["name"]: node_gpus(n["status"]["allocatable"]) for n in nodes}

    def create(node: dict) -> None:
        kube.apply(node)
        kube.apply_status(node)

    # Two calls per node; a thousand-node fleet goes in parallel (the client's pool holds 16 connections), a thread
    # for every 8 nodes: each thread's first call opens a connection, whose TLS handshake costs more CPU than a
    # partition's five nodes made one after another (measured: 0.9 s of a side-by-side run went in handshakes here).
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(nodes) // 8))) as pool:
        list(pool.map(create, nodes))
    watched = Watched(as_json(kube.core.list_node), label_selector=shared_labels(nodes)).start()
    try:

        def missing() -> list[str]:
            have = {n["metadata"]["name"]: n for n in watched.snapshot()}
            return sorted(
                name
                for name, gpus in want.items()
                if name not in have or not node_ready(have[name]) or reported_gpus(have[name]) != gpus
            )

        if not wait_until(watched.cond, lambda: not missing(), timeout):
            raise KailabError(
                f"These fleet nodes are not Ready with their GPUs after {timeout:.0f}s: {', '.join(missing())}.",
                hint=logs_hint or "Is the KWOK controller running? See: kailab status",
            )
    finally:
        watched.stop()
