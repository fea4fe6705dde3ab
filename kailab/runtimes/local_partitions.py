"""The local runtime's partitions: each shard a scheduler process, as many as this machine's memory holds.

kailab's supervisor (``shard_supervisor.py``) runs each SchedulingShard as a ``kai-scheduler`` process."""

from __future__ import annotations

import fcntl
import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from kailab import versions
from kailab.errors import KailabError, RosterError
from kailab.kube import Kube
from kailab.labels import KAI_SCHEDULER_PROCESS, SHARD_SUPERVISOR
from kailab.outfile import open_own_log
from kailab.runtimes.local_controls import LocalSchedulerControl
from kailab.runtimes.local_kai import FIXED_PORTS, python_process, wait_healthy
from kailab.runtimes.processes import ProcessSpec
from kailab.shards import ShardSchedulerControl, scheduler_name, shard_name

if TYPE_CHECKING:
    from kailab.runtimes.local import LocalRuntime

# The memory a partition adds to a running lab: its scheduler process, five KWOK nodes and its lesson's objects
# in the API server and KAI's caches. bench/class.py measured the lab (every process it started, RSS, at its peak)
# at 0.90 GiB without a class and 1.55 / 2.05 / 2.94 / 3.96 GiB with 1 / 4 / 8 / 16 learners running quota, gang
# and reclaim at once: 0.55 GiB + 0.16 GiB a learner on top of the lab, which runs already. kailab asks 0.2 GiB a
# learner.
GIB = 2**30
MEMORY_PER_PARTITION = int(0.2 * GIB)
MEMORY_RESERVE = int(0.5 * GIB)  # left to the machine and the lab's own lessons


