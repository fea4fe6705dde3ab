"""Benchmark a class on one local lab, and size a host for one: what a learner-lesson costs, and classes at once.

    python bench/class.py [--learners 1,4,8,16] [--lessons quota,gang,reclaim] [--each all] [--sizes 4,8,16,30]
    # needs a running local lab with KAI (kailab up), and no class on it

1. Each lesson of ``--each`` (default: every lesson a learner runs) alone, one learner: its wall time, the CPU
   seconds it cost — every process of the lab (control plane, KAI, the learner's scheduler, the shard supervisor)
   and kailab's client, which plays the lesson — and the lab's memory at its peak above the lab without a class.
2. For each class size of ``--learners``: ``class up``, every learner running ``--lessons`` (one after another) at
   the same time, each in their own partition: the wall time against one learner's, every verdict (those that
   are not PASS are named, with the checks that failed), the lab's peak memory and the whole machine's used
   memory, the CPU seconds a learner-lesson cost at that size, and who used the CPU (bench/cpu_split.py).
3. The sizing table: for classes of ``--sizes``, the cores for a lesson to take at most twice one learner's time —
   a learner-lesson's CPU seconds (step 1) × how that cost grows with the class (step 2, fitted as a line in the
   class size: each learner's scheduler watches every learner's pods) × learners, over twice one learner's time —
   and the memory (the lab without a class, plus the memory each learner adds, fitted the same way). Sizes beyond
   the largest measured are the fitted lines carried on, and said so. ``kailab class up`` warns with these figures
   (kailab/runtimes/local_partitions.py, ``cores_needed``).
"""

from __future__ import annotations

import argparse
import math
import threading
import time

from cpu_split import CpuSplit

from kailab import shards
from kailab.bench import PeakMemory
from kailab.classroom import roster
from kailab.classroom.klass import Class
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.lab import Lab, OwnLab
from kailab.lesson import lesson_names
from kailab.progress import Progress
from kailab.runtimes.local import LocalRuntime

GIB = 1024  # MiB


def lab_cpu(split: CpuSplit) -> float:
    """CPU seconds the lab and kailab used during the split's run (Kubernetes, KAI and kailab's client)."""
    return sum(split.by_group().values())


def each_lesson(rt: LocalRuntime, klass: Class, kube: Kube, lessons: list[str], base_mib: float) -> list[dict]:
    """One learner, each lesson alone in turn: wall seconds, CPU seconds, memory (MiB) above the lab without a
    class, verdict; printed as they come."""
    names = roster.from_count(1)
    klass.up(kube, names, load_fleet(), Progress(quiet=True))
    learner, rows = names.names[0], []
    try:
        for lesson in lessons:
            with PeakMemory(rt.memory_mib) as peak, CpuSplit(str(rt.home)) as split:
                start = time.monotonic()
                (verdict,) = klass.run(Kube(rt.kubeconfig()), learner, [lesson], Progress(quiet=True))
                wall = time.monotonic() - start
            row = {
                "lesson": lesson,
                "wall": wall,
                "cpu": lab_cpu(split),
                "memory": (peak.peak or base_mib) - base_mib,
                "outcome": verdict.to_dict()["outcome"],
            }
            rows.append(row)
            print(
                f"  {lesson:<15} alone: {wall:5.1f} s, {row['cpu']:5.1f} CPU s; the lab's peak {row['memory']:4.0f} MiB "
                f"above the lab without a class (the partition and what the lessons so far left grown), {row['outcome']}",
                flush=True,
            )
    finally:
        klass.down(kube, None, Progress(quiet=True))
    return rows


