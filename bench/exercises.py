"""Benchmark the exercises: time from apply to each verdict, per exercise, and `demo all`.

    python bench/exercises.py       # needs a running lab with KAI (kailab up)

Targets: each verdict within 10 s of its step (the protection lesson waits out a 30 s window on purpose);
`demo all` (12 lessons) within 3 minutes.
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
    for v in result["verdicts"]:
        print(f"{v['scenario']:<10} {'PASS' if v['passed'] else 'FAIL'}  {v['seconds']:6.1f} s in all")
        for label, seconds in v["timings"].items():
            slowest = max(slowest, seconds)
            print(f"    {seconds:5.1f} s  {label[:100]}")
    print(f"slowest verdict after its step: {slowest:.1f} s (target ≤ 10 s)")
    print(f"demo all: {total:.0f} s (target ≤ 180 s), {'all passed' if result['passed'] else 'SOME FAILED'}")


if __name__ == "__main__":
    main()
