"""What the lab looks like now: components, GPU nodes with used/free GPUs, queues with their pods."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kailab import gpus
from kailab.kube import Kube, as_json
from kailab.labels import POOL_LABEL, QUEUE_API
from kailab.pods import PodView, pod_view
from kailab.runtimes.base import LabInfo

if TYPE_CHECKING:
    from kailab.view import View


def all_pods(kube: Kube) -> list[PodView]:
    """Every pod in the cluster."""
    return [pod_view(p) for p in kube.pods()]


def nodes_and_gpus(kube: Kube, pods: list[PodView] | None = None, selector: str = "") -> list[dict]:
    """One row per node (of those ``selector`` selects): :func:`node_rows` of the cluster's nodes now."""
    nodes = as_json(kube.core.list_node)(label_selector=selector)["items"]
    return node_rows(nodes, pods if pods is not None else all_pods(kube))


def node_rows(nodes: list[dict], pods: list[PodView]) -> list[dict]:
    """One row per node (the API's JSON): its pool, GPUs, GPUs in use (a shared GPU once, see :mod:`kailab.gpus`),
    free GPUs. Pure: ``kailab status``, ``watch``, ``explain`` and the pages show these rows."""
    used = gpus.used_per_node(pods)
    out = []
    for n in nodes:
        meta = n.get("metadata") or {}
        count = gpus.node_gpus((n.get("status") or {}).get("allocatable"))
        out.append(
            {
                "name": meta.get("name", ""),
                "pool": (meta.get("labels") or {}).get(POOL_LABEL, "-"),
                "gpus": count,
                "used": used.get(meta.get("name", ""), 0),
                "free": count - used.get(meta.get("name", ""), 0),
            }
        )
    return out


MAX_NODE_ROWS = 24  # more nodes than this are shown as one row per pool


def pool_rows(node_rows: list[dict]) -> list[dict]:
    """Nodes summed per pool (for fleets too big for a row per node): pool, nodes, GPUs, used, free."""
    pools: dict[str, dict] = {}
    for n in node_rows:
        p = pools.setdefault(n["pool"], {"pool": n["pool"], "nodes": 0, "gpus": 0, "used": 0, "free": 0})
        p["nodes"] += 1
        for k in ("gpus", "used", "free"):
            p[k] += n[k]
    return [pools[k] for k in sorted(pools)]


def queues(
    kube: Kube, pods: list[PodView] | None = None, fair_shares: dict[str, float] | None = None, selector: str = ""
) -> list[dict]:
    """One row per Queue (of those ``selector`` selects): :func:`queue_rows` of the cluster's queues now."""
    found = kube.list(QUEUE_API, "Queue", label_selector=selector or None)
    return queue_rows(found, pods if pods is not None else all_pods(kube), fair_shares)


def queue_rows(
    queue_objects: list[dict], pods: list[PodView], fair_shares: dict[str, float] | None = None
) -> list[dict]:
    """One row per Queue object: its GPU quota, limit and weight, GPUs its pods hold (:func:`kailab.gpus.per_queue`),
    its pending pods (parents sum children), and its fair share of GPUs when KAI's scheduler published one
    (``fair_shares``). Pure: ``kailab status``, ``watch``, ``explain`` and the pages show these rows."""
    allocated = gpus.per_queue(pods)
    pending: dict[str, int] = {}
    for p in pods:
        if p.queue and not p.deleting and not p.node:
            pending[p.queue] = pending.get(p.queue, 0) + 1
    out = []
    for q in queue_objects:
        spec = q.get("spec") or {}
        gpu = (spec.get("resources") or {}).get("gpu") or {}
        name = q["metadata"]["name"]
        out.append(
            {
                "name": name,
                "parent": spec.get("parentQueue"),
                "priority": spec.get("priority", 100),
                "quota": gpu.get("quota"),
                "limit": gpu.get("limit"),
                "weight": gpu.get("overQuotaWeight"),
                "allocated": allocated.get(name, 0),
                "pending": pending.get(name, 0),
                "fair_share": (fair_shares or {}).get(name),
            }
        )
    # A parent queue holds what its children hold.
    children: dict[str, list[dict]] = {}
    for q in out:
        if q["parent"]:
            children.setdefault(q["parent"], []).append(q)

    def total(q: dict, key: str) -> float:
        return round(q[key] + sum(total(c, key) for c in children.get(q["name"], [])), 6)

    for q in out:
        q["allocated"], q["pending"] = total(q, "allocated"), total(q, "pending")
    return sorted(out, key=lambda q: (q["parent"] or q["name"], q["parent"] is not None, q["name"]))


