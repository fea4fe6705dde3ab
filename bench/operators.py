"""Benchmark the workload operators on the local runtime: build, size, start and memory of each.

    python bench/operators.py     # builds what is missing first (minutes each, once); run under the fleet lock

Prints per operator: its cold build time (as recorded by its first build, ``build-times.json`` in the cache), its
binary's size, the time ``capabilities().operators.ensure`` takes on a lab where it is built but not yet started (CRDs, webhook
configurations, the process, until it serves), and its RSS idle and while it runs the fleet proof's object
(tests/fleet/test_operators_on_kai.py), sampled every second until KAI has bound that object's pods and for
10 s after. The lab is brought up in a fresh KAILAB_HOME and taken down at the end.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fleet")]

from test_operators_on_kai import EXPECTED, NAMESPACE, QUEUE, owned_pods  # noqa: E402

from kailab import build, operators  # noqa: E402
from kailab.fleet import load_fleet  # noqa: E402
from kailab.kube import Kube  # noqa: E402
from kailab.labels import MANAGED, QUEUE_API  # noqa: E402
from kailab.paths import cache_home  # noqa: E402
from kailab.progress import Progress  # noqa: E402
from kailab.runtimes.base import UpOptions  # noqa: E402
from kailab.runtimes.local import LocalRuntime  # noqa: E402


def sample_rss(control, name: str, done: threading.Event, samples: list[float]) -> None:
    """The operator's RSS (MiB) every second into ``samples``, until ``done``."""
    while not done.wait(1):
        samples.append(control.memory_mib(name) or 0.0)


def main() -> None:
    build.ensure_built([op.build for op in operators.OPERATORS.values()], Progress())
    times = json.loads((cache_home() / "build-times.json").read_text())
    home = Path(tempfile.mkdtemp(prefix="kailab-bench-operators-"))
    os.environ["KAILAB_HOME"] = str(home)
    runtime = LocalRuntime(home=home)
    runtime.up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    rows = []
    try:
        kube = Kube(runtime.kubeconfig())
        unlimited = {r: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for r in ("cpu", "memory", "gpu")}
        kube.apply(
            {
                "apiVersion": QUEUE_API,
                "kind": "Queue",
                "metadata": {"name": QUEUE, "labels": dict(MANAGED)},
                "spec": {"parentQueue": "default-parent-queue", "resources": unlimited},
            }
        )
        kube.ensure_namespace(NAMESPACE)
        control = runtime.capabilities().operators
        for name, (obj, count, _) in EXPECTED.items():
            op = operators.OPERATORS[name]
            start = time.monotonic()
            control.ensure(name, Progress(quiet=True))
            started = time.monotonic() - start
            idle = control.memory_mib(name) or 0.0
            samples: list[float] = []
            done = threading.Event()
            sampler = threading.Thread(target=sample_rss, args=(control, name, done, samples), daemon=True)
            sampler.start()
            kube.apply(copy.deepcopy(obj))
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                pods = owned_pods(kube, obj)
                if len(pods) == count and all(p["spec"].get("nodeName") for p in pods):
                    break
                time.sleep(0.5)
            else:
                sys.exit(f"{op.title}: its {count} pods were not bound within 180 s")
            time.sleep(10)
            done.set()
            sampler.join()
            size = (build.binary_dir(op.build) / op.binary).stat().st_size / 2**20
            rows.append(
                (op.describe(), times.get(op.build.key), size, started, idle, max(samples, default=idle), count)
            )
    finally:
        runtime.down(Progress(quiet=True))
    print(f"{'operator':32} {'cold build':>10} {'binary':>9} {'start':>7} {'RSS idle':>9} {'RSS busy':>9}  pods")
    for what, cold, size, started, idle, busy, count in rows:
        cold_text = f"{cold:.0f} s" if cold else "?"
        print(f"{what:32} {cold_text:>10} {size:>6.1f} MB {started:>5.1f} s {idle:>5.0f} MiB {busy:>5.0f} MiB  {count}")


if __name__ == "__main__":
    main()
