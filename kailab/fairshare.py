"""Each queue's fair share, as KAI's scheduler publishes it on its metrics endpoint.

KAI v0.17.0 computes fair share in its proportion plugin every cycle
(pkg/scheduler/plugins/proportion/resource_division) and exports it as the gauges
``<namespace>_queue_fair_share_gpu`` / ``_cpu_cores`` / ``_memory_gb`` labelled by
``queue_name``; no Kubernetes object of KAI's carries it. Beside it the gauge ``<namespace>_queue_gpu_usage``: the
queue's recent GPU usage, as a part of the fleet's, that time-based fair share weighs (``historicalUsage`` in the
scheduler's log; 0 unless a usage database is configured). :func:`parse` reads that text; :func:`samples` keeps only
those lines, which the local runtime's shard supervisor publishes on a class learner's SchedulingShard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
RESOURCES = {
    "queue_fair_share_gpu": "gpu",
    "queue_fair_share_cpu_cores": "cpu",
    "queue_fair_share_memory_gb": "memory",
    "queue_gpu_usage": "usage",
}


@dataclass(frozen=True)
class FairShare:
    """One queue's fair share right now: GPUs, CPU cores, memory in GB; and its recent GPU usage (0 to 1)."""

    queue: str
    gpu: float = 0.0
    cpu: float = 0.0
    memory: float = 0.0
    usage: float = 0.0


def parse(metrics: str) -> dict[str, FairShare]:
    """Prometheus text → queue name → FairShare (queues the scheduler has not divided yet are absent)."""
    found: dict[str, dict[str, float]] = {}
    for line in metrics.splitlines():
        m = _SAMPLE.match(line)
        if not m:
            continue
        resource = next((r for suffix, r in RESOURCES.items() if m["name"].endswith(suffix)), None)
        if resource is None:
            continue
        labels = dict(_LABEL.findall(m["labels"]))
        queue = labels.get("queue_name")
        try:
            value = float(m["value"])
        except ValueError:
            continue
        if queue:
            found.setdefault(queue, {})[resource] = value
    return {q: FairShare(q, **values) for q, values in found.items()}


def samples(metrics: str) -> str:
    """The fair-share samples of ``metrics`` alone, as Prometheus text :func:`parse` reads, one line a sample in a
    stable order: what the local runtime's shard supervisor publishes on a learner's shard (a scheduler's whole
    metrics text is tens of KB; its fair shares a few lines)."""
    kept = []
    for line in metrics.splitlines():
        if "queue_" not in line:  # every name kept has it: most lines are skipped before the pattern runs
            continue
        m = _SAMPLE.match(line)
        if m and any(m["name"].endswith(suffix) for suffix in RESOURCES):
            kept.append(line.strip())
    return "".join(f"{line}\n" for line in sorted(kept))
