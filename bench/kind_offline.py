"""Benchmark the offline kind lab: its builds, `up`, `demo all`, `down`, disk and the node's memory.

    python bench/kind_offline.py     # needs a Docker engine; the first run builds (see README, kind runtime)

Build times are the ones the builds recorded (~/.cache/kailab/build-times.json: the first build of each pin).
Target (issue 25): cold machine to a finished CI run, the rest of the suite included, within 90 minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet import kailab  # noqa: E402  (bench/fleet.py: runs a kailab command, exits when it fails)

from kailab import versions  # noqa: E402
from kailab.paths import cache_home  # noqa: E402
from kailab.runtimes import kind_offline  # noqa: E402
from kailab.runtimes.kind_plan import CLUSTER  # noqa: E402


def du_gib(*paths: Path) -> float:
    out = subprocess.run(["du", "-sb", *map(str, paths)], capture_output=True, text=True).stdout
    return sum(int(line.split()[0]) for line in out.splitlines()) / 2**30


def node_memory_mib() -> float:
    """The node container's memory now (docker stats), MiB."""
    out = (
        subprocess.run(
            ["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", f"{CLUSTER}-control-plane"],
            capture_output=True,
            text=True,
        )
        .stdout.split("/")[0]
        .strip()
    )
    number, unit = float(out.rstrip("GiMBk")), out.lstrip("0123456789.")
    return number * {"GiB": 1024, "MiB": 1, "kB": 1 / 1024}.get(unit, 1)


def main() -> None:
    env = {**os.environ, "KAILAB_HOME": tempfile.mkdtemp(prefix="kailab-bench-kind-")}
    up = kailab("up", "--runtime", "kind", "--offline", env=env)
    peak = [node_memory_mib()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(2):
            peak.append(node_memory_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        demo = kailab("demo", "all", "--json", env=env)
    finally:
        stop.set()
        sampler.join()
        docker_disk = du_gib(Path("/var/lib/docker")) if os.access("/var/lib/docker", os.R_OK) else float("nan")
        down = kailab("down", env=env)
    times = json.loads((cache_home() / "build-times.json").read_text())
    for b in versions.OFFLINE_BUILDS:
        print(f"build {b.name:<16} {times.get(b.key, float('nan')):7.1f} s (first build)")
    cache = [kind_offline.offline_home()] + [cache_home() / "bin" / b.key for b in versions.OFFLINE_BUILDS]
    print(f"offline cache       {du_gib(*cache):7.2f} GiB")
    print(f"docker while up     {docker_disk:7.2f} GiB (/var/lib/docker)")
    print(f"up (from the cache) {up:7.1f} s")
    print(f"demo all            {demo:7.1f} s")
    print(f"down                {down:7.1f} s")
    print(f"node memory, peak   {max(peak):7.0f} MiB")


if __name__ == "__main__":
    main()