def partitions_that_fit(available: int) -> int:
    """How many more partitions this much available memory (bytes) holds, the reserve kept free."""
    return max(0, (available - MEMORY_RESERVE) // MEMORY_PER_PARTITION)


def memory_shortfall(adding: int, available: int) -> str:
    """ "" when ``adding`` partitions fit in ``available`` bytes; else the figures, in words."""
    if adding <= partitions_that_fit(available):
        return ""
    need = adding * MEMORY_PER_PARTITION + MEMORY_RESERVE
    return (
        f"{adding} learner{'s' if adding != 1 else ''} need about {need / GIB:.1f} GiB of memory "
        f"({MEMORY_PER_PARTITION / GIB:.2f} GiB each, measured by bench/class.py, and "
        f"{MEMORY_RESERVE / GIB:.1f} GiB kept free); this machine has {available / GIB:.1f} GiB available, "
        f"enough for {partitions_that_fit(available)}"
    )


# The CPU a class needs, from bench/class.py on the local runtime: the costliest learner-lesson for its length
# (fairshare: 11.6 CPU seconds of the whole lab and kailab's client in 6.4 s, one learner alone; it restarts their
# scheduler twice), and how a learner-lesson's CPU grows with the class (measured at 1, 4, 8, 16 learners: 12.1,
# 10.2, 12.9, 12.3 CPU s; a line in the class size, fitted).
LESSON_CPU_SECONDS = 11.6
LESSON_SECONDS = 6.4
CPU_GROWTH = (0.94, 0.006)  # a learner-lesson's CPU at N learners, over one learner's alone: a + b·N


def cores_needed(learners: int) -> float:
    """Cores for every learner's lesson to take at most twice one learner's time (bench/class.py's sizing)."""
    a, b = CPU_GROWTH
    return learners * LESSON_CPU_SECONDS * (a + b * learners) / (2 * LESSON_SECONDS)


def cores_shortfall(learners: int, cores: int) -> str:
    """ "" when ``cores`` hold ``learners`` at that speed; else the figures, in words (a warning: the lessons still
    give their verdicts, later)."""
    need = cores_needed(learners)
    if need <= cores:
        return ""
    a, b = CPU_GROWTH
    slower = learners * LESSON_CPU_SECONDS * (a + b * learners) / (cores * LESSON_SECONDS)
    return (
        f"{learners} learner{'s' if learners != 1 else ''} need about {math.ceil(need)} cores for a lesson to take at "
        f"most twice one learner's time (bench/class.py: the costliest lesson for its length, {LESSON_CPU_SECONDS:.1f} "
        f"CPU s in {LESSON_SECONDS:.1f} s for one learner alone); this machine has {cores}, so such a lesson run by "
        f"everyone at once takes about {max(slower, 2):.0f}× one learner's time"
    )


def supervisor_spec(home: Path) -> ProcessSpec:
    """The supervisor (``shard_supervisor.py``) as a process of the lab in ``home`` (its kubeconfig and KAI folder)."""
    return python_process(SHARD_SUPERVISOR, "kailab.runtimes.shard_supervisor", [f"--home={home}"])


class LocalPartitions:
    """Partitions on the local runtime: their schedulers are processes of the lab (its KAI folder, which ``kailab
    down`` removes), started by the supervisor."""

    def __init__(self, runtime: LocalRuntime):
        self.rt = runtime
        self.home: Path = runtime.home
        self.folder: Path = runtime.home / "kai"

    def _runs_kai(self) -> bool:
        state = self.rt._state()
        return state is not None and KAI_SCHEDULER_PROCESS in state.kai_components

    def side_by_side(self, available: int | None = None) -> tuple[int, str]:
        if not self._runs_kai():
            return 0, "this lab runs without KAI's scheduler"
        fit = partitions_that_fit(psutil.virtual_memory().available if available is None else available)
        if fit < 2:
            return fit, f"this machine has memory for {fit} lesson partition{'s' if fit != 1 else ''} now"
        return fit, ""

    def check(self, kube: Kube, adding: int, available: int | None) -> None:
        if available is None:
            available = psutil.virtual_memory().available
        if short := memory_shortfall(adding, available):
            fit = partitions_that_fit(available)
            raise RosterError(
                f"This machine cannot hold the class: {short}. Nothing was applied.",
                hint=(
                    f"Add at most {fit} learner{'s' if fit != 1 else ''} now"
                    if fit
                    else "Free memory first (stop other programs or labs)"
                )
                + ", or hold the class on a machine with more memory.",
            )
        if not self._runs_kai():
            raise KailabError(
                "A class needs the local lab with KAI's scheduler; this lab runs without KAI.",
                hint="kailab down && kailab up, then kailab class up",
            )

    def ready(self, kube: Kube) -> None:
        """The supervisor running: started once per lab (by pid and start time like KAI's processes), under a file
        lock, since partitions are made in several threads (demo all) or by two kailab commands at once."""
        group = self.rt.kai_processes
        group.pids.mkdir(parents=True, exist_ok=True)
        with open_own_log(group.pids / f"{SHARD_SUPERVISOR}.lock") as lock:  # a FIFO there: refused, not waited on
            fcntl.flock(lock, fcntl.LOCK_EX)
            if group.identity(SHARD_SUPERVISOR) is None:
                spec = supervisor_spec(self.rt.home)
                group.start(spec)
                wait_healthy([spec], group, timeout=30)

    def usage_db_url(self) -> str | None:
        """None: the supervisor gives its schedulers the lab's own usage database; a learner's shard names none."""
        return None

    def cores_short(self, partitions: int) -> str:
        return cores_shortfall(partitions, psutil.cpu_count() or 1)

    def open_beyond_loopback(self) -> list[tuple[str, str, int]]:
        """Every socket the lab's processes listen on beyond loopback, read from the processes themselves (a KAI
        component that cannot be kept on loopback says why: kailab/runtimes/local_kai.py FIXED_PORTS)."""
        why = {
            name: f"{name} (KAI {versions.KAI_VERSION} ignores its --metrics-bind-address: its controller's own "
            f"metrics, no learner's; a firewall rule for port {port} closes it)"
            for name, port in FIXED_PORTS.items()
        }
        return [(why.get(name, name), at, port) for name, at, port in self.rt.listening_beyond_loopback()]

    def control(self, kube: Kube, partition: str) -> ShardSchedulerControl:
        """Through the shard; settings with usage params start the lab's Prometheus (the supervisor's schedulers),
        which runs each shard as a process, not a Deployment."""
        return ShardSchedulerControl(kube, partition, runs_usage_db=True, deployed=False)

    def stopped(self, kube: Kube, partition: str) -> None:
        """Its process stopped now (the supervisor would, a moment later), and its folder removed."""
        LocalSchedulerControl(self.rt, name=scheduler_name(partition)).stop()
        shutil.rmtree(self.folder / "partitions" / shard_name(partition), ignore_errors=True)
