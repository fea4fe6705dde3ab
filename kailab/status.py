"""What the lab looks like now: components, GPU nodes with used/free GPUs, queues with their pods."""

from __future__ import annotations

from kailab.fleet import POOL_LABEL
from kailab.kube import Kube
from kailab.runtimes.base import LabInfo
from kailab.scenarios.manifests import QUEUE_API, QUEUE_LABEL


def pod_gpus(pod) -> int:
    return sum(int(((c.resources.limits or {}) if c.resources else {}).get("nvidia.com/gpu", 0) or 0)
               for c in pod.spec.containers or [])


def nodes_and_gpus(kube: Kube, pods=None) -> list[dict]:
    pods = pods if pods is not None else kube.core.list_pod_for_all_namespaces().items
    used: dict[str, int] = {}
    for p in pods:
        if p.spec.node_name and p.status.phase in ("Pending", "Running"):
            used[p.spec.node_name] = used.get(p.spec.node_name, 0) + pod_gpus(p)
    out = []
    for n in kube.core.list_node().items:
        gpus = int((n.status.allocatable or {}).get("nvidia.com/gpu", 0) or 0)
        out.append({"name": n.metadata.name, "pool": (n.metadata.labels or {}).get(POOL_LABEL, "-"),
                    "gpus": gpus, "used": used.get(n.metadata.name, 0), "free": gpus - used.get(n.metadata.name, 0)})
    return out


def queues(kube: Kube, pods=None) -> list[dict]:
    pods = pods if pods is not None else kube.core.list_pod_for_all_namespaces().items
    allocated: dict[str, int] = {}
    pending: dict[str, int] = {}
    for p in pods:
        q = (p.metadata.labels or {}).get(QUEUE_LABEL)
        if not q or p.metadata.deletion_timestamp:
            continue
        if p.spec.node_name and p.status.phase in ("Pending", "Running"):
            allocated[q] = allocated.get(q, 0) + pod_gpus(p)
        elif not p.spec.node_name:
            pending[q] = pending.get(q, 0) + 1
    out = []
    for q in kube.list(QUEUE_API, "Queue"):
        spec = q.get("spec") or {}
        gpu = (spec.get("resources") or {}).get("gpu") or {}
        name = q["metadata"]["name"]
        out.append({"name": name, "parent": spec.get("parentQueue"), "priority": spec.get("priority", 100),
                    "quota": gpu.get("quota"), "limit": gpu.get("limit"), "weight": gpu.get("overQuotaWeight"),
                    "allocated": allocated.get(name, 0), "pending": pending.get(name, 0)})
    # A parent queue holds what its children hold.
    children: dict[str, list[dict]] = {}
    for q in out:
        if q["parent"]:
            children.setdefault(q["parent"], []).append(q)

    def total(q: dict, key: str) -> int:
        return q[key] + sum(total(c, key) for c in children.get(q["name"], []))

    for q in out:
        q["allocated"], q["pending"] = total(q, "allocated"), total(q, "pending")
    return sorted(out, key=lambda q: (q["parent"] or q["name"], q["parent"] is not None, q["name"]))


def lab_status(info: LabInfo, kube: Kube | None, with_queues: bool) -> dict:
    status = {
        "runtime": info.runtime,
        "kubeconfig": str(info.kubeconfig),
        "healthy": all(c.healthy for c in info.components) and kube is not None,
        "components": [{"name": c.name, "healthy": c.healthy, "detail": c.detail} for c in info.components],
        "nodes": [],
        "queues": None,
    }
    if kube is not None:
        pods = kube.core.list_pod_for_all_namespaces().items
        status["nodes"] = nodes_and_gpus(kube, pods)
        if with_queues:
            status["queues"] = queues(kube, pods)
    return status
