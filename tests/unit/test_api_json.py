"""kailab reads pods, events and nodes as the API's JSON: the views, and the list/watch calls that give it."""

from datetime import UTC, datetime

from kubernetes import client, watch

from kailab.kube import Watched, as_json
from kailab.pods import api_time, event_view, node_view, pod_view


def test_a_watch_of_an_as_json_call_gives_dicts_and_of_the_typed_call_the_clients_objects():
    core = client.CoreV1Api(client.ApiClient())
    w = watch.Watch()
    assert w.get_return_type(core.list_namespaced_pod).__name__ == "V1Pod"
    assert not w.get_return_type(as_json(core.list_namespaced_pod))  # no return type: events stay dicts
    assert w.get_watch_argument_name(as_json(core.list_namespaced_pod)) == "watch"


def test_an_as_json_list_is_parsed_from_the_answer_and_a_watch_is_left_to_the_stream():
    calls = []

    class Answer:
        data = b'{"metadata": {"resourceVersion": "7"}, "items": [{"metadata": {"name": "p"}}]}'

    def list_fn(*args, **kw):
        calls.append((args, kw))
        return Answer()

    assert as_json(list_fn)("ns", label_selector="a=b") == {
        "metadata": {"resourceVersion": "7"},
        "items": [{"metadata": {"name": "p"}}],
    }
    assert calls[-1] == (("ns",), {"label_selector": "a=b", "_preload_content": False})
    answer = as_json(list_fn)("ns", watch=True, _preload_content=False)
    assert isinstance(answer, Answer) and calls[-1][1]["watch"] is True


def test_a_watch_the_server_ends_goes_on_from_the_last_version_seen_and_lists_again_only_after_an_error(monkeypatch):
    lists, streams = [], []
    listed = iter(["3", "10"])

    def list_fn(**kw):
        lists.append(kw)
        return {"metadata": {"resourceVersion": next(listed)}, "items": []}

    def event(kind, rv, name="p"):
        raw = {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}
        return {"type": kind, "object": raw, "raw_object": raw}

    def first():  # ends as the server ends a watch after its timeout
        yield event("ADDED", "5")
        yield event("BOOKMARK", "8")

    def second():
        raise client.exceptions.ApiException(status=410, reason="Gone: too old resource version")
        yield

    def third():
        w._stop.set()
        yield event("MODIFIED", "11")

    script = iter([first, second, third])

    class FakeWatch:
        def stream(self, func, *args, **kw):
            streams.append(kw)
            return next(script)()

        def stop(self):
            pass

    monkeypatch.setattr("kailab.kube.watch.Watch", FakeWatch)
    w = Watched(list_fn, label_selector="a=b")
    w._stop.wait = lambda timeout=None: w._stop.is_set()  # no half-second pause after the error
    w._run()
    assert len(lists) == 2  # the first list, and one after the 410: not one per watch the server ended
    assert [kw["resource_version"] for kw in streams] == ["3", "8", "10"]  # the bookmark's version carried on
    assert all(kw["allow_watch_bookmarks"] and kw["label_selector"] == "a=b" for kw in streams)
    assert list(w.objects) == []  # the relist found no pod: the one seen is gone, told as DELETED


def test_a_pod_as_the_api_gives_it():
    pod = {
        "metadata": {
            "name": "train-0",
            "namespace": "kailab-quota",
            "creationTimestamp": "2026-11-24T10:00:00Z",
            "deletionTimestamp": "2026-11-24T10:05:00Z",
            "labels": {"kailab.io/workload": "train", "kai.scheduler/queue": "team-a", "runai/queue": "old"},
            "annotations": {"pod-group-name": "pg-train"},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeName": "kwok-a100-0",
            "priorityClassName": "train",
            "schedulingGates": [{"name": "example.com/wait"}],
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-24T10:00:03Z"}],
        },
    }
    v = pod_view(pod)
    assert (v.name, v.namespace, v.workload, v.queue, v.old_queue, v.pod_group) == (
        "train-0",
        "kailab-quota",
        "train",
        "team-a",
        "old",
        "pg-train",
    )
    assert (v.phase, v.node, v.gpus, v.deleting, v.scheduler, v.priority_class, v.gates) == (
        "Running",
        "kwok-a100-0",
        2,
        True,
        "kai-scheduler",
        "train",
        ("example.com/wait",),
    )
    assert v.bound_at == datetime(2026, 11, 24, 10, 0, 3, tzinfo=UTC).timestamp()
    waiting = pod_view(
        {
            "metadata": {"name": "w"},
            "spec": {"containers": [{"name": "main"}]},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no GPUs"}
                ],
            },
        }
    )
    assert (waiting.unschedulable, waiting.waiting, waiting.bound_at, waiting.deleting) == (
        True,
        "no GPUs",
        None,
        False,
    )
    assert pod_view({"metadata": {"name": "bare"}}).phase == "Pending"  # nothing but a name: no error


def test_an_event_is_dated_by_its_last_time_else_its_event_time_else_its_first_time_else_its_creation():
    ev = {
        "metadata": {"namespace": "ns", "creationTimestamp": "2026-11-24T10:00:09Z"},
        "involvedObject": {"kind": "PodGroup", "name": "pg"},
        "reason": "Unschedulable",
        "message": "NonPreemptible:   queue\n team-a",
        "lastTimestamp": None,
        "eventTime": "2026-11-24T10:00:01.500000Z",
    }
    e = event_view(ev)
    assert (e.kind, e.name, e.namespace, e.reason, e.message) == (
        "PodGroup",
        "pg",
        "ns",
        "Unschedulable",
        "NonPreemptible: queue team-a",
    )
    assert e.time == datetime(2026, 11, 24, 10, 0, 1, 500000, tzinfo=UTC).timestamp()
    assert event_view({**ev, "lastTimestamp": "2026-11-24T10:00:05Z"}).time == api_time("2026-11-24T10:00:05Z")
    assert event_view({**ev, "eventTime": None}).time == api_time("2026-11-24T10:00:09Z")
    assert event_view({}).time == 0.0 and api_time("not a time") is None


def test_a_node_shows_only_the_labels_asked_about():
    node = {"metadata": {"name": "kwok-a100-0", "labels": {"rack": "r1", "zone": "z"}}}
    assert node_view(node, ("rack", "row")).to_json() == {"name": "kwok-a100-0", "labels": {"rack": "r1"}}
