"""``kailab demo all`` side by side on the real KAI (local runtime): each lesson in a temporary partition of its
own gives the verdict a lab of one's own gives (tests/golden/<lesson>/verdict.json), and the run leaves nothing:
no partition node, queue or namespace, no partition scheduler process, the lab's own scheduler still running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden_rows import rows, same_rows  # tests/fleet/golden_rows.py
from waits import until  # tests/fleet/waits.py

from kailab import parallel, partitions, shards
from kailab.classroom.klass import Class
from kailab.labels import NODEPOOL_LABEL, QUEUE_API, SHARD_API, TOPOLOGY_API
from kailab.lesson import lesson_names

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

GOLDEN = Path(__file__).parent.parent / "golden"


def test_demo_all_side_by_side_gives_the_golden_verdicts_and_leaves_nothing(kai_lab):
    from datetime import datetime

    proc = kai_lab.cli("demo", "all", "--json")
    assert proc.stdout.startswith("{"), proc.stderr
    result = json.loads(proc.stdout)
    names = lesson_names()
    assert [v["scenario"] for v in result["verdicts"]] == names  # in lesson order, whatever order they ended in
    for v in result["verdicts"]:
        part = parallel.partition(v["scenario"])
        assert v["outcome"] == "PASS", (v["scenario"], v["error"], [c for c in v["checks"] if not c["passed"]])
        golden = json.loads((GOLDEN / v["scenario"] / "verdict.json").read_text())
        assert same_rows(rows(v, part), rows(golden)), (v["scenario"], rows(v, part), rows(golden))
    assert proc.returncode == 0, proc.stderr
    # Side by side: while the longest lesson ran, others ran too.
    records = [json.loads(line) for line in (kai_lab.home / "verdicts-since-capture.jsonl").read_text().splitlines()]
    spans = {
        v["scenario"]: (datetime.fromisoformat(v["started"]).timestamp(), v["seconds"]) for v in records[-len(names) :]
    }
    first, length = spans["priority"]
    overlapping = [n for n, (start, _) in spans.items() if n != "priority" and first - 1 <= start <= first + length]
    assert len(overlapping) >= 3, spans

    # Nothing left: nodes, objects, scheduler processes of the partitions, the run's record of them.
    parts = [parallel.partition(n) for n in names]
    assert kai_lab.kube.core.list_node(label_selector=f"{NODEPOOL_LABEL} in ({','.join(parts)})").items == []
    demo = Class(kai_lab.runtime.capabilities().partitions, state=parallel.STATE)
    assert demo.learners() == []
    for part in parts:
        assert kai_lab.kube.get(SHARD_API, "SchedulingShard", shards.shard_name(part)) is None, part
        assert kai_lab.runtime.kai_processes.pid(shards.scheduler_name(part)) is None
        selector = partitions.owner(part).selector()
        assert kai_lab.kube.list(QUEUE_API, "Queue", label_selector=selector) == []
        assert kai_lab.kube.list(TOPOLOGY_API, "Topology", label_selector=selector) == []
        # Its namespaces are deleted, not waited for (the next run waits): terminating, then gone.
        left = kai_lab.kube.core.list_namespace(label_selector=selector).items
        assert all(ns.status.phase == "Terminating" for ns in left), part
        until(
            f"{part}'s namespaces are gone",
            lambda selector=selector: not kai_lab.kube.core.list_namespace(label_selector=selector).items,
        )
    assert kai_lab.runtime.scheduler_control().running()  # the lab's own scheduler was never touched
    assert len(kai_lab.kube.core.list_node(label_selector=f"!{NODEPOOL_LABEL}").items) == 5  # the lab's fleet


def test_demo_all_stopped_by_sigterm_removes_its_partitions(kai_lab):
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "KAILAB_HOME": str(kai_lab.home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kailab", "demo", "all"],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    parts = [parallel.partition(n) for n in lesson_names()]
    selector = f"{NODEPOOL_LABEL} in ({','.join(parts)})"
    deadline = time.monotonic() + 120
    while not kai_lab.kube.core.list_node(label_selector=selector).items:  # some partition is made
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert "Removing this run's partitions" in err, err
    assert kai_lab.kube.core.list_node(label_selector=selector).items == []
    demo = Class(kai_lab.runtime.capabilities().partitions, state=parallel.STATE)
    assert demo.learners() == []
    for part in parts:
        assert kai_lab.kube.get(SHARD_API, "SchedulingShard", shards.shard_name(part)) is None, part
        assert kai_lab.kube.list(QUEUE_API, "Queue", label_selector=partitions.owner(part).selector()) == []
    assert kai_lab.runtime.scheduler_control().running()
