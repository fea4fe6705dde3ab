"""Benchmark the exercises: time from apply to each verdict, per exercise, and `demo all`.

    python bench/exercises.py [--parallel N]   # needs a running lab with KAI (kailab up)

``--parallel N`` is passed to ``kailab demo all``: N lessons at once, each in a partition of its own (the
default on the local runtime); ``--parallel 1`` one after another, as on kind or an existing cluster.

Targets (issue "Fast at lesson size and at fleet size"): the reclaim lesson's verdict within 3 s of its step;
`demo all` (17 lessons) within 1 minute (issue "One lab for a whole class": side by side). Each verdict within
10 s of its step, but those of the lessons that wait out a window on purpose (WAITING). Each policy lesson's own
verdict, the time-based fair-share lesson's and the topology lesson's, within 3 minutes (issue 26).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

WAITING = ("protection", "preempt-delay", "staleness")  # a 15 s protection, a 20 s delay, a 20 s grace period


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=None, help="lessons at once (kailab demo all --parallel)")
    args = parser.parse_args()
    extra = [] if args.parallel is None else ["--parallel", str(args.parallel)]
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kailab", "demo", "all", "--json", *extra], capture_output=True, text=True
    )
    total = time.monotonic() - start
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit(f"kailab demo all failed:\n{proc.stderr}")
    slowest = 0.0
    reclaim = None
    topology = None
    for v in result["verdicts"]:
        if v["scenario"] == "topology":
            topology = v["seconds"]
        print(f"{v['scenario']:<10} {'PASS' if v['passed'] else 'FAIL'}  {v['seconds']:6.1f} s in all")
        for label, seconds in v["timings"].items():
            if v["scenario"] not in WAITING:
                slowest = max(slowest, seconds)
            if v["scenario"] == "reclaim" and "quota of 8 back" in label:
                reclaim = seconds
            print(f"    {seconds:5.1f} s  {label[:100]}")
    print(f"slowest verdict after its step ({', '.join(WAITING)} aside): {slowest:.1f} s (target ≤ 10 s)")
    policies = [
        v for v in result["verdicts"] if v["scenario"] in ("preempt-delay", "elastic", "staleness", "time-fairshare")
    ]
    for v in policies:
        print(f"{v['scenario']} verdict: {v['seconds']:.1f} s (target ≤ 180 s)")
    print(f"reclaim of 8 GPUs: {reclaim:.1f} s (target ≤ 3 s)" if reclaim is not None else "reclaim: no verdict")
    print(f"topology lesson: {topology:.1f} s (target ≤ 180 s)" if topology is not None else "topology: no verdict")
    how = proc.stderr.splitlines()[0] if proc.stderr.strip() else ""
    print(
        f"demo all{' --parallel ' + str(args.parallel) if extra else ''}: {total:.0f} s (target ≤ 60 s), "
        f"{'all passed' if result['passed'] else 'SOME FAILED'}{' — ' + how if how else ''}"
    )


if __name__ == "__main__":
    main()
