"""The real KAI Scheduler on the local fleet: it binds, it explains, and every exercise holds."""

from __future__ import annotations

import json
import time

from waits import until  # tests/fleet/waits.py

GPU_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"namespace": "kai-probe", "labels": {"kai.scheduler/queue": "team-research"}},
    "spec": {
        "schedulerName": "kai-scheduler",
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "c", "image": "pause", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    },
}


def pod(name: str, gpus: int) -> dict:
    obj = json.loads(json.dumps(GPU_POD))
    obj["metadata"]["name"] = name
    obj["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    return obj


def test_kai_binds_one_gpu_pod_and_explains_a_nine_gpu_pod(kai_lab):
    kube = kai_lab.kube
    kai_lab.cli("queues", check=True)
    kube.ensure_namespace("kai-probe")
    try:
        kube.apply(pod("one-gpu", 1))
        kube.apply(pod("nine-gpus", 9))
        # Ends on the cluster's state; the bound only stops a test that would hang (a busy CI host binds late).
        deadline = time.monotonic() + 180
        one = nine_reason = None
        while time.monotonic() < deadline:
            one = kube.core.read_namespaced_pod("one-gpu", "kai-probe")
            events = kube.core.list_namespaced_event("kai-probe").items
            nine_reason = next((e.message for e in events if e.reason == "Unschedulable" and e.message), None)
            if one.status.phase == "Running" and nine_reason:
                break
            time.sleep(0.3)
        assert one.status.phase == "Running" and one.spec.node_name.startswith("kwok-")
        binds = kube.list("scheduling.run.ai/v1alpha2", "BindRequest", namespace="kai-probe")
        assert any(b["spec"]["podName"] == "one-gpu" for b in binds), "KAI's binder did not bind it"
        nine = kube.core.read_namespaced_pod("nine-gpus", "kai-probe")
        assert nine.spec.node_name is None
        assert nine_reason, "KAI gave no reason for the 9-GPU pod"
    finally:
        kube.delete_namespace("kai-probe")


def test_every_exercise_passes_on_real_kai_and_replays_to_the_same_verdict(kai_lab, operators_built, tmp_path):
    """Every lesson passes on the real KAI; its recorded change stream, replayed offline, gives the same verdict."""
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario
    from kailab.scenarios.replay import replay

    proc = kai_lab.cli("demo", "all", "--json", "--record", str(tmp_path))
    result = json.loads(proc.stdout or "{}")
    failed = [
        f"{v['scenario']}: {c['title']}: expected {c['expected']}, observed {c['observed']}; " + " / ".join(c["detail"])
        for v in result.get("verdicts", [])
        for c in v["checks"]
        if not c["passed"]
    ]
    assert proc.returncode == 0 and not failed, "\n".join(failed) + proc.stderr[-3000:]
    from kailab.lesson import EXERCISE_NAMES

    assert [v["scenario"] for v in result["verdicts"]] == list(EXERCISE_NAMES)
    for live in result["verdicts"]:
        again = replay(load_scenario(EXERCISES / f"{live['scenario']}.yaml"), tmp_path / live["scenario"])
        rows = lambda checks: [(c["title"], c["expected"], c["observed"], c["passed"]) for c in checks]  # noqa: E731
        assert rows(c.to_dict() for c in again.checks) == rows(live["checks"]), live["scenario"]


def test_reclaim_evidence_holds_the_evictions(kai_lab, tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "KAILAB_HOME": str(kai_lab.home)}
    proc = subprocess.run(
        [sys.executable, "-m", "kailab", "demo", "reclaim", "--evidence", "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    snap = sorted((tmp_path / "evidence").iterdir())[-1]
    events = (snap / "events.txt").read_text()
    assert events.count("was preempted by workload") >= 8
    series = json.loads((snap / "timeline.json").read_text())["reclaim"]
    assert max(p.get("team-prod", 0) for _, p in series) == 32
    assert any(p.get("team-research") == 8 and p.get("team-prod") == 24 for _, p in series)  # its quota back first
    assert series[-1][1] == {"team-prod": 16, "team-research": 16}  # then up to its fair share, no further
    assert "team-research gets its quota of 8 back | 8 | 8 | PASS" in (snap / "report.md").read_text()


def podgroup_rewrites(kube) -> int:
    """How many times anyone has rewritten a PodGroup (PUT, any answer, 409 conflicts too), from the API server's metrics."""
    answer = kube.api.call_api("GET", kube.api.configuration.host + "/metrics")
    text = answer.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("apiserver_request_total{")
        and 'resource="podgroups"' in line
        and 'subresource=""' in line
        and 'verb="PUT"' in line
    )


def test_kai_groups_a_job_without_rewriting_its_podgroup(kai_lab):
    """The lab's PodGroup CRD defaults spec.subGroups to []: KAI's pod-grouper finds the PodGroup it built
    and leaves it alone, instead of rewriting it for every pod event (and losing races to the podgroup-controller)."""
    from kailab.kai_patches import PODGROUP_CRD
    from kailab.scenarios.live import clear_scenarios

    kube = kai_lab.kube
    clear_scenarios(kube)  # exercises run earlier leave their pods on the fleet
    kai_lab.cli("queues", check=True)
    kube.ensure_namespace("kai-grouping")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "sixteen",
            "namespace": "kai-grouping",
            "labels": {"kai.scheduler/queue": "team-research"},
        },
        "spec": {
            "parallelism": 16,
            "completions": 16,
            "template": {
                "metadata": {"labels": {"kai.scheduler/queue": "team-research"}},
                "spec": {**GPU_POD["spec"], "restartPolicy": "Never"},
            },
        },
    }
    try:
        before = podgroup_rewrites(kube)
        kube.apply(job)
        until(
            "16 pods Running",
            lambda: sum(p.status.phase == "Running" for p in kube.core.list_namespaced_pod("kai-grouping").items) == 16,
        )
        groups = kube.list("scheduling.run.ai/v2alpha2", "PodGroup", namespace="kai-grouping")
        assert len(groups) == 1 and groups[0]["spec"].get("subGroups") == [], (PODGROUP_CRD, groups)
        assert podgroup_rewrites(kube) - before == 0
    finally:
        kube.delete_namespace("kai-grouping")
