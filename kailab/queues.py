"""KAI's Queue in the one shape kailab writes it: the lessons' queues, a scenario's, the bench's.

A Queue is cluster-scoped; each of its resources (gpu, cpu, memory) has a quota, a limit and an over-quota
weight, ``-1`` meaning unlimited. KAI reads an unset limit as 0, which would block every pod: so every resource
is written out, CPU and memory unlimited unless said.
"""

from __future__ import annotations

from kailab.labels import MANAGED, QUEUE_API

UNLIMITED = -1


def resource(quota: float = 0, limit: float = UNLIMITED, over_quota_weight: float = 1) -> dict:
    """One resource of a queue, as KAI's Queue spec spells it."""
    return {"quota": quota, "limit": limit, "overQuotaWeight": over_quota_weight}


def queue_object(
    name: str,
    gpu: dict | None = None,
    cpu: dict | None = None,
    memory: dict | None = None,
    *,
    parent: str | None = None,
    priority: int | None = None,
    preempt_min_runtime: str | None = None,
    reclaim_min_runtime: str | None = None,
) -> dict:
    """A Queue labelled as kailab's: GPU quota 0 and CPU and memory unlimited unless given."""
    spec: dict = {
        "resources": {
            "gpu": gpu or resource(),
            "cpu": cpu or resource(UNLIMITED),
            "memory": memory or resource(UNLIMITED),
        }
    }
    if parent:
        spec["parentQueue"] = parent
    if priority is not None:
        spec["priority"] = priority
    if preempt_min_runtime:
        spec["preemptMinRuntime"] = preempt_min_runtime
    if reclaim_min_runtime:
        spec["reclaimMinRuntime"] = reclaim_min_runtime
    return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name, "labels": dict(MANAGED)}, "spec": spec}


def queue_ref(name: str) -> dict:
    """A Queue by name only: what to delete, or to claim (whose it is)."""
    return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name}}
