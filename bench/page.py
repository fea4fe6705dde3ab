"""Benchmark the class's page (``kailab class serve``) under a class at work, and a browser that comes and goes.

    python bench/page.py [--learners 16] [--lesson quota] [--visits 100]   # needs a running local lab with KAI

With ``--learners`` learners each running ``--lesson`` in their own partition at the same time, while the page is
served: how long after a change is in the cluster the page's stream carries it (a probe lesson record written every
few seconds, timed from the API server's answer to the event that shows it: target ≤ 2 s), and the CPU the page's
server used (its process, as a share of one core: target ≤ 5 %), idle and busy. Then a real browser (Debian's
chromium, else a plain HTTP client) opens the page and leaves it ``--visits`` times: the server's threads and open
files before and after (target: the same). Issue 37's targets; figures go in the README.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import psutil

from kailab import partitions
from kailab.classroom import roster
from kailab.classroom.records import RUNNING
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.lab import Lab, OwnLab
from kailab.labels import LEARNER_LABEL, RECORD_LABEL
from kailab.progress import Progress

PROBE_EVERY = 3.0


def serve() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kailab", "class", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    said = ""
    while (found := re.search(r"http://\S+/", said)) is None:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            raise SystemExit(f"kailab class serve ended: {said}")
        said += line
    return proc, found.group(0)


class Stream:
    """The page's events as a browser gets them: when each marker first appeared."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.conn.request("GET", "/events")
        self.response = self.conn.getresponse()
        self.seen: dict[str, float] = {}
        self.wanted: set[str] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.response:
                text = line.decode(errors="replace")
                now = time.monotonic()
                with self.lock:
                    for w in list(self.wanted):
                        if w in text:
                            self.seen[w], _ = now, self.wanted.discard(w)
        except (OSError, ValueError, AttributeError):  # closed by the bench
            pass

    def want(self, marker: str) -> None:
        with self.lock:
            self.wanted.add(marker)

    def close(self) -> None:
        self.conn.close()


def probe_namespace(learner: str) -> str:
    return f"{learner}-kailab-bench-probe"


def probe(kube: Kube, learner: str, n: int) -> dict:
    """A lesson record of the learner's, in a namespace of theirs: the page shows its lesson name."""
    ns = probe_namespace(learner)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kailab-record-bench-probe",
            "namespace": ns,
            "labels": {**partitions.owner(learner).labels, LEARNER_LABEL: learner, RECORD_LABEL: "bench-probe"},
        },
        "data": {"lesson": f"probe-{n}", "title": "bench probe", "outcome": RUNNING, "started": ""},
    }


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def visits(url: str, count: int) -> str:
    """Open the page and leave it ``count`` times; how it was done."""
    if Path("/usr/bin/chromium").exists():
        import tempfile

        from playwright.sync_api import sync_playwright

        with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            page = ctx.new_page()
            for _ in range(count):
                page.goto(url)
                page.wait_for_selector("body[data-updated]", state="attached", timeout=30_000)
                page.goto("about:blank")
            ctx.close()
        return "chromium"
    for _ in range(count):
        s = Stream(url)
        s.want("event: regions")
        while "event: regions" not in s.seen:
            time.sleep(0.01)
        s.close()
    return "an HTTP client"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--learners", type=int, default=16)
    ap.add_argument("--lesson", default="quota")
    ap.add_argument("--visits", type=int, default=100)
    args = ap.parse_args()

    lab = Lab.open()
    if not isinstance(lab, OwnLab) or lab.runtime is None or lab.runtime.traits.name != "local":
        raise SystemExit("Needs a running local lab with KAI: kailab up --runtime local")
    klass = lab.klass()
    if klass.learners():
        raise SystemExit(f"This lab already has a class ({', '.join(klass.learners())}); run kailab class down first.")
    kube = lab.kube
    names = roster.from_count(args.learners)
    start = time.monotonic()
    klass.up(kube, names, load_fleet(), Progress(quiet=True))
    print(f"class up of {args.learners}: {time.monotonic() - start:.0f} s")
    kube.ensure_namespace(probe_namespace(names.names[0]), partitions.owner(names.names[0]).labels)
    server, url = serve()
    proc = psutil.Process(server.pid)
    try:
        time.sleep(5)
        c0, t0 = cpu_seconds(proc), time.monotonic()
        time.sleep(20)
        idle = (cpu_seconds(proc) - c0) / (time.monotonic() - t0)
        stream = Stream(url)
        results: dict[str, bool] = {}

        def play(learner: str) -> None:
            verdicts = klass.run(Kube(lab.kubeconfig()), learner, [args.lesson], Progress(quiet=True))
            results[learner] = all(v.ok for v in verdicts)

        threads = [threading.Thread(target=play, args=(n,)) for n in names.names]
        c0, t0 = cpu_seconds(proc), time.monotonic()
        for t in threads:
            t.start()
        delays, n = [], 0
        while any(t.is_alive() for t in threads):
            n += 1
            marker = f"probe-{n}"
            stream.want(marker)
            kube.apply(probe(kube, names.names[0], n))
            applied = time.monotonic()
            deadline = applied + 10
            while marker not in stream.seen and time.monotonic() < deadline:
                time.sleep(0.01)
            delays.append(stream.seen.get(marker, float("inf")) - applied)
            time.sleep(max(0.0, PROBE_EVERY - (time.monotonic() - applied)))
        wall = time.monotonic() - t0
        busy = (cpu_seconds(proc) - c0) / wall
        stream.close()
        passed = sum(results.values())
        print(
            f"{args.learners} learners × {args.lesson} side by side: {wall:.0f} s, {passed}/{args.learners} passed; "
            f"the page's server used {100 * idle:.1f} % of one core idle, {100 * busy:.1f} % while they ran"
        )
        print(
            f"page current after a change in the cluster: median {statistics.median(delays):.2f} s, "
            f"max {max(delays):.2f} s over {len(delays)} probes (target ≤ 2 s)"
        )
        time.sleep(2)
        before = (proc.num_threads(), proc.num_fds())
        how = visits(url, args.visits)
        time.sleep(15)  # the server's file reads run in a pool whose idle threads end after 10 s (anyio)
        after = (proc.num_threads(), proc.num_fds())
        print(
            f"{args.visits} visits by {how}: server threads {before[0]} → {after[0]}, open files {before[1]} → "
            f"{after[1]}; RSS {proc.memory_info().rss / 2**20:.0f} MiB"
        )
        print(json.dumps({"idle": idle, "busy": busy, "delays": delays, "before": before, "after": after}))
    finally:
        server.send_signal(2)
        server.wait(30)
        kube.delete_namespace(probe_namespace(names.names[0]))
        klass.down(kube, None, Progress(quiet=True))


if __name__ == "__main__":
    main()
