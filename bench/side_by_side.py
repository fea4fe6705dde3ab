"""Benchmark ``kailab demo all`` side by side, phase by phase: where each lesson's time goes.

    python bench/side_by_side.py [--parallel N] [--lessons quota,gang]   # needs a running local lab with KAI

Runs the lessons as ``kailab demo all`` does (kailab.parallel, in this process) and prints, per lesson,
when it started, how long its partition took to make (nodes Ready, its scheduler cycling), the lesson itself and
the partition's removal (before its worker starts the next lesson); then the total, the machine's load and
how idle its cores were during the run (near 0 %: the run waited on CPU), and who used the CPU (bench/cpu_split.py:
Kubernetes, KAI or kailab; the wall time the first two alone need on these cores). Target (issue "One lab for a whole
class"): every lesson within 1 minute, same verdicts. ``python bench/exercises.py`` times the command itself.
"""

from __future__ import annotations

import argparse
import time

from cpu_split import CpuSplit


def cpu_times() -> tuple[int, int]:
    """(all, idle) jiffies of the machine's cores so far (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    from kailab.fleet import load_fleet
    from kailab.kube import Kube
    from kailab.lab import Lab
    from kailab.lesson import lesson_names
    from kailab.parallel import DEFAULT_PARALLEL, SideBySide
    from kailab.progress import Progress

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=DEFAULT_PARALLEL, help="lessons at once")
    parser.add_argument("--lessons", default="", help="comma-separated (default: every lesson)")
    args = parser.parse_args()
    names = args.lessons.split(",") if args.lessons else lesson_names()
    lab = Lab.open()
    host = lab.capabilities.partitions
    if host is None:
        raise SystemExit("No lab is running: kailab up first.")
    kubeconfig = lab.kubeconfig()
    run = SideBySide(host, load_fleet(), lambda: Kube(kubeconfig), Progress(quiet=True), args.parallel, lab.cluster)
    print(f"load before: {load()}")
    before, start = cpu_times(), time.monotonic()
    with CpuSplit(str(lab.home)) as split:
        verdicts = run.run(names)
    total = time.monotonic() - start
    after = cpu_times()
    print(f"{'lesson':<14} {'verdict':<7} {'start':>6} {'partition':>9} {'lesson':>7} {'removal':>7} {'end':>6}")
    for v in sorted(verdicts, key=lambda v: run.phases[v.scenario]["at"]):
        p = run.phases[v.scenario]
        end = p["at"] + p.get("partition", 0) + p["lesson"]
        print(
            f"{v.scenario:<14} {v.outcome:<7} {p['at']:6.1f} {p.get('partition', 0):9.1f} {p['lesson']:7.1f} "
            f"{p.get('removal', 0):7.1f} {end:6.1f}"
        )
    idle = 100 * (after[1] - before[1]) / max(1, after[0] - before[0])
    passed = sum(v.ok for v in verdicts)
    print(
        f"demo all side by side ({args.parallel} at once): {total:.0f} s (target ≤ 60 s), {passed}/{len(verdicts)} "
        f"passed; cores idle {idle:.0f}% of the run; load after: {load()}"
    )
    print(split.report(total))


if __name__ == "__main__":
    main()
