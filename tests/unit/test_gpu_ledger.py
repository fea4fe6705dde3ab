"""The GPU ledger's pure core (kailab/runtimes/gpu_ledger/): which fake GPU id each pod holds, and what it asks the driver to write."""

from __future__ import annotations

import random

from kubernetes import client

from kailab.labels import RESERVATION_NAMESPACE, RESERVE_ANNOTATION
from kailab.labels import SHARED_GPU_CONFIGMAP_ANNOTATION as CONFIGMAP_ANNOTATION
from kailab.runtimes.gpu_ledger.admission import shared_gpu_prep
from kailab.runtimes.gpu_ledger.facts import NodeShape, PodFacts, facts_of, node_shape
from kailab.runtimes.gpu_ledger.store import dump_holders, dump_ledger, parse_ledger, write_ledger
from kailab.runtimes.gpu_ledger.topology import FRACTION, RESERVATION, WHOLE, Annotate, Topology

NODE = "kwok-a100-0"


def topo(gpus: int = 8, memory: int = 81920) -> Topology:
    t = Topology()
    t.set_node(NODE, NodeShape(gpus, memory))
    return t


def whole(name: str, gpus: int, node: str | None = NODE, **kw) -> PodFacts:
    return PodFacts("team", name, uid=f"uid-{name}", node=node, gpus=gpus, scheduler="kai-scheduler", **kw)


def reservation(name: str, group: str, **kw) -> PodFacts:
    return PodFacts(RESERVATION_NAMESPACE, name, uid=f"uid-{name}", node=NODE, gpus=1, groups=(group,), **kw)


def fraction(name: str, portion: float | None, group: str | None, **kw) -> PodFacts:
    return PodFacts(
        "team",
        name,
        uid=f"uid-{name}",
        node=NODE if group else None,
        groups=(group,) if group else (),
        fraction=portion,
        scheduler="kai-scheduler",
        **kw,
    )


def held(t: Topology) -> dict[str, list[tuple[str, float | None]]]:
    """gpu id → [(kind:name, portion)] of the cells someone holds, on NODE."""
    return {c.gpu: [(f"{h.kind}:{h.name}", h.portion) for h in c.holders] for c in t.cells()[NODE] if c.holders}


def test_whole_pods_get_the_lowest_free_ids_and_free_them_when_they_go():
    t = topo()
    assert t.update(whole("a", 2)) == []
    t.update(whole("b", 1))
    assert held(t) == {"0": [("whole:a", 1.0)], "1": [("whole:a", 1.0)], "2": [("whole:b", 1.0)]}
    t.remove("team/a")
    assert held(t) == {"2": [("whole:b", 1.0)]}
    t.update(whole("c", 3))
    assert sorted(held(t)) == ["0", "1", "2", "3"]  # c takes 0, 1 and the next free, 3
    t.update(whole("b", 1, finished=True))  # a finished pod frees its GPU, deleted or not
    assert sorted(held(t)) == ["0", "1", "3"]
    assert len(t.cells()[NODE]) == 8 and all(c.free for c in t.cells()[NODE] if c.gpu not in {"0", "1", "3"})


def test_an_unbound_pod_holds_nothing_until_it_is_bound_and_its_node_is_known():
    t = Topology()
    t.update(whole("a", 1, node=None))
    assert t.cells() == {}
    t.update(whole("a", 1))  # bound, to a node not seen yet
    assert t.cells() == {}
    t.set_node(NODE, NodeShape(4))
    assert held(t) == {"0": [("whole:a", 1.0)]}


def test_a_pod_that_finds_no_free_gpu_waits_and_gets_one_when_one_is_freed():
    t = topo(gpus=2)
    t.update(whole("a", 2))
    t.update(whole("late", 1))
    assert held(t) == {"0": [("whole:a", 1.0)], "1": [("whole:a", 1.0)]}
    t.remove("team/a")
    assert held(t) == {"0": [("whole:late", 1.0)]}


