"""What keeps the lab's own CPU down while lessons run (README "Performance", bench/side_by_side.py): a pace reading
gives its connection back, an operator's install is read as JSON after its first reading, a fleet's wait watches its
own nodes only, the dynamic client's answers stay the API's JSON."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from kailab import operators, pace, partitions
from kailab.fleet import load_fleet, node_objects, node_ready, reported_gpus, shared_labels
from kailab.kube import as_read

GOLDEN = Path(__file__).parent.parent / "golden"


def test_a_pace_reading_reads_its_answer_to_the_end_so_the_connection_is_reused():
    answer = SimpleNamespace(read_calls=0, headers={"Date": "Fri, 27 Nov 2026 14:00:00 GMT"})
    answer.read = lambda: setattr(answer, "read_calls", answer.read_calls + 1) or b"{}"
    asked = []
    api = SimpleNamespace(  # the client's request of a path (kailab.api_paths.api_request)
        param_serialize=lambda method, path, **kw: (
            asked.append((method, path, kw["query_params"])) or (method, path, {}, None, None)
        ),
        call_api=lambda *a, **kw: SimpleNamespace(status=200, response=answer),
    )
    kube = SimpleNamespace(api=api)
    reading, server = pace.sample(kube, "ns", None)
    assert answer.read_calls == 1
    assert asked == [("GET", "/api/v1/namespaces/ns/pods", [("limit", 1)])]  # one pod of the namespace
    assert reading.api is not None and server == datetime(2026, 11, 27, 14, tzinfo=UTC).timestamp()


def test_an_operators_install_is_read_from_its_json_copy_after_the_first_reading(tmp_path):
    rendered = tmp_path / "op-v1.yaml"
    rendered.write_text("kind: A\nmetadata: {name: a}\n---\n---\nkind: B\nspec: {n: 3, ready: true}\n")
    first = operators._parsed(rendered)
    assert first == [{"kind": "A", "metadata": {"name": "a"}}, {"kind": "B", "spec": {"n": 3, "ready": True}}]
    copy = tmp_path / "op-v1.json"
    assert json.loads(copy.read_text()) == first
    copy.write_text(json.dumps([{"kind": "from the copy"}]))  # the copy is what is read now
    assert operators._parsed(rendered) == [{"kind": "from the copy"}]
    copy.write_text("[not json")  # a damaged copy: the YAML again, and a good copy written
    assert operators._parsed(rendered) == first and json.loads(copy.read_text()) == first
    os.utime(copy, (1, 1))  # older than the YAML (rendered again since): not used
    copy.write_text(json.dumps([{"kind": "stale"}]))
    os.utime(copy, (1, 1))
    assert operators._parsed(rendered) == first


def test_a_yaml_value_json_cannot_hold_makes_no_copy(tmp_path):
    rendered = tmp_path / "op-v1.yaml"
    rendered.write_text("kind: A\nwhen: 2026-11-27\n")
    assert str(operators._parsed(rendered)[0]["when"]) == "2026-11-27"
    assert not (tmp_path / "op-v1.json").exists()
    rendered.write_text("kind: A\nports: {8080: http}\nflags: {on: yes}\n")  # keys JSON would make strings
    assert operators._parsed(rendered) == [{"kind": "A", "ports": {8080: "http"}, "flags": {True: True}}]
    assert not (tmp_path / "op-v1.json").exists()


def test_a_partitions_fleet_is_watched_by_the_labels_its_nodes_share():
    nodes = partitions.nodes(load_fleet(), "demo-quota")
    selector = dict(part.split("=", 1) for part in shared_labels(nodes).split(","))
    assert all(n["metadata"]["labels"].items() >= selector.items() for n in nodes)
    assert selector.items() >= partitions.node_labels("demo-quota").items()  # not another partition's nodes
    lab = node_objects(load_fleet())
    assert not any(n["metadata"]["labels"].items() >= selector.items() for n in lab)
    assert shared_labels([]) == ""


def test_a_nodes_readiness_and_gpus_are_read_from_the_apis_json():
    node = node_objects(load_fleet())[0]
    assert not node_ready(node)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert node_ready(node) and reported_gpus(node) == int(node["status"]["allocatable"]["nvidia.com/gpu"])


def test_the_dynamic_clients_answer_is_the_apis_json_as_read():
    data = {"kind": "Pod", "metadata": {"name": "p", "to_dict": "a key the client's objects would shadow"}}
    assert as_read(None, data) is data


def test_the_events_a_lessons_watch_leaves_out_are_none_that_a_lesson_reads():
    """Every event of those reasons in the golden recordings (thousands, from the real KAI) names no victim and no
    reason for waiting: leaving them out of the watch changes nothing a verdict is decided on."""
    from kailab.pods import EVICTION_REASONS, UNREAD_EVENT_REASONS, UNREAD_EVENTS, WAITING_REASONS
    from kailab.scenarios.replay import read_changes

    assert UNREAD_EVENTS == "reason!=Scheduled,reason!=Bound,reason!=SuccessfulCreate"
    left_out = [
        c.event
        for path in sorted(GOLDEN.glob("*/changes.jsonl"))
        for c in read_changes(path)
        if c.event is not None and c.event.reason in UNREAD_EVENT_REASONS
    ]
    assert {e.reason for e in left_out} == set(UNREAD_EVENT_REASONS) and len(left_out) > 1000
    assert not [e for e in left_out if e.victim or e.says_why_waiting]
    # a reason the fold reads (a victim's, a waiting one's) is never left out
    assert not set(UNREAD_EVENT_REASONS) & (EVICTION_REASONS | WAITING_REASONS)


def test_a_settled_process_keeps_what_it_loaded_out_of_the_collectors_walks_once(monkeypatch):
    import gc

    from kailab import collector

    before = gc.get_threshold()
    monkeypatch.setattr(collector, "_settled", False)
    try:
        collector.settle()
        frozen = gc.get_freeze_count()
        assert frozen > 1000 and gc.get_threshold()[0] == collector.YOUNG
        assert gc.get_threshold()[1:] == before[1:]  # the older generations as they were
        made = [[i] for i in range(1000)]  # new objects: not frozen by a second call
        collector.settle()
        assert gc.get_freeze_count() == frozen and made
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
