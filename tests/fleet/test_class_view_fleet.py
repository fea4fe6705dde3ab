"""The instructor's view of a class and a learner's isolation, on the real KAI (local runtime).

A class of two, ann and bob, each with the kubeconfig ``class up --out`` wrote; ann joins with hers alone:

- isolation: ann's baseline (default-scheduler) lesson gives the golden verdict with every pod on her nodes; a pod
  that is not bob's — the lab's own, for the default scheduler, or one in ann's partition for KAI — is never
  placed on bob's or ann's tainted nodes without their toleration (KAI's predicates honour taints);
- ``kailab watch`` live, with ann's kubeconfig: no 403, her queues and pods only, redrawn as they change;
- ``class status`` (text and ``--json``): a lesson killed midway is stuck (started, no verdict), a pod Pending
  with the scheduler's own words; bob has nothing stuck;
- ``class evidence``: the HTML page (one file) and the Markdown page with ann's GPU timelines;
- who has joined (ann, from the mark her join wrote; bob not); the lesson cut short, run again, kept as two attempts
  and no longer stuck; ``watch --learner ann`` (the instructor's): her queues with the fair shares KAI gives them,
  nothing of bob's; time-fairshare said to ann as the instructor's demo, not a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from golden_rows import rows  # tests/fleet/golden_rows.py
from waits import until  # tests/fleet/waits.py

from kailab import partitions, queues
from kailab.classroom.records import NAME as RECORD
from kailab.classroom.records import RUNNING
from kailab.kube import Kube
from kailab.labels import GPU, KWOK_TOLERATION, LEARNER_LABEL, MANAGED, NODEPOOL_LABEL, QUEUE_LABEL
from kailab.ownership import stamped
from kailab.paths import EXERCISES
from kailab.scenarios.loader import load_scenario

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

GOLDEN = Path(__file__).parent.parent / "golden"


@pytest.fixture(autouse=True)
def no_class_left(kai_lab):
    """From a fleet without earlier exercises' pods; no class, nor this test's namespace, left behind."""
    from kailab.scenarios.live import clear_scenarios

    clear_scenarios(kai_lab.kube)
    yield
    kai_lab.cli("class", "down")
    kai_lab.kube.delete_namespace(FOREIGN)


HOSTILE = "<script>alert(1)</script> {{ 7*7 }} [b]x[/b] [l](y) &amp;"  # ann's prediction: data, never markup
FOREIGN = "kailab-foreign"  # the lab's own namespace for pods that are no learner's


def pod(
    name: str, namespace: str, *, node: str = "", scheduler: str = "", queue: str = "", labels=None, gpus: int = 1
) -> dict:
    """A pod (1 GPU unless told) as a user would write it: KWOK's toleration, no partition's."""
    spec: dict = {
        "tolerations": [dict(KWOK_TOLERATION)],
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {GPU: str(gpus)}} if gpus else {}}],
    }
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if scheduler:
        spec["schedulerName"] = scheduler
    meta = {
        "name": name,
        "namespace": namespace,
        "labels": {**(labels or {}), **({QUEUE_LABEL: queue} if queue else {})},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def test_instructor_view_and_isolation_of_a_class(kai_lab, tmp_path, monkeypatch):
    kube = kai_lab.kube
    creds = tmp_path / "creds"
    kai_lab.cli("class", "up", "--learner", "ann", "--learner", "bob", "--out", str(creds), check=True)
    home = tmp_path / "ann-machine"  # ann has no lab: only her file

    def ann_env() -> dict:
        return {**os.environ, "KAILAB_HOME": str(home), "COLUMNS": "200"}

    def ann(*args: str, typed: str | None = None) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "kailab", *args]
        return subprocess.run(
            command, env=ann_env(), cwd=tmp_path, input=typed, capture_output=True, text=True, timeout=600
        )

    assert ann("join", str(creds / "ann.kubeconfig")).returncode == 0
    joins = json.loads(kai_lab.cli("class", "status", "--json", check=True).stdout)
    assert joins["ann"]["joined"]["at"] and joins["bob"]["joined"] is None, joins  # the API server's time of her mark
    for learner in ("ann", "bob"):
        for node in kube.core.list_node(label_selector=f"{LEARNER_LABEL}={learner}").items:
            assert any(t.key == partitions.taint(learner)["key"] and t.value == learner for t in node.spec.taints or [])

    # ann walks the baseline lesson (the default scheduler's), her prediction hostile text; the quota lesson
    # (KAI's) gives the golden verdict
    def placed_on_her_nodes(lesson: str) -> None:  # checked before the next lesson clears the fleet
        ns = partitions.for_partition(load_scenario(EXERCISES / f"{lesson}.yaml"), "ann").namespace
        placed = [p.spec.node_name for p in kube.core.list_namespaced_pod(ns).items if p.spec.node_name]
        assert placed and all(n.startswith("ann-kwok-") for n in placed), (lesson, placed)

    walk = ann("lesson", "baseline", typed=HOSTILE + "\n")
    assert walk.returncode == 0, walk.stdout + walk.stderr
    placed_on_her_nodes("baseline")
    run = ann("demo", "quota", "--json")
    assert run.returncode == 0, run.stderr
    (got,) = json.loads(run.stdout)["verdicts"]
    golden = json.loads((GOLDEN / "quota" / "verdict.json").read_text())
    assert got["outcome"] == "PASS" and comparable(rows(got, "ann")) == comparable(rows(golden)), got
    placed_on_her_nodes("quota")

    # A pod that is no learner's, for the default scheduler, asking for bob's node: never placed there, though it
    # has room; the same pod asking for a node of the lab's own is placed at once.
    kube.ensure_namespace(FOREIGN, dict(MANAGED))
    kube.apply(pod("to-bob", FOREIGN, node="bob-kwok-a100-0"))
    kube.apply(pod("to-lab", FOREIGN, node="kwok-a100-0"))
    until("the lab's own pod is placed on the lab's node", lambda: bound(kube, FOREIGN, "to-lab"))
    refused = until("the default scheduler says why bob's node is refused", lambda: waiting(kube, FOREIGN, "to-bob"))
    assert "untolerated taint" in refused, refused  # the learners' 10 tainted nodes, bob's among them
    assert not bound(kube, FOREIGN, "to-bob")

    # In ann's partition, for KAI: a pod without her partition's toleration waits with KAI's reason, the same pod
    # made by kailab (stamped as ann's: her toleration) is placed on her node. Both in her namespace of a lesson
    # she has not run, where nothing finished: the waiting one is hers to be stuck on.
    ns = partitions.for_partition(load_scenario(EXERCISES / "gang.yaml"), "ann").namespace
    probe = "ann-probe"
    kube.apply(
        stamped(
            queues.queue_object(probe, queues.resource(8), queues.resource(-1), queues.resource(-1)),
            partitions.owner("ann"),
        )
    )

    # ann watches live, with her kubeconfig: before anything of the probe exists
    watch = subprocess.Popen(
        [sys.executable, "-m", "kailab", "watch"],
        env=ann_env(),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as at a terminal, even when this test runs where SIGINT is ignored (a background job's children)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        time.sleep(20)  # its first frame drawn: the watches of her ten namespaces started (slow on a loaded machine)
        assert watch.poll() is None, watch.communicate()
        ann_labels = {NODEPOOL_LABEL: "ann", **partitions.owner("ann").labels}
        kube.apply(
            pod(  # no GPU: whether ann's lessons left one free on that node is not what KAI is asked
                "untolerated",
                ns,
                node="ann-kwok-a100-1",
                scheduler="kai-scheduler",
                queue=probe,
                labels=ann_labels,
                gpus=0,
            )
        )
        kube.apply(
            stamped(
                pod("tolerated", ns, node="ann-kwok-a100-1", scheduler="kai-scheduler", queue=probe),
                partitions.owner("ann"),
            )
        )
        until("KAI places ann's own pod on her node", lambda: bound(kube, ns, "tolerated") == "ann-kwok-a100-1")
        time.sleep(4)  # a redraw (every pod change, and every 2 s)
    finally:
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert err.splitlines()[0].startswith("Learner ann:"), err
    assert "403" not in err and "Forbidden" not in err and "Traceback" not in err, err
    assert probe in out and "ann-kwok-a100-1" in out, out  # the frame drawn after the probe existed
    assert "bob-kwok" not in out and "bob-" not in out, out  # nothing of bob's
    assert not bound(kube, ns, "untolerated")

    def untolerated_reason() -> str:
        report = json.loads(kai_lab.cli("class", "status", "--json", "--stuck-after", "1", check=True).stdout)
        return next((s["reason"] for s in report["ann"]["stuck"] if s.get("pod") == f"{ns}/untolerated"), "")

    # KAI's own words for it
    reason = until("ann's scheduler gives the untolerated pod a reason", untolerated_reason)
    assert "taint" in reason, reason

    # A lesson killed midway (its process gone): started, no verdict
    killed = subprocess.Popen(
        [sys.executable, "-m", "kailab", "demo", "borrow"],
        env=ann_env(),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    borrow_ns = partitions.for_partition(load_scenario(EXERCISES / "borrow.yaml"), "ann").namespace
    try:
        until("ann's borrow lesson is recorded as started", lambda: outcome(kube, borrow_ns) == RUNNING, timeout=120)
    finally:
        killed.kill()
        killed.wait(30)
    time.sleep(2)

    report = json.loads(kai_lab.cli("class", "status", "--json", "--stuck-after", "1", check=True).stdout)
    assert report["bob"]["stuck"] == [] and report["bob"]["lessons"] == {}
    assert {n: r["outcome"] for n, r in report["ann"]["lessons"].items()} == {
        "baseline": "PASS",
        "quota": "PASS",
        "borrow": RUNNING,
    }
    assert report["ann"]["lessons"]["baseline"]["prediction"] == HOSTILE
    stuck = {s.get("lesson") or s["pod"]: s for s in report["ann"]["stuck"]}
    assert stuck["borrow"]["kind"] == "lesson" and stuck["borrow"]["running_seconds"] >= 1, stuck
    assert stuck[f"{ns}/untolerated"]["reason"], stuck  # KAI's words (which, above)
    assert f"{ns}/tolerated" not in stuck
    # no pod the finished lessons left is counted: they are their results
    assert all(s["kind"] == "lesson" or s["pod"].startswith((ns, borrow_ns)) for s in report["ann"]["stuck"])

    text = kai_lab.cli("class", "status", "--stuck-after", "1", check=True).stdout
    assert f"stuck: ann: lesson borrow ({borrow_ns}) started" in text, text
    assert f"stuck: ann: {ns}/untolerated Pending" in text and "the scheduler says:" in text, text
    assert "bob (scheduler running): no lesson run yet" in text, text
    assert f"  baseline: predicted “{HOSTILE}”, outcome PASS" in text, text  # as typed: no markup read

    html = tmp_path / "class.html"
    kai_lab.cli("class", "evidence", "--out", str(html), "--stuck-after", "1", check=True)
    page = html.read_text()
    assert page.count("data:image/png;base64,") == 1 and 'alt="GPU timelines of ann"' in page  # bob ran nothing
    assert f"<li>ann: lesson borrow ({borrow_ns}) started" in page
    # the prediction shown as typed: escaped, never run as a script nor filled in as a template
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt; {{ 7*7 }} [b]x[/b] [l](y) &amp;amp;</td>" in page, page
    assert "<script" not in page and ">49<" not in page
    md = tmp_path / "class.md"
    kai_lab.cli("class", "evidence", "--out", str(md), "--stuck-after", "1", check=True)
    assert (tmp_path / "class-timelines" / "ann.png").read_bytes().startswith(b"\x89PNG")
    assert "![GPU timelines of ann](class-timelines/ann.png)" in md.read_text()
    shown = "\\<script\\>alert\\(1\\)\\</script\\> \\{\\{ 7\\*7 \\}\\} \\[b\\]x\\[/b\\] \\[l\\]\\(y\\) \\&amp;"
    assert f"| ann | baseline | {shown} | PASS |" in md.read_text(), md.read_text()

    assert "<th>not yet</th>" in page and "<th>gang</th>" not in page  # totals per learner, not a column a lesson

    # time-fairshare is the instructor's demo for a joined learner: said so, plainly, and nothing is recorded
    listed = ann("lesson")
    assert any("time-fairshare" in line and "demo-only" in line for line in listed.stdout.splitlines()), listed.stdout
    demo = ann("lesson", "time-fairshare", typed="")
    assert demo.returncode == 0 and "demo-only in a class, not a lesson that failed" in demo.stdout, demo.stdout

    # The lesson cut short, run again (the probe's pods out of the way: borrow fills all 32 GPUs): both attempts
    # kept, and nothing of it stuck any more
    for name in ("tolerated", "untolerated"):
        kube.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    until("the probe's pods are gone", lambda: not kube.core.list_namespaced_pod(ns).items)
    again = ann("demo", "borrow", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["verdicts"][0]["outcome"] == "PASS", again.stderr
    report = json.loads(kai_lab.cli("class", "status", "--json", "--stuck-after", "1", check=True).stdout)
    borrow = report["ann"]["lessons"]["borrow"]
    assert borrow["outcome"] == "PASS" and [a["outcome"] for a in borrow["attempts"]] == [RUNNING], borrow
    assert "time-fairshare" not in report["ann"]["lessons"]
    assert not any(
        s.get("lesson") == "borrow" or s.get("pod", "").startswith(borrow_ns) for s in report["ann"]["stuck"]
    )
    text = kai_lab.cli("class", "status", check=True).stdout
    assert "borrow PASS" in text and "(attempts: cut short " in text and "  joined: " in text, text

    # The instructor watches ann's slice alone: her queues, with the fair shares her scheduler publishes on her shard
    from kailab import fairshare, shards
    from kailab.labels import SHARD_API, SHARD_FAIR_SHARES_ANNOTATION
    from kailab.render import num

    monkeypatch.setenv("COLUMNS", "220")

    def shown_with_her_fair_shares() -> str:
        shard = kube.get(SHARD_API, shards.KIND, shards.shard_name("ann")) or {}
        text = (shard.get("metadata", {}).get("annotations") or {}).get(SHARD_FAIR_SHARES_ANNOTATION) or ""
        published = {q: s.gpu for q, s in fairshare.parse(text).items() if q.startswith("ann-")}
        shown = kai_lab.cli("watch", "--learner", "ann", "--once", check=True)
        assert shown.stderr.startswith("Learner ann:") and "bob-" not in shown.stdout, shown.stdout + shown.stderr
        lines = shown.stdout.splitlines()
        return (
            shown.stdout
            if any(q in line and f" {num(v)} " in line for q, v in published.items() for line in lines)
            else ""
        )

    frame = until("ann's queues are shown with the fair shares KAI gives them", shown_with_her_fair_shares, 90, 2)
    assert "ann-probe" in frame  # her own queue, made above

    # After class down, ann's credential gets one clear message
    kai_lab.cli("class", "down", check=True)
    ended = ann("watch", "--once")
    assert ended.returncode == 1, ended.stdout + ended.stderr
    assert "your class has ended or your credential was revoked" in ended.stderr, ended.stderr
    assert ended.stderr.count("Error:") == 1 and "Traceback" not in ended.stderr, ended.stderr


def comparable(checks: list[dict]) -> list[dict]:
    """A verdict's checks, without the scheduler's own words where it counts the cluster's nodes ("0/15 nodes are
    available: 5 Insufficient nvidia.com/gpu, 10 …"): a class's cluster has more nodes than a lab of one's own.
    What was expected of them, and that they said it, stays compared."""
    return [{k: v for k, v in c.items() if not (c["measure"] == "reason" and k == "observed")} for c in checks]


def bound(kube: Kube, namespace: str, name: str) -> str:
    got = kube.core.read_namespaced_pod(name, namespace)
    return got.spec.node_name or ""


def waiting(kube: Kube, namespace: str, name: str) -> str:
    """What the scheduler said of an unplaced pod (its PodScheduled condition), "" before it said anything."""
    got = kube.core.read_namespaced_pod(name, namespace)
    cond = next((c for c in got.status.conditions or [] if c.type == "PodScheduled" and c.status == "False"), None)
    return (cond.message or "") if cond else ""


def outcome(kube: Kube, namespace: str) -> str:
    cm = kube.get("v1", "ConfigMap", RECORD, namespace)
    return (cm or {}).get("data", {}).get("outcome", "")