def test_a_reservation_pod_gets_an_id_and_the_annotation_the_binder_waits_for():
    t = topo()
    t.update(whole("a", 1))
    actions = t.update(reservation("gpu-reservation-1", "g1"))
    assert actions == [Annotate(RESERVATION_NAMESPACE, "gpu-reservation-1", RESERVE_ANNOTATION, "1")]
    # the pod comes back with other changes before the annotation lands: not asked twice
    assert t.update(reservation("gpu-reservation-1", "g1")) == []
    # and once it carries it, nothing more
    assert t.update(reservation("gpu-reservation-1", "g1", reserved_index="1")) == []
    assert held(t)["1"] == [("reservation:gpu-reservation-1", 1.0)]


def test_a_reservation_pod_annotated_by_someone_else_keeps_its_id():
    t = topo()
    assert t.update(reservation("gpu-reservation-1", "g1", reserved_index="5")) == []
    assert list(held(t)) == ["5"]


def test_two_halves_share_the_id_of_their_groups_reservation_pod():
    t = topo()
    t.update(whole("a", 1))
    t.update(reservation("gpu-reservation-1", "g1"))
    t.update(fraction("half-1", 0.5, "g1"))
    t.update(fraction("half-2", 0.5, "g1"))
    cells = {c.gpu: c for c in t.cells()[NODE] if c.holders}
    assert held(t)["1"] == [("reservation:gpu-reservation-1", 1.0), ("fraction:half-1", 0.5), ("fraction:half-2", 0.5)]
    assert cells["1"].shared and cells["1"].used == 1.0 and [h.name for h in cells["1"].pods] == ["half-1", "half-2"]
    # one half goes: the GPU stays the reservation's; the other goes: the binder deletes the reservation pod
    t.remove("team/half-1")
    assert held(t)["1"] == [("reservation:gpu-reservation-1", 1.0), ("fraction:half-2", 0.5)]
    t.remove("team/half-2")
    t.remove(f"{RESERVATION_NAMESPACE}/gpu-reservation-1")
    assert list(held(t)) == ["0"]


def test_a_point_nine_and_a_point_three_do_not_share_a_gpu():
    t = topo()
    t.update(reservation("gpu-reservation-1", "g1"))
    t.update(reservation("gpu-reservation-2", "g2"))
    t.update(fraction("big", 0.9, "g1"))
    t.update(fraction("small", 0.3, "g2"))
    assert held(t) == {
        "0": [("reservation:gpu-reservation-1", 1.0), ("fraction:big", 0.9)],
        "1": [("reservation:gpu-reservation-2", 1.0), ("fraction:small", 0.3)],
    }
    assert [round(c.used, 2) for c in t.cells()[NODE] if c.holders] == [0.9, 0.3]


def test_a_fraction_by_memory_is_its_share_of_the_nodes_gpu_memory():
    t = topo(memory=80000)
    t.update(reservation("gpu-reservation-1", "g1"))
    t.update(fraction("mem", None, "g1", memory_mib=20000))
    assert held(t)["0"][1] == ("fraction:mem", 0.25)


def test_a_finished_fraction_and_an_unbound_one_hold_nothing():
    t = topo()
    t.update(reservation("gpu-reservation-1", "g1"))
    t.update(fraction("done", 0.5, "g1", finished=True))
    t.update(fraction("pending", 0.5, None))
    assert held(t) == {"0": [("reservation:gpu-reservation-1", 1.0)]}


