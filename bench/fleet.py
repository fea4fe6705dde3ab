"""Benchmark the local fleet: cold build, warm `up`, `down`, and the running fleet's peak memory.

    python bench/fleet.py           # warm figures; cold build times as recorded by the last cold build
    python bench/fleet.py --cold    # also rebuild every binary in a fresh cache (several minutes)

Targets (issue "Local fleet"): warm up ≤ 15 s to a fleet that schedules; fleet memory ≤ 2 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kailab.paths import cache_home  # noqa: E402
from kailab.runtimes.local import LocalRuntime  # noqa: E402


def kailab(*args: str, env: dict) -> float:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kailab", *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"kailab {' '.join(args)} failed:\n{proc.stderr}")
    return time.monotonic() - start


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cold", action="store_true", help="rebuild every binary in a fresh cache first")
    ap.add_argument("--no-kai", action="store_true", help="the fleet without KAI")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="kailab-bench-"))
    env = {**os.environ, "KAILAB_HOME": str(home / "lab")}
    cache = cache_home()
    if args.cold:
        cache = home / "cache"
        env["KAILAB_CACHE"] = str(cache)
    extra = ["--no-kai"] if args.no_kai else []
    first = kailab("up", "--runtime", "local", *extra, env=env)
    kailab("down", env=env)
    warm = kailab("up", "--runtime", "local", *extra, env=env)
    lab = LocalRuntime(home=home / "lab")
    peak = rss_mib([i.pid for i in lab.processes()])
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss_mib([i.pid for i in lab.processes()]))
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    demo = "all" if not args.no_kai else "baseline"
    demo_s = kailab("demo", demo, "--quiet", env=env)
    stop.set()
    sampler.join()
    down = kailab("down", env=env)
    times = json.loads((cache / "build-times.json").read_text()) if (cache / "build-times.json").exists() else {}
    print(f"cold build (per pinned module, seconds): {json.dumps(times)}")
    print(f"cold build total: {sum(times.values()):.0f} s" if times else "cold build: not recorded (run with --cold)")
    print(f"first up (this run{', cold' if args.cold else ', cache warm'}): {first:.1f} s")
    print(f"warm up: {warm:.1f} s (target ≤ 15 s)")
    print(f"down: {down:.1f} s")
    print(
        f"fleet peak memory (RSS of every lab process, during `demo {demo}` took {demo_s:.0f} s): "
        f"{peak:.0f} MiB (target ≤ 2048 MiB)"
    )


if __name__ == "__main__":
    main()