def one_size(rt: LocalRuntime, klass: Class, kube: Kube, count: int, lessons: list[str], base_mib: float) -> dict:
    names = roster.from_count(count)
    start = time.monotonic()
    klass.up(kube, names, load_fleet(), Progress(quiet=True))
    up_seconds = time.monotonic() - start
    verdicts: dict[str, list[dict]] = {}
    errors: dict[str, str] = {}

    def play(learner: str) -> None:
        try:
            got = klass.run(Kube(rt.kubeconfig()), learner, lessons, Progress(quiet=True))
            verdicts[learner] = [v.to_dict() for v in got]
        except Exception as e:  # noqa: BLE001 (said in the figures, with the learner)
            errors[learner] = f"{type(e).__name__}: {getattr(e, 'message', e)}"

    threads = [threading.Thread(target=play, args=(n,)) for n in names.names]
    host_before = host_used_mib()
    with PeakMemory(rt.memory_mib) as peak, PeakMemory(host_used_mib) as host, CpuSplit(str(rt.home)) as split:
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - start
    scheduler_rss = [shard_scheduler_rss(rt, n) for n in names.names]
    klass.down(kube, None, Progress(quiet=True))
    failed = [
        (learner, v["scenario"], v["outcome"], [c["title"] for c in v["checks"] if not c["passed"]] or [v.get("error")])
        for learner, vs in verdicts.items()
        for v in vs
        if v["outcome"] != "PASS"
    ]
    passed = sum(v["outcome"] == "PASS" for vs in verdicts.values() for v in vs)
    return {
        "count": count,
        "up": up_seconds,
        "wall": wall,
        "passed": passed,
        "runs": count * len(lessons),
        "failed": failed,
        "errors": errors,
        "memory": peak.peak or 0.0,
        "host": host.peak or 0.0,
        "host_before": host_before,
        "added": (peak.peak or base_mib) - base_mib,
        "cpu": lab_cpu(split),
        "cpu_each": lab_cpu(split) / (count * len(lessons)),
        "scheduler_rss": sum(scheduler_rss) / max(1, len(scheduler_rss)),
        "split": split.report(wall),
        "per_lesson": {
            lesson: sorted(vs[i]["seconds"] for vs in verdicts.values() if len(vs) > i)
            for i, lesson in enumerate(lessons)
        },
    }


def host_used_mib() -> float:
    """The whole machine's used memory (MiB, psutil's ``used``): the lab, kailab's client and everything else."""
    import psutil

    return psutil.virtual_memory().used / 2**20


