"""KAI's scheduler stopped, started and reconfigured mid-run, on the real KAI of the local fleet.

What it proves: pods submitted while the scheduler is stopped wait, all of them, and when it starts
the real scheduler orders them (the higher priority first); the placement setting reaches KAI (spread
puts four one-GPU pods on four nodes, binpack on one); a restarted scheduler is healthy, binds, and is
the one ``status`` shows and ``down`` stops (the session's teardown checks no process is left).
"""

from __future__ import annotations

import json
import time

import psutil
import pytest
from waits import until  # tests/fleet/waits.py

from kailab.labels import KAI_SCHEDULER_PROCESS, KWOK_TOLERATION, QUEUE_LABEL
from kailab.runtimes import local_kai
from kailab.runtimes.processes import Identity
from kailab.scheduler_settings import SchedulerSettings

ORDER_NS, PLACE_NS = "kai-sched-order", "kai-sched-place"
ORDER_QUEUE, PLACE_QUEUE = "sched-order", "sched-place"
ORDER_GPUS = 4  # the order queue's GPU limit: fewer than the 6 pods asked for
LOW, HIGH = "early-low", "late-high"


def queue(name: str, gpu_quota: int, gpu_limit: int) -> dict:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "kailab-test"}},
        "spec": {
            "resources": {
                "gpu": {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": 1},
                "cpu": unlimited,
                "memory": unlimited,
            }
        },
    }