def test_the_stored_ledger_round_trips_and_a_restart_gives_whole_pods_the_same_ids():
    t = topo()
    t.update(whole("a", 1))
    t.update(whole("b", 2))
    t.remove("team/a")  # b keeps 1 and 2; 0 is free
    t.update(reservation("gpu-reservation-1", "g1", reserved_index="0"))
    t.update(fraction("half", 0.5, "g1"))
    data = dump_ledger(t.cells(), t.nodes)
    t.set_node("empty", NodeShape(4, 40960))  # a node whose GPUs are all free, and one without GPUs
    t.set_node("cpu-only", NodeShape(0))
    assert dump_holders(t.holders(), t.nodes) == dump_ledger(t.cells(), t.nodes)  # what the process writes
    assert set(dump_holders(t.holders(), t.nodes)) == {NODE, "empty"}
    t.drop_node("empty")
    t.drop_node("cpu-only")
    stored = parse_ledger(data)
    assert stored == t.cells()
    assert [c.gpu for c in stored[NODE]] == [str(i) for i in range(8)]

    again = Topology()
    again.restore(stored)
    again.set_node(NODE, NodeShape(8, 81920))
    again.update(whole("c", 1))  # a new pod seen first must not take b's ids
    again.update(whole("b", 2))
    again.update(reservation("gpu-reservation-1", "g1", reserved_index="0"))
    assert "3" not in held(again)  # c waits until every pod has been listed
    again.synced()
    assert held(again)["1"] == held(again)["2"] == [("whole:b", 1.0)]
    assert held(again)["3"] == [("whole:c", 1.0)]


def test_the_ledger_is_written_whole_first_then_only_the_nodes_that_changed():
    calls = []

    class Core:
        def __getattr__(self, verb):
            def call(*args, **kw):
                calls.append((verb, args))
                if verb == "patch_namespaced_config_map" and len(calls) == 3:
                    raise client.exceptions.ApiException(status=404)  # someone deleted it: made again whole
                return type("Answer", (), {"read": lambda self: b"{}"})()

            return call

    kube = type("Kube", (), {"core": Core()})()
    first = {"n1": "a", "n2": "b"}
    write_ledger(kube, first)
    write_ledger(kube, {"n1": "a", "n3": "c"}, stored=first)
    write_ledger(kube, {"n1": "a", "n3": "c"}, stored={"n1": "a", "n3": "c"})  # nothing changed: no request
    write_ledger(kube, {"n1": "x"}, stored=first)
    assert [(verb, args[-1] if verb.startswith("patch") else args[-1].data) for verb, args in calls] == [
        ("replace_namespaced_config_map", first),
        ("patch_namespaced_config_map", {"data": {"n3": "c", "n2": None}}),
        ("patch_namespaced_config_map", {"data": {"n1": "x", "n2": None}}),
        ("replace_namespaced_config_map", {"n1": "x"}),
    ]


def test_a_ledger_that_is_not_json_reads_as_what_can_be_read():
    assert parse_ledger({"n1": "{not json", "n2": '{"gpus": 2, "cells": {}}'}) == {
        "n2": parse_ledger({"n2": '{"gpus": 2}'})["n2"]
    }
    assert parse_ledger(None) == {}