def top_level_quotas(queue_objects: list[dict]) -> float:
    """The GPU quotas of the top-level Queue objects, summed; an unlimited quota (-1) is not counted."""
    total = 0.0
    for q in queue_objects:
        spec = q.get("spec") or {}
        quota = ((spec.get("resources") or {}).get("gpu") or {}).get("quota") or 0
        if not spec.get("parentQueue") and quota > 0:
            total += quota
    return total


def quota_warnings(rows: list[dict], nodes: list[dict]) -> list[str]:
    """What ``kailab status --queues`` warns of: the top-level queues' GPU quotas (rows of :func:`queues`) adding up
    to more than the fleet's GPUs, or a parent's children's to more than its own quota. KAI then cannot give every
    queue its quota: it gives each min(quota, requested) first, whatever is left (pkg/scheduler/plugins/proportion/
    resource_division/resource_division.go), and its maintainers say fairness is not guaranteed."""

    def summed(group: list[dict]) -> float:
        return sum(q["quota"] for q in group if q["quota"] and q["quota"] > 0)

    out = []
    fleet = sum(n["gpus"] for n in nodes)
    top = summed([q for q in rows if not q["parent"]])
    if nodes and top > fleet:
        out.append(
            f"The top-level queues' GPU quotas add up to {top:g}, more than the fleet's {fleet:g} GPUs: KAI cannot "
            "give every queue its quota (runbooks/quotas-past-fleet.md)."
        )
    by_name = {q["name"]: q for q in rows}
    for parent in sorted({q["parent"] for q in rows if q["parent"]}):
        children = summed([q for q in rows if q["parent"] == parent])
        own = (by_name.get(parent) or {}).get("quota")
        if own is not None and own >= 0 and children > own:
            out.append(
                f"The quotas of {parent}'s children add up to {children:g}, more than its own {own:g}: KAI divides "
                f"only {parent}'s share among them (runbooks/quotas-past-fleet.md)."
            )
    return out


def lab_status(
    info: LabInfo,
    kube: Kube | None,
    with_queues: bool,
    fair_shares: dict[str, float] | None = None,
    metrics=None,
    view: View | None = None,
) -> dict:
    """The lab now; ``metrics``: a reader of KAI's scheduler metrics, for how busy the lab is (``load``); ``view``:
    the pods, nodes and queues the lab sees (a class learner's: their slice; None: the whole cluster)."""
    status = {
        "runtime": info.runtime,
        "kubeconfig": str(info.kubeconfig),
        "healthy": all(c.healthy for c in info.components) and kube is not None,
        "components": [{"name": c.name, "healthy": c.healthy, "detail": c.detail} for c in info.components],
        "nodes": [],
        "queues": None,
    }
    if kube is not None:
        pods = view.pods(kube) if view is not None else all_pods(kube)
        status["nodes"] = nodes = nodes_and_gpus(kube, pods, view.nodes if view is not None else "")
        if with_queues:
            status["queues"] = rows = queues(kube, pods, fair_shares, view.queues if view is not None else "")
            status["warnings"] = quota_warnings(rows, nodes)
        status["load"] = load(kube, metrics)
    return status


def load(kube: Kube, metrics=None) -> dict:
    """How busy the lab is now (kailab/pace.py): KAI's last cycle's work and the API server's latency in seconds,
    how many times slower than a quiet lab, and a warning when that is far above normal."""
    from kailab import pace

    reading = pace.measure(kube, metrics)
    return {
        "scheduler_cycle_seconds": reading.cycle,
        "api_latency_seconds": reading.api,
        "slowdown": round(pace.slowdown(reading), 1),
        "busy": pace.busy_words(reading),
        "said": pace.words(reading),
    }