def job(name: str, namespace: str, queue_name: str, pods: int, priority: str) -> dict:
    """A Job of one-GPU pods in a queue, with a priority class (as a label on the Job, which KAI reads first)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: queue_name, "priorityClassName": priority},
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 1000,
            "template": {
                "metadata": {"labels": {QUEUE_LABEL: queue_name, "job": name}},
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "priorityClassName": priority,
                    "tolerations": [dict(KWOK_TOLERATION)],
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                },
            },
        },
    }


def pods_of(kube, namespace: str, job_name: str) -> list:
    return kube.core.list_namespaced_pod(namespace, label_selector=f"job={job_name}").items


def scheduled_at(pod) -> float | None:
    cond = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled" and c.status == "True"), None)
    return cond.last_transition_time.timestamp() if cond else None


@pytest.fixture
def control(kai_lab):
    """The lab's scheduler control; the scheduler is left running with the lab's defaults whatever the test did."""
    c = kai_lab.runtime.scheduler_control()
    yield c
    c.start()


@pytest.fixture
def space(kai_lab):
    """Namespaces and queues of these tests, removed afterwards; exercises run earlier are cleared first
    (their pods stay on the fleet until the next exercise, and would leave these tests no room)."""
    from kailab.scenarios.live import clear_scenarios

    kube = kai_lab.kube
    clear_scenarios(kube)
    made = []

    def make(namespace: str, q: dict) -> None:
        kube.apply(q)
        kube.ensure_namespace(namespace)
        made.append((namespace, q["metadata"]["name"]))

    yield make
    for namespace, name in made:
        kube.delete_namespace(namespace)
        kube.delete("scheduling.run.ai/v2", "Queue", name)


def test_pods_submitted_while_stopped_wait_together_and_the_higher_priority_binds_first(kai_lab, control, space):
    kube = kai_lab.kube
    space(ORDER_NS, queue(ORDER_QUEUE, ORDER_GPUS, ORDER_GPUS))
    old = kai_lab.runtime.kai_processes.identity(KAI_SCHEDULER_PROCESS)
    assert old is not None and control.running()

    t = time.monotonic()
    control.stop()
    stop_s = time.monotonic() - t
    assert not control.running() and not old.alive(), "the scheduler still runs after stop()"
    assert control.metrics() is None

    # Low priority first, then high: 6 one-GPU pods for a queue limited to 4. The low Job is first by
    # creation time and by name, so only its priority can put it after the high one.
    kube.apply(job(LOW, ORDER_NS, ORDER_QUEUE, 3, "train"))  # priority 50
    kube.apply(job(HIGH, ORDER_NS, ORDER_QUEUE, 3, "build-preemptible"))  # priority 75
    until(
        "both Jobs have their pods and PodGroups (the pod-grouper runs while the scheduler is stopped)",
        lambda: (
            len(kube.list("scheduling.run.ai/v2alpha2", "PodGroup", namespace=ORDER_NS)) == 2
            and len(pods_of(kube, ORDER_NS, LOW)) == 3
            and len(pods_of(kube, ORDER_NS, HIGH)) == 3
        ),
    )
    time.sleep(3)  # three scheduling periods: nothing may bind while the scheduler is stopped
    bound = [p.metadata.name for j in (LOW, HIGH) for p in pods_of(kube, ORDER_NS, j) if p.spec.node_name]
    assert bound == [], f"pods bound while the scheduler was stopped: {bound}"

    t = time.monotonic()
    control.start()
    start_s = time.monotonic() - t
    new = kai_lab.runtime.kai_processes.identity(KAI_SCHEDULER_PROCESS)
    assert control.running() and new is not None and new != old
    assert control.settings == SchedulerSettings()

    def settled():
        low, high = pods_of(kube, ORDER_NS, LOW), pods_of(kube, ORDER_NS, HIGH)
        return (low, high) if sum(1 for p in low + high if p.spec.node_name) >= ORDER_GPUS else None

    low, high = until("the queue's 4 GPUs are allocated after start", settled, timeout=60)
    first_bind_s = time.monotonic() - t
    time.sleep(3)  # and it stays so: the rest of low may not preempt high
    low, high = pods_of(kube, ORDER_NS, LOW), pods_of(kube, ORDER_NS, HIGH)
    high_bound = [p for p in high if p.spec.node_name]
    low_bound = [p for p in low if p.spec.node_name]
    report = {
        "stop_s": round(stop_s, 2),
        "start_s": round(start_s, 2),
        "to_4_bound_s": round(first_bind_s, 2),
        "high_bound": len(high_bound),
        "low_bound": len(low_bound),
        "high_scheduled": sorted(scheduled_at(p) for p in high_bound),
        "low_scheduled": sorted(scheduled_at(p) for p in low_bound),
    }
    print("scheduler control:", json.dumps(report))
    assert len(high_bound) == 3, f"every high-priority pod binds: {report}"
    assert len(low_bound) == ORDER_GPUS - 3, f"low gets only what is left: {report}"
    # PodScheduled times have one-second resolution: KAI allocates all four in its first cycle, so they tie.
    assert max(report["high_scheduled"]) <= min(report["low_scheduled"]), f"high was scheduled first: {report}"


def test_spread_puts_four_pods_on_four_nodes_and_binpack_on_one(kai_lab, control, space):
    kube = kai_lab.kube
    space(PLACE_NS, queue(PLACE_QUEUE, 4, 8))

    def nodes_of(job_name: str) -> list[str]:
        pods = until(
            f"{job_name}: 4 pods bound",
            lambda: (
                (ps := pods_of(kube, PLACE_NS, job_name)) and len(ps) == 4 and all(p.spec.node_name for p in ps) and ps
            ),
            timeout=60,
        )
        return sorted(p.spec.node_name for p in pods)

    def placed(settings: SchedulerSettings, job_name: str) -> tuple[list[str], set[str], float]:
        t = time.monotonic()
        control.start(settings)
        took = time.monotonic() - t
        assert control.running() and control.settings == settings
        actions = local_kai.actions_run(control.metrics() or "")
        kube.apply(job(job_name, PLACE_NS, PLACE_QUEUE, 4, "train"))
        nodes = nodes_of(job_name)
        kube.delete("batch/v1", "Job", job_name, PLACE_NS)
        kube.core.delete_collection_namespaced_pod(PLACE_NS, label_selector=f"job={job_name}", grace_period_seconds=0)
        until(f"{job_name}'s pods are gone", lambda: not pods_of(kube, PLACE_NS, job_name))
        return nodes, actions, took

    spread, spread_actions, spread_s = placed(
        SchedulerSettings(gpu_placement="spread", cpu_placement="spread"), "spread"
    )
    binpack, binpack_actions, binpack_s = placed(SchedulerSettings(), "binpack")
    print(
        "placement:",
        json.dumps(
            {
                "spread": spread,
                "spread_start_s": round(spread_s, 2),
                "spread_actions": sorted(spread_actions),
                "binpack": binpack,
                "binpack_start_s": round(binpack_s, 2),
                "binpack_actions": sorted(binpack_actions),
            }
        ),
    )
    assert len(set(spread)) == 4, f"spread: one pod per node, got {spread}"
    assert len(set(binpack)) == 1, f"binpack: all on one node, got {binpack}"
    # The config file reached KAI: spread runs no consolidation (as the operator renders it), binpack does.
    assert "consolidation" not in spread_actions and "allocate" in spread_actions
    assert "consolidation" in binpack_actions


def test_a_restarted_scheduler_is_the_one_status_shows_and_down_finds(kai_lab, control):
    control.start(SchedulerSettings(full_hierarchy_fairness=False))
    ident = kai_lab.runtime.kai_processes.identity(KAI_SCHEDULER_PROCESS)
    assert ident is not None and ident in kai_lab.runtime.processes(), "down stops what processes() lists"
    argv = " ".join(psutil.Process(ident.pid).cmdline())
    assert "--full-hierarchy-fairness=false" in argv
    proc = kai_lab.cli("status", "--json")
    status = json.loads(proc.stdout)
    sched = next(c for c in status["components"] if c["name"] == KAI_SCHEDULER_PROCESS)
    assert sched["healthy"] and sched["detail"] == f"pid {ident.pid}", sched
    assert proc.returncode == 0 and status["healthy"]

    control.start()  # back to the defaults: a new process again, the flag gone
    again = kai_lab.runtime.kai_processes.identity(KAI_SCHEDULER_PROCESS)
    assert again != ident and not Identity(ident.pid, ident.started).alive()
    assert "--full-hierarchy-fairness" not in " ".join(psutil.Process(again.pid).cmdline())