def test_facts_of_a_pod_as_the_api_gives_it():
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(
            namespace="team",
            name="p",
            uid="u1",
            labels={"runai-gpu-group": "g1", "runai-gpu-group/g2": "g2"},
            annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "main"},
            owner_references=[client.V1OwnerReference(api_version="batch/v1", kind="Job", name="train", uid="j")],
        ),
        spec=client.V1PodSpec(
            node_name=NODE,
            scheduler_name="kai-scheduler",
            containers=[
                client.V1Container(
                    name="side", resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": "2"})
                ),
                client.V1Container(
                    name="main", resources=client.V1ResourceRequirements(requests={"nvidia.com/gpu": "1"})
                ),
            ],
        ),
        status=client.V1PodStatus(phase="Running"),
    )
    f = facts_of(client.ApiClient().sanitize_for_serialization(pod))  # the API's JSON, in the client's field names
    assert (f.key, f.uid, f.node, f.gpus, f.groups, f.fraction, f.finished, f.owner, f.fraction_container) == (
        "team/p",
        "u1",
        NODE,
        3,
        ("g1", "g2"),
        0.5,
        False,
        "train",
        "1",
    )
    labels = {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81920"}
    node = client.V1Node(
        metadata=client.V1ObjectMeta(name=NODE, labels=labels),
        status=client.V1NodeStatus(allocatable={"nvidia.com/gpu": "4"}),
    )
    as_json = client.ApiClient().sanitize_for_serialization
    assert node_shape(as_json(node)) == NodeShape(8, 81920)  # the count label wins, as in KAI
    node.metadata.labels = {}
    assert node_shape(as_json(node)) == NodeShape(4, None)


def test_a_fractional_pod_gets_a_shared_gpu_configmap_name_before_kai_binds_it():
    rand = random.Random(1)
    pending = fraction("a-very-long-pod-name-that-goes-on-and-on-and-on", 0.5, None)
    prep = shared_gpu_prep(pending, "kai-scheduler", rand)
    assert prep is not None and prep.annotate and prep.prefix.endswith("-shared-gpu")
    assert all(len(name) + len("-vol") <= 63 for name in prep.configmaps)
    assert prep.configmaps == (f"{prep.prefix}-0", f"{prep.prefix}-0-evar")
    # already named (by admission, or by the ledger before it restarted): the ConfigMaps only
    named = fraction("b", 0.5, None, configmap_prefix="b-xyz-shared-gpu")
    assert shared_gpu_prep(named, "kai-scheduler", rand).annotate is False
    # bound, not a fraction, or not KAI's: nothing
    assert shared_gpu_prep(fraction("c", 0.5, "g1"), "kai-scheduler", rand) is None
    assert shared_gpu_prep(whole("d", 1, node=None), "kai-scheduler", rand) is None
    assert shared_gpu_prep(fraction("e", 0.5, None), "default-scheduler", rand) is None
    assert CONFIGMAP_ANNOTATION == "runai/shared-gpu-configmap"


def test_cells_name_their_kinds():
    t = topo(gpus=2)
    t.update(whole("a", 1))
    t.update(reservation("gpu-reservation-1", "g1"))
    kinds = {c.gpu: {h.kind for h in c.holders} for c in t.cells()[NODE]}
    assert kinds == {"0": {WHOLE}, "1": {RESERVATION}}
    t.update(fraction("f", 0.25, "g1"))
    assert {h.kind for h in t.cells()[NODE][1].holders} == {RESERVATION, FRACTION}


def test_the_local_runtime_starts_the_ledger_by_a_module_path_that_runs(tmp_path):
    import subprocess

    from kailab.runtimes import local_kai

    spec = local_kai.gpu_ledger_spec(tmp_path / "kubeconfig")
    argv = spec.argv
    module = argv[argv.index("-m") + 1]
    assert module == "kailab.runtimes.gpu_ledger"
    out = subprocess.run([argv[0], "-m", module, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--health-port" in out.stdout


def _pod_event(kind: str, metadata_after: dict | None = None) -> dict:
    """A pod's watch event with its members in the order the API server writes them (ObjectMeta's Go struct order,
    managedFields last), with text in its strings that looks like the markers the ledger cuts at."""
    tricky = ',"managedFields":[ ]},"spec":{ "name":"x" \\"quoted\\"'
    metadata = {
        "name": "p",
        "generateName": "p-",
        "namespace": "team",
        "uid": "u1",
        "resourceVersion": "42",
        "labels": {"runai-gpu-group": "g1"},
        "annotations": {"gpu-fraction": "0.5", "note": tricky},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j"}],
        "finalizers": ["x/y"],
        "managedFields": [
            {
                "manager": "kwok",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-01-01T00:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {".": {}, "f:runai-gpu-group": {}}},
                    "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:resources": {}}}},
                },
                "subresource": "status",
            }
        ],
        **(metadata_after or {}),
    }
    pod = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": metadata,
        "spec": {
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}, "args": [tricky]}],
            "nodeName": NODE,
            "schedulerName": "kai-scheduler",
        },
        "status": {"phase": "Running"},
    }
    return {"type": kind, "object": pod}


