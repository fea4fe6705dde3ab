"""kailab explain on the local runtime, on pods made Pending for known reasons."""

from __future__ import annotations

import json

from kailab.paths import RUNBOOKS


def test_explain_a_pod_the_default_scheduler_cannot_place(lab):
    assert lab.cli("demo", "baseline", "-q").returncode == 0
    found = json.loads(lab.cli("explain", "training", "-n", "kailab-baseline", "--json", check=True).stdout)
    pending = [e for e in found if e["state"] == "Pending"]
    assert len(pending) == 2 and len(found) == 10
    assert all("no node has room" in e["summary"] and e["details"][0].startswith("Nearest node:") for e in pending)


def test_explain_unknown_pod_is_a_clear_error(lab):
    proc = lab.cli("explain", "nope", "-n", "default")
    assert proc.returncode == 1 and "No pod or Job named 'nope'" in proc.stderr


def test_explain_names_each_pending_reason_on_kai(kai_lab):
    assert kai_lab.cli("run", str(RUNBOOKS / "scenarios" / "pending-forever.yaml"), "-q").returncode == 0
    want = {
        "missing-queue": "does not exist",
        "non-leaf": "parent queue",
        "wrong-scheduler": "No scheduler named 'kai-schedular'",
        "cpu-limit-zero": "CPU or memory limit",
        "no-queue-label": "non-preemptible",
    }
    for workload, words in want.items():
        (e,) = json.loads(
            kai_lab.cli("explain", workload, "-n", "kailab-rb-pending-forever", "--json", check=True).stdout
        )
        assert words in e["summary"], (workload, e)
        assert e["runbook"].startswith("runbooks/")


def test_explain_names_consolidation_for_the_jobs_kai_moved(kai_lab):
    assert kai_lab.cli("demo", "consolidation", "-q").returncode == 0
    runbooks = set()
    for i in range(12):  # the exercise's small-0 … small-11; KAI chooses which it moves
        found = json.loads(
            kai_lab.cli("explain", f"small-{i}", "-n", "kailab-consolidation", "--json", check=True).stdout
        )
        runbooks |= {e["runbook"] for e in found if e["state"] == "Bound"}
    assert "runbooks/consolidation.md" in runbooks, runbooks


def test_explain_names_reclaim_for_the_pods_another_queue_took_back(kai_lab):
    assert kai_lab.cli("demo", "reclaim", "-q").returncode == 0
    found = json.loads(kai_lab.cli("explain", "prod-train", "-n", "kailab-reclaim", "--json", check=True).stdout)
    # The Job makes its evicted pods again after a back-off; every pod of its PodGroup tells what KAI did to it.
    told = [e for e in found if any("was preempted by workload" in d for d in e["details"])]
    assert told and all(e["runbook"] == "runbooks/reclaim-not-happening.md" for e in told), found
