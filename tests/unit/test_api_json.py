"""kailab reads pods, events and nodes as the API's JSON: the views, and the list/watch calls that give it."""

from datetime import UTC, datetime

from kubernetes import client, watch

from kailab.kube import as_json
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
