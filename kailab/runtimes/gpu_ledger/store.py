"""The ledger as one ConfigMap: written by the ledger's process, read by anyone.

``kailab-gpu-ledger`` in ``kai-resource-reservation`` (annotated with its format, ``kailab.io/gpu-ledger-format:
"1"``), one key per node; its value is JSON ``{"gpus": 8, "memoryMiB": 81920, "cells": {"<gpu id>": [holder, …]}}``
with only the GPUs someone holds; a holder is ``{"namespace", "name", "uid", "kind", "portion"}``, kind ``whole``,
``reservation`` or ``fraction``. A ConfigMap rather than annotations on pods: it is read in one GET, it survives
the process restarting (whole-GPU pods have nowhere else to keep their ids), and the process never writes to pods
for its own bookkeeping, so the pod watches that scenarios record see no extra changes. Why it is not
fake-gpu-operator's format: see :mod:`kailab.runtimes.gpu_ledger`.
"""

from __future__ import annotations

import functools
import json

from kailab.labels import MANAGED, RESERVATION_NAMESPACE
from kailab.runtimes.gpu_ledger.facts import NodeShape
from kailab.runtimes.gpu_ledger.topology import GpuCell, Holder, id_order

LEDGER_CONFIGMAP = "kailab-gpu-ledger"
FORMAT_ANNOTATION = "kailab.io/gpu-ledger-format"
FORMAT = "1"


def dump_ledger(cells: dict[str, list[GpuCell]], nodes: dict[str, NodeShape]) -> dict[str, str]:
    """The ConfigMap's data: per node, its GPU count and memory and the GPUs someone holds."""
    return {
        node: _node_text(
            nodes.get(node, NodeShape(len(node_cells))), {c.gpu: c.holders for c in node_cells if c.holders}
        )
        for node, node_cells in cells.items()
    }


def dump_holders(holders: dict[tuple[str, str], tuple[Holder, ...]], nodes: dict[str, NodeShape]) -> dict[str, str]:
    """The same data as :func:`dump_ledger` of the topology's cells, from its holders (``Topology.holders``) alone:
    the ledger's process writes it often, and most nodes' GPUs are free (their text is made once per shape)."""
    held: dict[str, dict[str, tuple[Holder, ...]]] = {}
    for (node, gpu), on in holders.items():
        if on:
            held.setdefault(node, {})[gpu] = on
    return {
        node: _node_text(shape, held[node]) if node in held else _free_text(shape)
        for node, shape in sorted(nodes.items())
        if shape.gpus > 0
    }


def _node_text(shape: NodeShape, held: dict[str, tuple[Holder, ...]]) -> str:
    cells = {gpu: [h.to_dict() for h in on] for gpu, on in held.items()}
    return json.dumps(
        {"gpus": shape.gpus, "memoryMiB": shape.memory_mib, "cells": cells}, sort_keys=True, separators=(",", ":")
    )


@functools.lru_cache(maxsize=64)
def _free_text(shape: NodeShape) -> str:
    return _node_text(shape, {})


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
            ids += sorted((g for g in held if g not in ids), key=id_order)  # held past the count: shown, not lost
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


def write_ledger(kube, data: dict[str, str], stored: dict[str, str] | None = None) -> None:
    """The ConfigMap's data made ``data``; an API error is raised. ``stored``: the data this process last wrote, when
    it has written: then only the nodes whose value changed are patched (a node no longer there removed), not every
    node's; else the whole ConfigMap is replaced (made the first time). The API's answer is not read into the
    client's objects: nothing of it is used."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    if stored is not None:
        changed: dict[str, str | None] = {k: v for k, v in data.items() if stored.get(k) != v}
        changed.update({k: None for k in stored if k not in data})
        if not changed:
            return
        try:
            kube.core.patch_namespaced_config_map(
                LEDGER_CONFIGMAP, RESERVATION_NAMESPACE, {"data": changed}, _preload_content=False
            ).read()
            return
        except ApiException as e:
            if e.status != 404:
                raise  # gone (someone deleted it): made again whole, below
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(
            name=LEDGER_CONFIGMAP,
            namespace=RESERVATION_NAMESPACE,
            labels=dict(MANAGED),
            annotations={FORMAT_ANNOTATION: FORMAT},
        ),
        data=data,
    )
    try:
        kube.core.replace_namespaced_config_map(
            LEDGER_CONFIGMAP, RESERVATION_NAMESPACE, body, _preload_content=False
        ).read()
    except ApiException as e:
        if e.status != 404:
            raise
        kube.core.create_namespaced_config_map(RESERVATION_NAMESPACE, body, _preload_content=False).read()
