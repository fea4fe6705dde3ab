"""A lesson's watch lines with managedFields cut to who wrote the object when: the same JSON otherwise, the same
cluster time and the same view of the object; any line that is not as the cut expects is left whole."""

import json
from datetime import UTC, datetime

from kailab.lean_lines import with_write_times
from kailab.pods import object_time, pod_view, podgroup_view

TRICKY = ',"managedFields":[ ]},"spec":{ "name":"x" \\"quoted\\" {"manager":"m","operation":"Update","time":"t"}'

NEWEST = datetime(2026, 11, 24, 10, 0, 9, tzinfo=UTC).timestamp()  # kai-scheduler's write, the newest


def _entry(manager: str, time: str | None, subresource: str | None = None, operation: str = "Update") -> dict:
    e = {"manager": manager, "operation": operation, "apiVersion": "v1"}
    if time is not None:
        e["time"] = time
    e |= {
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:kailab.io/workload": {}}, "f:annotations": {"f:note": {}}},
            "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:resources": {"f:limits": {}}}}},
            "f:status": {"f:conditions": {'k:{"type":"PodScheduled"}': {"f:lastTransitionTime": {}}}},
        },
    }
    if subresource:
        e["subresource"] = subresource
    return e


def _pod(entries: list[dict]) -> dict:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "train-0",
            "generateName": "train-",
            "namespace": "kailab-quota",
            "uid": "u1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-11-24T10:00:00Z",
            "labels": {"kailab.io/workload": "train", "kai.scheduler/queue": "team-a"},
            "annotations": {"pod-group-name": "pg-train", "note": TRICKY},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j"}],
            "managedFields": entries,
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeName": "kwok-a100-0",
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2"}}, "args": [TRICKY]}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-24T10:00:03Z"}],
        },
    }


def _line(obj: dict, kind: str = "MODIFIED") -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode()


def _writes_only(obj: dict) -> dict:
    meta = obj["metadata"]
    kept = [{k: e[k] for k in ("manager", "operation", "time")} for e in meta["managedFields"]]
    return {**obj, "metadata": {**meta, "managedFields": kept}}


def test_a_pods_managed_fields_are_cut_to_their_writers_and_times_and_nothing_else_changes():
    entries = [
        _entry("kube-controller-manager", "2026-11-24T10:00:00Z"),
        _entry("kai-scheduler", "2026-11-24T10:00:09Z", operation="Apply"),
        _entry("kwok-controller", "2026-11-24T10:00:05Z", "status"),
        _entry('odd \\"manager\\"', "2026-11-24T10:00:01Z"),
    ]
    pod = _pod(entries)
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        line = _line(pod, kind)
        lean = with_write_times(line)
        assert len(lean) < len(line) / 2
        got = json.loads(lean)
        assert got == {"type": kind, "object": _writes_only(pod)}
        assert object_time(got["object"]) == object_time(pod) == NEWEST
        assert pod_view(got["object"]) == pod_view(pod)


def test_a_podgroups_status_writes_keep_their_time():
    group = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {
            "name": "pg-train",
            "namespace": "kailab-quota",
            "resourceVersion": "9",
            "creationTimestamp": "2026-11-24T10:00:00Z",
            "managedFields": [_entry("kai-podgrouper", "2026-11-24T10:00:02Z"), _entry("kai", "2026-11-24T10:01:00Z")],
        },
        "spec": {"minMember": 2, "queue": "team-a"},
        "status": {"phase": "Running"},
    }
    got = json.loads(with_write_times(_line(group)))["object"]
    assert got == _writes_only(group)
    assert object_time(got) == object_time(group) and podgroup_view(got) == podgroup_view(group)


def test_a_line_the_cut_cannot_be_sure_of_is_left_whole():
    no_time = _line(_pod([_entry("kwok-controller", None, "status"), _entry("k", "2026-11-24T10:00:05Z")]))
    assert with_write_times(no_time) == no_time  # an entry without its time
    moved = _pod([_entry("k", "2026-11-24T10:00:05Z")])
    moved["metadata"]["labels"] = moved["metadata"].pop("labels")  # a member the views read, after managedFields
    assert with_write_times(_line(moved)) == _line(moved)
    event = {
        "kind": "Event",
        "metadata": {"name": "e", "managedFields": [_entry("kai-scheduler", "2026-11-24T10:00:05Z")]},
        "involvedObject": {"kind": "Pod", "name": "train-0"},
        "reason": "Unschedulable",
    }
    assert with_write_times(_line(event)) == _line(event)  # no spec after its metadata
    bookmark = b'{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"7"}}}'
    assert with_write_times(bookmark) == bookmark
    unmanaged = _pod([])
    del unmanaged["metadata"]["managedFields"]
    assert with_write_times(_line(unmanaged)) == _line(unmanaged)
