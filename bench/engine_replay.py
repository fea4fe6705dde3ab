"""The scenario engine's own CPU per change: every golden stream replayed through the engine, no lab needed.

    python bench/engine_replay.py            # 5 repeats
    python bench/engine_replay.py 3 --profile  # 3 repeats, then a cProfile top list of one pass

Each stream (``tests/golden/NAME/changes.jsonl``) is read once; a pass plays every one through the same
:class:`~kailab.scenarios.engine.Engine` as ``kailab.scenarios.replay.replay`` (a virtual clock), and checks its
verdict is still the golden one. Prints the CPU seconds of each pass (reading the streams left out), the best and
the median, and the microseconds per change; a live ``demo all`` folds about as many changes as the streams hold.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

from kailab.lesson import scenario_file
from kailab.progress import Progress
from kailab.scenarios.engine import CHANGES_FILE, Engine
from kailab.scenarios.fold import Change
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.model import Scenario
from kailab.scenarios.replay import ReplayCluster, golden, read_changes

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden"


def streams() -> list[tuple[str, Scenario, list[Change], dict]]:
    """Every golden stream: (name, its scenario, its changes, the verdict on file)."""
    out = []
    for d in sorted(p for p in GOLDEN.iterdir() if (p / CHANGES_FILE).exists()):
        want = json.loads((d / "verdict.json").read_text())
        out.append((d.name, load_scenario(scenario_file(d.name)), read_changes(d / CHANGES_FILE), want))
    return out


def one_pass(all_streams) -> float:
    """CPU seconds to replay every stream once; raises if a verdict is not the golden one."""
    took = 0.0
    for name, scenario, changes, want in all_streams:
        start = time.process_time()
        verdict = Engine(ReplayCluster(changes), Progress(quiet=True)).run(scenario)
        took += time.process_time() - start
        if golden(verdict) != want:
            raise SystemExit(f"{name}: the replay's verdict is not the golden one")
    return took


def main(repeats: int, profile: bool) -> None:
    start = time.process_time()
    all_streams = streams()
    changes = sum(len(c) for _, _, c, _ in all_streams)
    print(f"{len(all_streams)} streams, {changes} changes; read in {time.process_time() - start:.2f} s CPU")
    one_pass(all_streams)  # warm: imports, caches
    passes = []
    for i in range(repeats):
        passes.append(one_pass(all_streams))
        print(f"pass {i + 1}: {passes[-1]:.3f} s CPU")
    best, median = min(passes), statistics.median(passes)
    print(f"best {best:.3f} s, median {median:.3f} s CPU: {median / changes * 1e6:.0f} µs per change")
    if profile:
        prof = cProfile.Profile()
        prof.runcall(one_pass, all_streams)
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(30)
        print(out.getvalue())


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--profile"]
    main(int(args[0]) if args else 5, "--profile" in sys.argv[1:])