def _lean(event: dict) -> dict:
    """The event without its pod's managedFields."""
    meta = {k: v for k, v in event["object"]["metadata"].items() if k != "managedFields"}
    return {**event, "object": {**event["object"], "metadata": meta}}


def _line(event: dict) -> bytes:
    import json

    return json.dumps(event, separators=(",", ":")).encode()


def test_a_pod_change_is_read_without_its_managed_fields_and_gives_the_same_facts():
    import json

    from kailab.lean_lines import without_managed_fields

    for kind in ("ADDED", "MODIFIED", "DELETED"):
        event = _pod_event(kind)
        lean = json.loads(without_managed_fields(_line(event)))
        assert lean == _lean(event)
        assert facts_of(lean["object"]) == facts_of(event["object"])
    bookmark = b'{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"7"}}}'
    assert without_managed_fields(bookmark) == bookmark
    # a server that wrote a member the ledger reads after managedFields: the line is kept whole
    moved = _pod_event("ADDED")
    meta = moved["object"]["metadata"]
    meta["labels"] = meta.pop("labels")  # now after managedFields
    assert without_managed_fields(_line(moved)) == _line(moved)


def test_the_ledgers_pod_watch_reads_each_event_lean_however_the_answer_is_cut():
    import json

    from kailab.lean_lines import lean_watch, without_managed_fields

    events = [_pod_event(kind) for kind in ("ADDED", "MODIFIED", "DELETED")]
    body = b"".join(_line(e) + b"\n" for e in events)

    class Answer:
        status = 200

        def __init__(self, size):
            self.size = size

        def stream(self, amt=None, decode_content=True):
            return (body[i : i + self.size] for i in range(0, len(body), self.size))

    for size in (7, 500, len(body)):
        answer = lean_watch(lambda size=size, **kw: Answer(size), without_managed_fields)(
            watch=True, _preload_content=False
        )
        assert answer.status == 200  # all else is the client's answer's own
        read = b"".join(answer.stream(amt=None, decode_content=False))
        assert [json.loads(line) for line in read.split(b"\n") if line] == [_lean(e) for e in events]
    listed = object()
    assert (
        lean_watch(lambda **kw: listed, without_managed_fields)(_preload_content=False) is listed
    )  # a list is not a watch


def test_the_ledger_queues_a_pods_change_only_when_a_fact_of_it_changed():
    """A change of a pod's status alone (most of its changes) moves no fact: the driver's thread never sees it."""
    import copy

    from kailab.runtimes.gpu_ledger.driver import Driver

    driver = Driver(kube=None)
    pod = _lean(_pod_event("ADDED"))["object"]
    running = copy.deepcopy(pod)
    running["status"] = {"phase": "Running", "podIP": "10.0.0.1"}
    done = copy.deepcopy(running)
    done["status"]["phase"] = "Succeeded"
    for kind, obj in [("ADDED", pod), ("MODIFIED", running), ("MODIFIED", done), ("MODIFIED", done)]:
        driver._pod_changed(kind, obj)
    driver._pod_changed("DELETED", done)
    driver._pod_changed("ADDED", pod)  # made again with the same name: seen again
    queued = []
    while not driver.events.empty():
        queued.append(driver.events.get())
    assert [(kind, facts.finished) for _, kind, facts in queued] == [
        ("ADDED", False),
        ("MODIFIED", True),
        ("DELETED", True),
        ("ADDED", False),
    ]
    assert queued[0][2] == facts_of(pod)
    driver.topology.set_node(NODE, NodeShape(8))
    for event in queued:
        driver.handle(event)
    assert list(driver.topology.pods) == ["team/p"]
    assert [h.name for h in driver.topology.holders()[(NODE, "0")]] == ["p"]
