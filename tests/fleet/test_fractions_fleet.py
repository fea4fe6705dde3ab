"""Fractional GPUs on the local runtime's real KAI: its reservation pods get their GPU id from kailab's ledger.

KAI v0.17.0 shares a GPU through a reservation pod per shared GPU (namespace kai-resource-reservation); the
binder binds a fractional pod only once something has annotated that pod with the GPU it holds — on the
local runtime, kailab's ledger (kailab/runtimes/gpu_ledger/), started by ``up`` and stopped by ``down``.
"""

from __future__ import annotations

import json
import time

import psutil
from waits import until  # tests/fleet/waits.py

from kailab.evidence import pending_verdicts
from kailab.labels import GPU_GROUP_LABEL, KWOK_TOLERATION, RESERVATION_NAMESPACE, RESERVE_ANNOTATION
from kailab.runtimes.gpu_ledger import PROCESS_NAME
from kailab.runtimes.gpu_ledger.store import read_ledger

NS = "kailab-fractions"


def pod(name: str, *, fraction: str | None = None, gpus: int = 0) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"kai.scheduler/queue": "team-research"},
            "annotations": {"gpu-fraction": fraction} if fraction else {},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [dict(KWOK_TOLERATION)],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {},
                }
            ],
        },
    }


def running(kube, names: list[str]) -> dict | None:
    pods = {p.metadata.name: p for p in kube.core.list_namespaced_pod(NS).items}
    if all(n in pods and pods[n].status.phase == "Running" for n in names):
        return pods
    return None


def cells_of(kube, names: set[str]) -> dict[str, tuple[str, str]] | None:
    """pod name → (node, gpu id) of every cell holding one of ``names`` in the ledger; None until all are there."""
    found: dict[str, list[tuple[str, str]]] = {}
    for node, cells in read_ledger(kube).items():
        for c in cells:
            for h in c.holders:
                if h.namespace == NS and h.name in names:
                    found.setdefault(h.name, []).append((node, c.gpu))
    if set(found) != names:
        return None
    return {name: at[0] if len(at) == 1 else tuple(at) for name, at in found.items()}


def reservation_pods(kube) -> list:
    return [
        p for p in kube.core.list_namespaced_pod(RESERVATION_NAMESPACE).items if p.metadata.deletion_timestamp is None
    ]


def ours_in_ledger(kube) -> list[str]:
    return [
        f"{node}/{c.gpu}: {h.namespace}/{h.name}"
        for node, cells in read_ledger(kube).items()
        for c in cells
        for h in c.holders
        if h.namespace in (NS, RESERVATION_NAMESPACE)
    ]