def shard_scheduler_rss(rt: LocalRuntime, learner: str) -> float:
    import psutil

    ident = rt.kai_processes.identity(shards.scheduler_name(learner))
    try:
        return psutil.Process(ident.pid).memory_info().rss / 2**20 if ident else 0.0
    except psutil.Error:
        return 0.0


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares ``y = a + b·x`` (one point: b = 0)."""
    if len(points) == 1:
        return points[0][1], 0.0
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


def sizing(per_lesson: list[dict], sizes_run: list[dict], base_mib: float, targets: list[int]) -> list[str]:
    """The sizing table's lines (see the module's docstring, step 3)."""
    one = next((s for s in sizes_run if s["count"] == 1), None)
    growth = line_fit([(s["count"], s["cpu_each"] / one["cpu_each"]) for s in sizes_run]) if one else (1.0, 0.0)
    memory = line_fit([(s["count"], s["added"]) for s in sizes_run]) if sizes_run else (0.0, 0.0)
    biggest = max((s["count"] for s in sizes_run), default=1)
    lines = [
        f"Sizing: cores for every learner's lesson to take ≤ 2× one learner's time, and memory (the lab without a "
        f"class {base_mib / GIB:.2f} GiB + what the learners add). A learner-lesson's CPU grows with the class by "
        f"{growth[0]:.2f} + {growth[1]:.3f}·N (measured at {', '.join(str(s['count']) for s in sizes_run)}); the "
        f"learners add {memory[0] / GIB:.2f} + {memory[1] / GIB:.3f}·N GiB. Beyond {biggest} learners: the lines "
        "carried on.",
        "lesson (1 learner: wall, CPU) | " + " | ".join(f"{n} learners" for n in targets),
    ]
    worst = [0.0] * len(targets)
    for row in per_lesson:
        cells = []
        for i, n in enumerate(targets):
            cores = n * row["cpu"] * (growth[0] + growth[1] * n) / (2 * row["wall"])
            worst[i] = max(worst[i], cores)
            cells.append(f"{math.ceil(cores)} cores")
        lines.append(f"{row['lesson']} ({row['wall']:.0f} s, {row['cpu']:.0f} CPU s) | " + " | ".join(cells))
    mem = [(base_mib + memory[0] + memory[1] * n) / GIB for n in targets]
    lines.append(
        "the class (the costliest lesson) | "
        + " | ".join(
            f"{math.ceil(c)} cores, {m:.1f} GiB" + ("*" if n > biggest else "")
            for c, m, n in zip(worst, mem, targets, strict=True)
        )
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", default="1,4,8,16")
    parser.add_argument("--lessons", default="quota,gang,reclaim")
    parser.add_argument("--each", default="all", help="lessons measured alone (step 1); 'all' or a list; '' none")
    parser.add_argument("--sizes", default="4,8,16,30")
    args = parser.parse_args()
    lab = Lab.open()
    if not isinstance(lab, OwnLab) or not isinstance(lab.runtime, LocalRuntime):
        raise SystemExit("bench/class.py measures the local runtime's processes: kailab up --runtime local first.")
    rt, klass, kube = lab.runtime, lab.klass(), lab.kube
    if klass.learners():
        raise SystemExit(f"This lab already has a class ({', '.join(klass.learners())}); run kailab class down first.")
    base_mib = rt.memory_mib() or 0.0
    print(f"The lab without a class: {base_mib / GIB:.2f} GiB (every process it started, RSS).", flush=True)

    # time-fairshare: a minute of usage history in the lab's Prometheus, demo-only for a class
    each = [n for n in lesson_names() if n != "time-fairshare"] if args.each == "all" else args.each.split(",")
    per_lesson = each_lesson(rt, klass, kube, [n for n in each if n], base_mib)
    lessons = args.lessons.split(",")
    runs = []
    for count in (int(n) for n in args.learners.split(",")):
        got = one_size(rt, klass, kube, count, lessons, base_mib)
        runs.append(got)
        first = runs[0]["wall"] if runs[0]["count"] == 1 else None
        print(
            f"{count:>2} learners: class up {got['up']:5.1f} s; {','.join(lessons)} side by side {got['wall']:6.1f} s"
            + (f" ({got['wall'] / first:.1f}× one learner's)" if first else "")
            + f"; {got['passed']}/{got['runs']} verdicts PASS; lab memory {got['memory'] / GIB:4.2f} GiB at its peak "
            f"(+{got['added'] / GIB:.2f} for the class); the machine's used memory {got['host'] / GIB:4.2f} GiB at its "
            f"peak ({got['host_before'] / GIB:4.2f} before the lessons); {got['cpu']:.0f} CPU s in all, "
            f"{got['cpu_each']:.1f} CPU s a learner-lesson; each "
            f"learner's scheduler {got['scheduler_rss']:.0f} MiB",
            flush=True,
        )
        for learner, lesson, outcome, why in got["failed"]:
            print(f"    {learner} {lesson}: {outcome} — {'; '.join(map(str, why))[:300]}")
        for learner, error in got["errors"].items():
            print(f"    {learner}: {error[:300]}")
        for lesson, secs in got["per_lesson"].items():  # each learner's time to that lesson's verdict
            if secs:
                print(f"    {lesson:<15} median {secs[len(secs) // 2]:5.1f} s, slowest {secs[-1]:5.1f} s", flush=True)
        print(got["split"], flush=True)
    if per_lesson and runs:
        print("\n".join(sizing(per_lesson, runs, base_mib, [int(n) for n in args.sizes.split(",")])))


if __name__ == "__main__":
    main()
