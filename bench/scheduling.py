"""Benchmark scheduling speed: KAI beside kube-scheduler at lesson size and at fleet size, with the machine it ran on.

    python bench/scheduling.py              # lesson size: 4 nodes × 8 GPUs, one Job of 32 one-GPU pods (3 runs)
    python bench/scheduling.py --fleet      # also 1,000 nodes × 8 GPUs, one Job of 8,000 pods (about 15 minutes)

Needs a running lab with KAI (kailab up). Each run is `kailab bench --json`: it adds a pool of bench nodes, submits
the Job for each scheduler, and times every stage as the watches saw it.
Targets (issue "Fast at lesson size and at fleet size"): KAI fills 32 GPUs in ≤ 2 s; at 8,000 pods KAI within 1.5×
of kube-scheduler and all bound in ≤ 3 minutes, the lab's processes within 4 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys


def bench(nodes: int, pods: int) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kailab",
            "bench",
            "--nodes",
            str(nodes),
            "--gpus-per-node",
            "8",
            "--pods",
            str(pods),
            "--scheduler",
            "both",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"kailab bench failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def show(result: dict) -> None:
    for r in result["runs"]:
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in r["watched"].items())
        memory = f", peak {r['peak_memory_mib']:,.0f} MiB" if r["peak_memory_mib"] is not None else ""
        print(f"  {r['scheduler']:<18} all bound {r['to_bound']:6.1f} s, {r['pods_per_second']:6.1f} pods/s{memory}")
        print(f"  {'':<18} last pod: {stages}")
    if result["kai_vs_default"] is not None:
        print(f"  KAI took {result['kai_vs_default']:.1f}× as long as kube-scheduler")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fleet", action="store_true", help="also 1,000 nodes × 8 GPUs and 8,000 pods")
    args = ap.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"
    )
    kai_fills = []
    for i in range(3):
        result = bench(4, 32)
        print(f"lesson size, run {i + 1}: 4 nodes × 8 GPUs, 32 pods")
        show(result)
        kai_fills += [r["to_bound"] for r in result["runs"] if r["scheduler"] == "kai-scheduler"]
    print(f"KAI fills 32 GPUs in {min(kai_fills):.1f}–{max(kai_fills):.1f} s (target ≤ 2 s)")
    if args.fleet:
        result = bench(1000, 8000)
        print("fleet size: 1,000 nodes × 8 GPUs, 8,000 pods")
        show(result)
        kai = next(r for r in result["runs"] if r["scheduler"] == "kai-scheduler")
        peak = max((r["peak_memory_mib"] or 0) for r in result["runs"])
        print(
            f"KAI all bound in {kai['to_bound']:.0f} s (target ≤ 180 s), "
            f"{result['kai_vs_default']:.1f}× kube-scheduler (target ≤ 1.5×), peak memory {peak:,.0f} MiB (target ≤ 4,096)"
        )


if __name__ == "__main__":
    main()
