"""kailab bench on the local lab with the real KAI: both schedulers timed, a lesson's leftovers kept off its
nodes, and everything it added removed — when it ends, and when it is stopped midway."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from waits import until  # tests/fleet/waits.py

from kailab.bench import NAMESPACE, POOL, QUEUE
from kailab.labels import POOL_LABEL, QUEUE_API


def bench_nodes(kube) -> list[str]:
    return [n.metadata.name for n in kube.core.list_node(label_selector=f"{POOL_LABEL}={POOL}").items]


def left_behind(kube) -> dict:
    return {
        "nodes": bench_nodes(kube),
        "pods": [p.metadata.name for p in kube.core.list_namespaced_pod(NAMESPACE).items],
        "queue": [q["metadata"]["name"] for q in kube.list(QUEUE_API, "Queue") if q["metadata"]["name"] == QUEUE],
    }


def test_bench_times_both_schedulers_beside_a_lessons_pending_pods_and_removes_what_it_added(kai_lab):
    # The baseline lesson leaves 2 default-scheduler pods pending for want of a GPU: they must not take the bench's.
    kai_lab.cli("demo", "baseline", check=True)
    proc = kai_lab.cli("bench", "--nodes", "2", "--pods", "16", "--json", check=True)
    result = json.loads(proc.stdout)
    runs = {r["scheduler"]: r for r in result["runs"]}
    assert set(runs) == {"kai-scheduler", "default-scheduler"}
    for r in runs.values():
        assert r["finished"] and r["pods"] == 16, r
        assert 0 < r["watched"]["created"] <= r["to_bound"] <= r["to_running"], r
    kai = runs["kai-scheduler"]
    assert kai["watched"]["grouped"] <= kai["watched"]["bind request"] <= kai["to_bound"], kai
    assert abs(result["kai_vs_default"] - kai["to_bound"] / runs["default-scheduler"]["to_bound"]) < 0.01
    assert left_behind(kai_lab.kube) == {"nodes": [], "pods": [], "queue": []}


def test_bench_stopped_midway_removes_its_nodes_job_and_queue(kai_lab):
    """SIGTERM (a CI timeout, kill) stops kailab as Ctrl-C does: its clean-up runs before it exits."""
    env = {**os.environ, "KAILAB_HOME": str(kai_lab.home)}
    proc = subprocess.Popen(
        # 128 pods: a run of several seconds, so the signal lands midway (16 pods now bind within a second)
        [
            sys.executable,
            "-m",
            "kailab",
            "bench",
            "--nodes",
            "2",
            "--gpus-per-node",
            "64",
            "--pods",
            "128",
            "--scheduler",
            "kai",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until("the bench's nodes", lambda: len(bench_nodes(kai_lab.kube)) == 2, timeout=60, every=0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, out
    assert "Removing the bench's Job, queue and nodes" in err + out
    assert left_behind(kai_lab.kube) == {"nodes": [], "pods": [], "queue": []}