def test_halves_share_one_gpu_a_point_nine_and_a_point_three_do_not_and_deleting_frees_them(kai_lab):
    kube, runtime = kai_lab.kube, kai_lab.runtime
    kai_lab.cli("queues", check=True)
    kube.ensure_namespace(NS)
    times = {}
    try:
        # the ledger runs as one of the lab's processes: known by identity, named after the lab (so down stops it)
        ident = runtime.kai_processes.identity(PROCESS_NAME)
        assert ident is not None and ident in runtime.processes()
        assert any(str(kai_lab.home) in arg for arg in psutil.Process(ident.pid).cmdline())
        assert any(c.name == PROCESS_NAME and c.healthy for c in runtime.info().components)

        # two halves and a two-GPU pod
        start = time.monotonic()
        for obj in (pod("half-1", fraction="0.5"), pod("half-2", fraction="0.5"), pod("two", gpus=2)):
            kube.apply(obj)
        pods = until("half-1, half-2 and two Running", lambda: running(kube, ["half-1", "half-2", "two"]))
        times["two halves bound"] = time.monotonic() - start
        assert pods["half-1"].spec.node_name == pods["half-2"].spec.node_name
        at = until(
            "the ledger holds both halves and the two-GPU pod", lambda: cells_of(kube, {"half-1", "half-2", "two"})
        )
        assert at["half-1"] == at["half-2"], at
        node, gpu = at["half-1"]
        assert node == pods["half-1"].spec.node_name
        group = pods["half-1"].metadata.labels[GPU_GROUP_LABEL]
        assert pods["half-2"].metadata.labels[GPU_GROUP_LABEL] == group
        reserving = [p for p in reservation_pods(kube) if (p.metadata.labels or {}).get(GPU_GROUP_LABEL) == group]
        assert len(reserving) == 1 and len(reservation_pods(kube)) == 1, [
            p.metadata.name for p in reservation_pods(kube)
        ]
        assert reserving[0].spec.node_name == node and reserving[0].metadata.annotations[RESERVE_ANNOTATION] == gpu
        assert len(at["two"]) == 2 and (node, gpu) not in at["two"], at  # whole GPUs: two ids, not the shared one

        # the ledger survives its process restarting: same ids after it lists the cluster again
        before = read_ledger(kube)
        from kailab.runtimes import local_kai
        from kailab.runtimes.processes import stop

        stop([ident], timeout=10, group=True)
        assert not ident.alive()
        assert read_ledger(kube) == before
        spec = local_kai.gpu_ledger_spec(runtime.kubeconfig())
        runtime.kai_processes.start(spec)
        local_kai.wait_healthy([spec], runtime.kai_processes, timeout=60)
        kube.apply(pod("one", gpus=1))  # the new process writes the ledger with it: the others keep their ids
        until("one Running", lambda: running(kube, ["one"]))
        at_one = until("the restarted ledger holds one", lambda: cells_of(kube, {"one"}))
        after = {
            node: [c if not any(h.name == "one" for h in c.holders) else type(c)(c.node, c.gpu) for c in cells]
            for node, cells in read_ledger(kube).items()
        }
        assert after == before and at_one["one"] not in (at["half-1"], *at["two"])

        # 0.9 and 0.3: two GPUs, two reservation pods
        start = time.monotonic()
        kube.apply(pod("point-nine", fraction="0.9"))
        kube.apply(pod("point-three", fraction="0.3"))
        until("point-nine and point-three Running", lambda: running(kube, ["point-nine", "point-three"]))
        times["0.9 and 0.3 bound"] = time.monotonic() - start
        at2 = until("the ledger holds 0.9 and 0.3", lambda: cells_of(kube, {"point-nine", "point-three"}))
        assert at2["point-nine"] != at2["point-three"], at2
        assert (node, gpu) not in (at2["point-nine"], at2["point-three"]), "a full GPU took more"
        assert len(reservation_pods(kube)) == 3

        # deleting the pods frees every id, and KAI's binder deletes its reservation pods
        start = time.monotonic()
        kube.empty_namespace(NS)
        until(
            "the ledger holds nothing of the test's pods and no reservation pod is left",
            lambda: not ours_in_ledger(kube) and not reservation_pods(kube),
            timeout=30,
        )
        times["freed"] = time.monotonic() - start
        print("times: " + ", ".join(f"{k} {v:.1f}s" for k, v in times.items()))
    finally:
        kube.delete_namespace(NS)


def test_the_fractions_lesson_records_its_verdict_and_watch_and_status_count_each_shared_gpu_once(kai_lab):
    # The lesson prints a watch frame after its run: a bound fractional pod used to crash it before it recorded.
    run = kai_lab.cli("lesson", "fractions", "--yes")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Recorded for your evidence" in run.stdout
    recorded = [r for r in pending_verdicts(kai_lab.home) if r["scenario"] == "fractions"]
    assert recorded and recorded[-1]["passed"] and recorded[-1]["lesson"]["passed"]

    # Its pods stay after its expectations: two halves on one GPU of kwok-a100-0, 0.9 and 0.3 on one GPU each,
    # each shared GPU also held by one of KAI's reservation pods — 3 GPUs in use, not 6 nor 2.2.
    until("KAI's three reservation pods", lambda: len(reservation_pods(kai_lab.kube)) == 3)
    text = kai_lab.cli("watch", "--once", check=True).stdout
    row = next(line for line in text.splitlines() if line.startswith("│ kwok-a100-0 "))
    assert row.count("◐") == 3 and row.count("■") == 0 and "3/8" in row, row
    frac = next(line for line in text.splitlines() if line.startswith("│ team-frac "))
    assert "2.2" in frac, frac
    status = json.loads(kai_lab.cli("status", "--json", check=True).stdout)
    node = next(n for n in status["nodes"] if n["name"] == "kwok-a100-0")
    assert (node["used"], node["free"]) == (3, 5), node
    queue = next(q for q in status["queues"] if q["name"] == "team-frac")
    assert round(queue["allocated"], 6) == 2.2, queue
