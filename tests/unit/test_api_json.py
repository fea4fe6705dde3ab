"""kailab reads pods, events and nodes as the API's JSON: the views, and the list/watch calls that give it."""

import json
from datetime import UTC, datetime

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from kailab.api_paths import METADATA, api_request, object_metadata, path_lister
from kailab.kube import as_json
from kailab.pods import api_time, event_view, node_view, pod_view
from kailab.watched import Watched


def test_a_watch_of_an_as_json_call_gives_dicts_and_of_the_typed_call_the_clients_objects():
    core = client.CoreV1Api(client.ApiClient())
    w = watch.Watch()
    assert w.get_return_type(core.list_namespaced_pod).__name__ == "V1Pod"
    assert not w.get_return_type(as_json(core.list_namespaced_pod))  # no return type: events stay dicts
    assert w.get_watch_argument_name(as_json(core.list_namespaced_pod)) == "watch"


def test_a_path_lister_asks_the_api_path_with_the_list_arguments_and_raises_a_refusal():
    """What a custom object's list and watch go through (not CustomObjectsApi, a 0.3 s import): a real ApiClient
    builds the request; only the answer is made up."""
    api = client.ApiClient(client.Configuration(host="https://127.0.0.1:6443"))
    sent = []

    class Answer:
        def __init__(self, status):
            self.status, self.reason, self.response = status, "Forbidden", f"raw {status}"
            self.data, self.headers = b'{"kind": "Status", "code": 403}', {}

        def read(self):
            return self.data

    statuses = iter([200, 200, 403])

    def call_api(method, url, header_params=None, body=None, _request_timeout=None):
        sent.append((method, url, header_params.get("Accept")))
        return Answer(next(statuses))

    api.call_api = call_api
    lister = path_lister(api, "/apis/scheduling.run.ai/v2/queues")
    assert lister(label_selector="a=b,c!=d", _preload_content=False) == "raw 200"
    assert sent[-1] == (
        "GET",
        "https://127.0.0.1:6443/apis/scheduling.run.ai/v2/queues?labelSelector=a%3Db%2Cc%21%3Dd",
        "application/json",
    )
    assert not w_types(lister)  # a watch of it gives dicts
    lister(watch=True, resource_version="7", timeout_seconds=300, allow_watch_bookmarks=True, field_selector=None)
    assert sent[-1][1].endswith("queues?watch=true&resourceVersion=7&timeoutSeconds=300&allowWatchBookmarks=true")
    with pytest.raises(ApiException) as refused:
        lister()
    assert refused.value.status == 403
    with pytest.raises(TypeError, match="pretty"):
        lister(pretty=True)


def test_a_namespace_is_emptied_of_jobs_and_podgroups_by_their_paths_with_a_body_for_the_jobs():
    api = client.ApiClient(client.Configuration(host="https://127.0.0.1:6443"))
    sent = []

    class Answer:
        status, response, data = 200, None, b"{}"

        def read(self):
            return self.data

    def call_api(method, url, header_params=None, body=None, _request_timeout=None):
        sent.append((method, url, header_params.get("Content-Type"), body))
        return Answer()

    api.call_api = call_api
    api_request(api, "DELETE", "/apis/batch/v1/namespaces/ns/jobs", body={"propagationPolicy": "Background"})
    api_request(api, "DELETE", "/apis/x/v1/namespaces/ns/podgroups", [("propagationPolicy", "Background")])
    assert sent == [
        (
            "DELETE",
            "https://127.0.0.1:6443/apis/batch/v1/namespaces/ns/jobs",
            "application/json",
            {"propagationPolicy": "Background"},
        ),
        ("DELETE", "https://127.0.0.1:6443/apis/x/v1/namespaces/ns/podgroups?propagationPolicy=Background", None, None),
    ]


def w_types(fn):
    return watch.Watch().get_return_type(fn)


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


def test_a_watch_the_server_ends_goes_on_from_the_last_version_seen_and_lists_again_only_after_an_error():
    """Its changes as the API's JSON lines, from an answer the watch reads itself (the process's reader takes only
    the client's own answers: tests/unit/test_watch_reader.py reads those from a real TLS server)."""
    lists, streams = [], []
    listed = iter(["3", "10"])

    def event(kind, rv, name="p"):
        raw = {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}
        return json.dumps({"type": kind, "object": raw}).encode() + b"\n"

    def first():  # ends as the server ends a watch after its timeout
        yield event("ADDED", "5")
        yield event("BOOKMARK", "8")

    def second():
        raise client.exceptions.ApiException(status=410, reason="Gone: too old resource version")

    def third():
        w._stop.set()
        yield event("MODIFIED", "11")

    script = iter([first, second, third])

    class Answer:
        status = 200

        def __init__(self, lines):
            self.lines = lines

        def stream(self, amt=None, decode_content=True):
            return self.lines

        def close(self):
            pass

        def release_conn(self):
            pass

    def list_fn(**kw):
        if not kw.get("watch"):
            lists.append(kw)
            return {"metadata": {"resourceVersion": next(listed)}, "items": []}
        streams.append(kw)
        return Answer(next(script)())

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


def test_an_objects_metadata_alone_is_asked_for_and_none_is_none():
    api = client.ApiClient(client.Configuration(host="https://127.0.0.1:6443"))
    asked, answers = [], iter([(200, b'{"kind": "PartialObjectMetadata", "metadata": {"name": "c"}}'), (404, b"{}")])

    class Answer:
        def __init__(self, status, data):
            self.status, self.reason, self.data, self.headers, self.response = status, "", data, {}, self

        def read(self):
            return self.data

    def call_api(method, url, header_params=None, body=None, _request_timeout=None):
        asked.append(header_params["Accept"])
        return Answer(*next(answers))

    api.call_api = call_api
    assert object_metadata(api, "/apis/x/v1/things/c") == {"name": "c"}
    assert object_metadata(api, "/apis/x/v1/things/gone") is None
    assert asked == [METADATA, METADATA] and "as=PartialObjectMetadata;" in METADATA
