"""What this machine can hold: a size it cannot hold is refused before anything is made, with the deciding figure.

The memory and time a number of nodes and pods take, from figures measured here.

Measured on the local runtime (KAI v0.17.0, 2 cores, 24 GiB; ``kailab bench`` reports the lab's peak memory):
a lab at rest 985 MiB; 1,000 KWOK nodes added 471 MiB; a Job of 1,000 one-GPU pods added 232 MiB under
kube-scheduler and 672 MiB more under KAI (its PodGroups and BindRequests too), none of it given back between runs.
KAI bound 2,000 pods in 259 s (README, Performance), kube-scheduler in 30 s. A class's learners have their own
figures (``runtimes/local_partitions.py``).
"""

from __future__ import annotations

import os

from kailab.labels import DEFAULT_SCHEDULER_NAME, KAI_SCHEDULER_NAME

MIB_PER_NODE = 0.5  # a KWOK node, in the API server, etcd, KWOK and KAI's caches
MIB_PER_POD = 0.7  # a pod while a bench's Job runs (KAI's figure; kube-scheduler's is lower)
LAB_MIB = 1024  # a lab at rest, before its nodes: the control plane and KAI's components
RESERVE_MIB = 512  # left free for the machine and kailab itself
# pods bound a second per core, measured on 2 cores
PODS_PER_SECOND_PER_CORE = {KAI_SCHEDULER_NAME: 3.8, DEFAULT_SCHEDULER_NAME: 33.0}


def free_mib() -> float:
    import psutil

    return psutil.virtual_memory().available / 2**20


def _gib(mib: float) -> str:
    return f"{mib / 1024:,.1f} GiB"


def memory_shortfall(
    nodes: int, pods: int = 0, runs: int = 1, lab: bool = False, available_mib: float | None = None
) -> str:
    """Why ``nodes`` more nodes and ``pods`` more pods in each of ``runs`` (and, with ``lab``, a lab of their own) do
    not fit in the memory available now, in words with the figures; "" when they fit."""
    need = nodes * MIB_PER_NODE + pods * runs * MIB_PER_POD + (LAB_MIB if lab else 0)
    available = free_mib() if available_mib is None else available_mib
    if need + RESERVE_MIB <= available:
        return ""
    parts = [f"{nodes:,} nodes × {MIB_PER_NODE} MiB"]
    if pods:
        parts.append(f"{pods:,} pods × {MIB_PER_POD} MiB" + (f" × {runs} runs (one per scheduler)" if runs > 1 else ""))
    if lab:
        parts.append(f"the lab itself {_gib(LAB_MIB)}")
    return (
        f"{' + '.join(parts)} need about {_gib(need)} of memory, and this machine has {_gib(available)} available "
        f"(kailab keeps {RESERVE_MIB} MiB free)"
    )


def binding_seconds(pods: int, scheduler: str, cores: int | None = None) -> float:
    """About how long ``scheduler`` takes to bind ``pods`` pods on this machine's cores (measured rates)."""
    return pods / (PODS_PER_SECOND_PER_CORE[scheduler] * (cores or os.cpu_count() or 1))


def check_lab(nodes: int) -> None:
    """Refuse, before anything starts, a lab of ``nodes`` KWOK nodes on this machine (a runtime that makes its cluster
    here) when they and the lab itself do not fit in the memory available now."""
    from kailab.errors import KailabError

    if short := memory_shortfall(nodes, lab=True):
        raise KailabError(
            f"This machine cannot hold this lab: {short}. Nothing was started.",
            hint="A smaller fleet: fewer nodes in its pools (--pool NAME=COUNT, or the fleet file's nodes:).",
        )
