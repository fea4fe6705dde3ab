"""Benchmark a class on one local lab: 1, 4 and 8 learners, each running lessons in their own partition at once.

    python bench/class.py [--learners 1,4,8] [--lessons quota,gang]   # needs a running local lab with KAI (kailab up)

For each class size: how long ``class up`` took, the wall time of every learner running the lessons at the same
time (against one learner alone), the lab's memory (every process it started, RSS) and each learner scheduler's
CPU seconds and memory. Targets (issue "One lab for a whole class"): 8 learners' run ≤ 2× one learner's; the
lab's memory ≤ 8 GiB at 8 learners. Then who used the CPU (bench/cpu_split.py): the wall time Kubernetes and
KAI alone need on this machine's cores.
"""

from __future__ import annotations

import argparse
import threading
import time

import psutil
from cpu_split import CpuSplit

from kailab import shards
from kailab.classroom import roster
from kailab.classroom.klass import Class
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.lab import Lab, OwnLab
from kailab.labels import SHARD_SUPERVISOR
from kailab.progress import Progress


def scheduler_usage(lab: OwnLab, learner: str) -> tuple[float, float]:
    """(CPU seconds, RSS MiB) of the learner's scheduler process (what the supervisor runs for their shard)."""
    return process_usage(lab, shards.scheduler_name(learner))


def process_usage(lab: OwnLab, name: str) -> tuple[float, float]:
    """(CPU seconds, RSS MiB) of one of the lab's processes; zeros when it does not run."""
    ident = lab.runtime.kai_processes.identity(name)  # type: ignore[union-attr]  (main: the local runtime's)
    if ident is None:
        return 0.0, 0.0
    proc = psutil.Process(ident.pid)
    cpu = proc.cpu_times()
    return cpu.user + cpu.system, proc.memory_info().rss / 2**20


def one_size(lab: OwnLab, klass: Class, count: int, lessons: list[str]) -> None:
    kube = lab.kube
    names = roster.from_count(count)
    start = time.monotonic()
    klass.up(kube, names, load_fleet(), Progress(quiet=True))
    up_seconds = time.monotonic() - start
    before = {n: scheduler_usage(lab, n)[0] for n in names.names}
    results: dict[str, bool] = {}

    def play(learner: str) -> None:
        verdicts = klass.run(Kube(lab.kubeconfig()), learner, lessons, Progress(quiet=True))
        results[learner] = all(v.ok for v in verdicts)

    start = time.monotonic()
    threads = [threading.Thread(target=play, args=(n,)) for n in names.names]
    with CpuSplit() as split:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    wall = time.monotonic() - start
    memory = (lab.capabilities.memory or (lambda: 0.0))() or 0.0
    usage = {n: scheduler_usage(lab, n) for n in names.names}
    cpu = [usage[n][0] - before[n] for n in names.names]
    rss = [usage[n][1] for n in names.names]
    sup_cpu, sup_rss = process_usage(lab, SHARD_SUPERVISOR)
    passed = sum(results.values())
    print(
        f"{count:>2} learners: class up {up_seconds:5.1f} s; {','.join(lessons)} side by side {wall:5.1f} s "
        f"({passed}/{count} all passed); lab memory {memory / 1024:4.2f} GiB; per scheduler "
        f"CPU {sum(cpu) / count:4.1f} s (max {max(cpu):.1f}), RSS {sum(rss) / count:4.0f} MiB; shard supervisor "
        f"CPU {sup_cpu:4.1f} s in all, RSS {sup_rss:3.0f} MiB"
    )
    print(split.report(wall))
    klass.down(kube, None, Progress(quiet=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", default="1,4,8")
    parser.add_argument("--lessons", default="quota,gang")
    args = parser.parse_args()
    lab = Lab.open()
    klass = lab.klass()
    if not isinstance(lab, OwnLab) or lab.runtime is None or lab.runtime.traits.name != "local":
        raise SystemExit("bench/class.py measures the local runtime's processes: kailab up --runtime local first.")
    if klass.learners():
        raise SystemExit(f"This lab already has a class ({', '.join(klass.learners())}); run kailab class down first.")
    for count in (int(n) for n in args.learners.split(",")):
        one_size(lab, klass, count, args.lessons.split(","))


if __name__ == "__main__":
    main()
