"""Benchmark time-based fair share on an offline kind lab: the Prometheus image, the lesson, the Prometheus' memory.

    python bench/kind_usage_db.py     # needs a Docker engine and the offline kit (bench/kind_offline.py builds it)

Prints: the time to make the Prometheus image archive from the cached binary (into a temporary folder, so the
cache's is not touched), `up`, `demo time-fairshare` (its verdict must be PASS), the Prometheus pod's memory
(the process' RSS in the node, sampled every 2 s while the lesson runs) and `down`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet import kailab  # noqa: E402  (bench/fleet.py: runs a kailab command, exits when it fails)

from kailab import build, versions  # noqa: E402
from kailab.progress import Progress  # noqa: E402
from kailab.runtimes import kind_offline, usage_db  # noqa: E402
from kailab.runtimes.kind_plan import CLUSTER  # noqa: E402


def prometheus_rss_mib() -> float | None:
    """The Prometheus process' RSS in the kind node (MiB), or None while none runs."""
    out = subprocess.run(
        ["docker", "exec", f"{CLUSTER}-control-plane", "ps", "-C", "prometheus", "-o", "rss="],
        capture_output=True,
        text=True,
    ).stdout.split()
    return sum(int(kib) for kib in out) / 1024 if out else None


def main() -> None:
    binary = build.ensure_built([versions.PROMETHEUS_BUILD], Progress(), lock=usage_db.BUILD_LOCK)["prometheus"]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        kind_offline.write_image(kind_offline.prometheus_recipe(binary), Path(tmp) / "prometheus.tar", Path(tmp))
        image = time.monotonic() - start
        size = (Path(tmp) / "prometheus.tar").stat().st_size / 2**20
    env = {**os.environ, "KAILAB_HOME": tempfile.mkdtemp(prefix="kailab-bench-kind-usage-")}
    up = kailab("up", "--runtime", "kind", "--offline", env=env)
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(2):
            if (rss := prometheus_rss_mib()) is not None:
                samples.append(rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        start = time.monotonic()
        demo = subprocess.run(
            [sys.executable, "-m", "kailab", "demo", "time-fairshare", "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        lesson = time.monotonic() - start
    finally:
        stop.set()
        sampler.join()
        down = kailab("down", env=env)
    verdict = json.loads(demo.stdout)["verdicts"][0] if demo.stdout.startswith("{") else {"outcome": demo.stderr[-500:]}
    print(f"prometheus image    {image:7.1f} s ({size:.0f} MiB archive, from the cached binary)")
    print(f"up (from the cache) {up:7.1f} s")
    print(f"time-fairshare      {lesson:7.1f} s (verdict {verdict['outcome']}, {verdict.get('seconds', '?')} s of it)")
    if samples:
        print(f"prometheus RSS      {min(samples):7.0f}–{max(samples):.0f} MiB while the lesson runs")
    print(f"down                {down:7.1f} s")
    if verdict["outcome"] != "PASS":
        sys.exit(1)


if __name__ == "__main__":
    main()
