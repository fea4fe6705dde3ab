"""Who used the machine's CPU during a bench run: Kubernetes' control plane, KAI, or kailab itself.

    with CpuSplit() as split:
        ...                       # the run
    print(split.report(seconds))

Samples every process twice a second (so a scheduler that lived for one lesson counts too) and adds up the CPU
seconds each used while the run lasted, grouped by what it is; the sampling's own CPU (about 4% of a core) is left
out of kailab's. The figure that matters for a time target on this
machine: the control plane and KAI alone need ``their CPU seconds / cores`` seconds of wall time even with every
core busy and kailab using nothing, so a target under that cannot be met here by anything kailab does.
"""

from __future__ import annotations

import os
import threading
import time

import psutil

GROUPS = {  # process name (or its start) → group
    "kube-apiserver": "Kubernetes",
    "etcd": "Kubernetes",
    "kube-controller-manager": "Kubernetes",
    "kube-scheduler": "Kubernetes",
    "kwok-controller": "Kubernetes",
    "kai-": "KAI",
    "prometheus": "KAI",  # the usage database KAI's scheduler reads (time-fairshare)
    # the workload operators a lesson starts (kailab/operators.py): the cluster's controllers, not kailab's code,
    # though the run starts them (they were counted as kailab's: 0.2-0.3 s of a run with ray-gang)
    "kuberay-operator": "Kubernetes",
    "training-operator": "Kubernetes",
    "jobset-controller": "Kubernetes",
    "lws-controller": "Kubernetes",
}


def group_of(name: str, cmdline: list[str], home: str | None = None) -> str | None:
    """The group of one process, None for one that is not the lab's (the machine's own, another program).

    A Python process is kailab's when its command line names the lab's folder ``home`` (the GPU ledger's
    ``--kubeconfig``, the shard supervisor's ``--home``); without ``home``, any that runs kailab. (The run's own
    process and its children are kailab's too: :class:`CpuSplit`.) Another developer's ``mypy kailab`` or unit
    tests on the same machine are not the lab's, and were counted as kailab's before the folder was asked for."""
    for start, group in GROUPS.items():
        if name.startswith(start):
            return group
    if home is not None:
        return "kailab" if any(home in part for part in cmdline) else None
    if any("kailab" in part or "bench/" in part for part in cmdline[:3]):
        return "kailab"
    return None


class CpuSplit:
    """CPU seconds per process and group while the ``with`` block ran (every process of the machine sampled).

    ``home``: the lab's folder, so that only its own kailab processes count (see :func:`group_of`)."""

    INTERVAL = 0.5

    def __init__(self, home: str | None = None):
        self.home = home
        self.first: dict[tuple[int, float], float] = {}
        self.last: dict[tuple[int, float], float] = {}
        self.names: dict[tuple[int, float], tuple[str, str | None]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.own = os.getpid()
        self.sampling = 0.0

    def __enter__(self) -> CpuSplit:
        self._sample(started=False)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(started=True)

    def _run(self) -> None:
        start = time.thread_time()
        while not self._stop.wait(self.INTERVAL):
            self._sample(started=True)
        self.sampling = time.thread_time() - start  # this thread's own CPU: the meter's, not kailab's

    def _sample(self, started: bool) -> None:
        for p in psutil.process_iter(["name", "cmdline", "cpu_times", "create_time"]):
            info = p.info
            if info["cpu_times"] is None:
                continue
            key = (p.pid, info["create_time"])
            used = info["cpu_times"].user + info["cpu_times"].system
            if key not in self.names:
                cmdline = info["cmdline"] or []
                name = os.path.basename(cmdline[0]) if cmdline else (info["name"] or "")
                group = group_of(name, cmdline, self.home)  # KAI's schedulers are the supervisor's children
                if group is None and self._ours(p):
                    group = "kailab"
                if name.startswith("kai-scheduler"):
                    partition = next((a.split("=", 1)[1] for a in cmdline if a.startswith("--partition-label-")), "")
                    name += " (partitions)" if partition else " (the lab's)"
                elif group == "kailab":
                    name = " ".join(os.path.basename(a) for a in cmdline[1:3]) or name
                self.names[key] = (name, group)
                self.first[key] = used if not started else 0.0  # begun during the run: all its CPU counts
            self.last[key] = used

    def _ours(self, p: psutil.Process) -> bool:
        """The run's own process or one it started (the supervisor of a side-by-side run, a lesson's helpers)."""
        try:
            return p.pid == self.own or any(parent.pid == self.own for parent in p.parents())
        except psutil.Error:
            return False

    def by_process(self) -> dict[tuple[str, str], float]:
        """(group, process name) → CPU seconds used during the run, the lab's processes only."""
        out: dict[tuple[str, str], float] = {}
        for key, (name, group) in self.names.items():
            if group is not None:
                meter = self.sampling if key[0] == self.own else 0.0  # sampling every process is not the lab's work
                out[(group, name)] = out.get((group, name), 0.0) + self.last[key] - self.first[key] - meter
        return out

    def by_group(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for (group, _), seconds in self.by_process().items():
            out[group] = out.get(group, 0.0) + seconds
        return out

    def report(self, wall: float) -> str:
        """Lines to print: each group's CPU seconds and top processes, and the wall time the others alone need."""
        cores = psutil.cpu_count() or 1
        groups = self.by_group()
        procs = self.by_process()
        lines = [f"CPU seconds used during the run ({wall:.0f} s of wall time on {cores} cores):"]
        for group in ("Kubernetes", "KAI", "kailab"):
            top = sorted(((s, n) for (g, n), s in procs.items() if g == group), reverse=True)[:5]
            lines.append(
                f"  {group:<10} {groups.get(group, 0):6.1f}  ({', '.join(f'{n} {s:.1f}' for s, n in top) or 'none'})"
            )
        lab = sum(groups.get(g, 0) for g in ("Kubernetes", "KAI", "kailab"))
        lines.append(
            f"  kailab's share: {100 * groups.get('kailab', 0) / max(lab, 1e-9):.1f}% of the lab's CPU "
            f"(the sampling's own {self.sampling:.1f} s left out)"
        )
        floor = (groups.get("Kubernetes", 0) + groups.get("KAI", 0)) / cores
        lines.append(
            f"  Kubernetes and KAI alone need at least {floor:.0f} s of wall time here "
            f"(their CPU seconds / {cores} cores), with every core busy and kailab using none."
        )
        return "\n".join(lines)
