"""How long checking a scenario file takes as it grows: the checks across the whole file must stay linear.

    python bench/scenario_load.py          # workloads (each applied and expected) → seconds to load

Prints one line per size; the time per workload should stay about the same as the file grows.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from kailab.scenarios.loader import load_scenario


def scenario(n: int) -> str:
    queues = "".join(f"  - {{name: q{i}, parent: d}}\n" for i in range(n // 10))
    workloads = "".join(
        f"  - {{name: w{i}, queue: q{i % max(1, n // 10)}, labels: {{team: t{i}}}}}\n" for i in range(n)
    )
    steps = "".join(f"  - apply: w{i}\n" for i in range(n)) + "".join(
        f"  - expect: {{workload: w{i}, running: 1, bound: '>=1'}}\n" for i in range(n)
    )
    return f"name: bench\nqueues:\n  - {{name: d}}\n{queues}workloads:\n{workloads}steps:\n{steps}"


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            path = Path(folder) / f"s{n}.yaml"
            path.write_text(scenario(n))
            start = time.perf_counter()
            s = load_scenario(path)
            took = time.perf_counter() - start
            assert len(s.workloads) == n
            print(f"{n:>6} workloads  {took:7.2f} s  {took / n * 1e6:7.0f} µs per workload")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [500, 1000, 2000, 4000])
