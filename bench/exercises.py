"""Benchmark the exercises: time from apply to each verdict, per exercise, and `demo all`.

    python bench/exercises.py       # needs a running lab with KAI (kailab up)

Targets (issue "Fast at lesson size and at fleet size"): the reclaim lesson's verdict within 3 s of its step;
`demo all` (12 lessons) within 1 minute. Each verdict within 10 s of its step, but the protection lesson's,
which waits out a 15 s window on purpose.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def main() -> None:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kailab", "demo", "all", "--json"], capture_output=True, text=True)
    total = time.monotonic() - start
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit(f"kailab demo all failed:\n{proc.stderr}")
    slowest = 0.0
    reclaim = None
    for v in result["verdicts"]:
        print(f"{v['scenario']:<10} {'PASS' if v['passed'] else 'FAIL'}  {v['seconds']:6.1f} s in all")
        for label, seconds in v["timings"].items():
            if v["scenario"] != "protection":
                slowest = max(slowest, seconds)
            if v["scenario"] == "reclaim" and "quota of 8 back" in label:
                reclaim = seconds
            print(f"    {seconds:5.1f} s  {label[:100]}")
    print(f"slowest verdict after its step (protection aside): {slowest:.1f} s (target ≤ 10 s)")
    print(f"reclaim of 8 GPUs: {reclaim:.1f} s (target ≤ 3 s)" if reclaim is not None else "reclaim: no verdict")
    print(f"demo all: {total:.0f} s (target ≤ 60 s), {'all passed' if result['passed'] else 'SOME FAILED'}")


if __name__ == "__main__":
    main()
