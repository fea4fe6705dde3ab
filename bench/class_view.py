"""Where the time of ``kailab join`` and ``kailab class status`` goes, on a busy host.

    python bench/class_view.py [--learners 4] [--load 4]
    # needs a running local lab with KAI (kailab up) and no class on it; stress-ng on PATH

Makes a class of ``--learners`` with credentials and starts ``stress-ng --cpu LOAD`` beside it, then prints:

1. ``kailab join`` for each learner (a folder of their own): the command's wall seconds, beside what any kailab
   command costs before it asks anything (``python -c "import kailab.cli"``: the interpreter and the imports) and
   the join's own calls to the API server (the SelfSubjectReview, the mark of the join), timed in-process.
2. ``kailab class status``: the command's wall seconds, and each read it makes in-process (the learners' records,
   their namespaces, their pods, the shards, the joins), beside the reads it made before this bench (a namespace
   list per learner, a pod list per namespace, a shard read per learner).

The class is removed and stress-ng stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kailab import partitions, shards
from kailab.classroom import joined, records, roster
from kailab.classroom.access import kubeconfig_path
from kailab.classroom.klass import joined_states
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.lab import Lab
from kailab.labels import SHARD_API
from kailab.progress import Progress


def timed(fn):
    start = time.monotonic()
    got = fn()
    return time.monotonic() - start, got


def wall(*args: str, home: Path | None = None) -> float:
    env = {**os.environ, **({"KAILAB_HOME": str(home)} if home else {})}
    start = time.monotonic()
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-2000:]}")
    return took


def figures(label: str, values: list[float]) -> None:
    print(
        f"  {label:<58} median {statistics.median(values):6.2f} s  max {max(values):6.2f} s  (n={len(values)})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=4)
    parser.add_argument("--load", type=int, default=4, help="stress-ng --cpu workers beside the class")
    args = parser.parse_args()
    lab = Lab.open()
    kube, klass = lab.kube, lab.klass()
    if klass.learners():
        raise SystemExit("A class is on this lab already: kailab class down first.")
    names = roster.from_count(args.learners)
    tmp = Path(tempfile.mkdtemp(prefix="kailab-bench-class-view-"))
    out = tmp / "creds"
    start = time.monotonic()
    klass.up(kube, names, load_fleet(), Progress(quiet=True), out=out, server=klass.learners_server(kube)[0])
    print(f"class up, {args.learners} learners with credentials: {time.monotonic() - start:.1f} s (quiet host)")
    stress = subprocess.Popen(["stress-ng", "--cpu", str(args.load), "--timeout", "900"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(3)
        print(f"beside stress-ng --cpu {args.load} on {os.cpu_count()} cores:")
        print("kailab join")
        figures(
            "python -c 'import kailab.cli' (start-up and imports)", [wall("-c", "import kailab.cli") for _ in range(3)]
        )
        figures(
            "kailab join FILE (the command, whole)",
            [wall("-m", "kailab", "join", str(kubeconfig_path(out, n)), home=tmp / n) for n in names.names],
        )
        made, asked, marked = [], [], []
        for n in names.names:
            path = kubeconfig_path(out, n)
            t, learner_kube = timed(lambda p=path: Kube(p))
            made.append(t)
            asked.append(timed(lambda k=learner_kube, p=path: joined.whoami(k, p))[0])
            marked.append(timed(lambda k=learner_kube, n=n: joined.mark_joined(k, n))[0])
        figures("  a client from the kubeconfig", made)
        figures("  who the token is (SelfSubjectReview)", asked)
        figures("  the mark of the join (one server-side apply)", marked)

        print("kailab class status")
        figures("kailab class status (the command, whole)", [wall("-m", "kailab", "class", "status") for _ in range(3)])
        learners = klass.learners()
        reads: dict[str, list[float]] = {}
        for _ in range(3):
            for label, fn in (
                ("  records (a list per learner)", lambda: [records._records(kube, n) for n in learners]),
                ("  namespaces, pods (one list each)", lambda: records.gather(kube, learners)),
                ("  shards (one list)", lambda: kube.list(SHARD_API, shards.KIND)),
                ("  joins (one list)", lambda: joined_states(kube, learners)),
                ("  before: a namespace list per learner", lambda: per_learner_namespaces(kube, learners)),
                ("  before: a pod list per namespace", lambda: per_namespace_pods(kube, learners)),
                ("  before: a shard read per learner", lambda: [klass.control(n, kube).running() for n in learners]),
                ("  class status's view, whole (Class.status)", lambda: klass.status(kube, 120)),
            ):
                reads.setdefault(label, []).append(timed(fn)[0])
        for label, values in reads.items():
            figures(label, values)
    finally:
        stress.terminate()
        stress.wait(30)
        klass.down(kube, None, Progress(quiet=True))


def per_learner_namespaces(kube: Kube, learners: list[str]) -> dict[str, list[str]]:
    return {
        n: [ns.metadata.name for ns in kube.core.list_namespace(label_selector=partitions.owner(n).selector()).items]
        for n in learners
    }


def per_namespace_pods(kube: Kube, learners: list[str]) -> int:
    return sum(len(kube.pods(ns)) for names in per_learner_namespaces(kube, learners).values() for ns in names)


if __name__ == "__main__":
    main()
