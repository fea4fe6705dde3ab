"""A learner's recovery mid-class (issue 42, item 3): ``class reset`` puts one slice back to clean and keeps their
records and kubeconfig, ``class add`` brings a late joiner in without touching anyone else, a learner's ``kailab
down`` keeps their records, and a scheduler a lesson cut short left stopped is restored when the next lesson starts.
The fleet test (tests/fleet/test_class_fleet.py) proves the same on the real KAI."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kailab import partitions
from kailab.classroom import access, joined, records
from kailab.classroom.klass import Class
from kailab.classroom.roster import from_names
from kailab.errors import KailabError, RosterError
from kailab.fleet import load_fleet
from kailab.labels import LAB_ID_LABEL, NODEPOOL_LABEL
from kailab.progress import Progress
from kailab.scheduler_settings import SchedulerSettings


class _Host:
    """A PartitionHost that records what it is asked; its schedulers are fakes that remember their settings."""

    def __init__(self, folder: Path, stopped: set[str] = frozenset()):
        self.folder = folder
        self.started: list[tuple[str, SchedulerSettings]] = []
        self.stopped_now = set(stopped)

    def ready(self, kube) -> None:
        pass

    def control(self, kube, partition: str):
        host = self

        class Control:
            def start(self, settings=None):
                host.started.append((partition, SchedulerSettings.of(settings)))

        return Control()

    def usage_db_url(self):
        return None

    def cores_short(self, partitions: int) -> str:
        return ""

    def open_beyond_loopback(self):
        return []


class _Kube:
    """Enough of a cluster for a reset: every call kept, in order."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.kubeconfig, self.context = "kc", None
        namespaces = [
            SimpleNamespace(metadata=SimpleNamespace(name="ann-quota")),
            SimpleNamespace(metadata=SimpleNamespace(name="ann-gang")),
        ]
        kube = self

        class Core:
            def list_namespace(self, label_selector):
                kube.calls.append(("list_namespace", label_selector))
                return SimpleNamespace(items=namespaces)

            def delete_collection_node(self, label_selector, **_):
                kube.calls.append(("delete_nodes", label_selector))
                return SimpleNamespace(read=lambda: b"")  # the answer, read (_preload_content=False)

            def list_node(self, label_selector):
                return SimpleNamespace(items=[])

            def delete_collection_namespaced_config_map(self, *a, **k):
                raise AssertionError("a lesson record was deleted")

        self.core = Core()

    def get(self, api, kind, name, namespace=None):
        self.calls.append(("get", kind, name))
        return {"metadata": {"name": name}}

    def crd(self, name):  # its metadata alone
        self.calls.append(("get", "CustomResourceDefinition", name))
        return {"name": name}

    def apply(self, obj):
        self.calls.append(("apply", obj["kind"], obj["metadata"]["name"]))

    def empty_namespace(self, name):
        self.calls.append(("empty", name))

    def list(self, api, kind, label_selector="", namespace=None):
        if namespace is not None:  # an operator's objects in a lesson namespace: none here
            self.calls.append(("list", kind, namespace))
            return []
        return [{"metadata": {"name": f"ann-{kind.lower()}"}}] if LAB_ID_LABEL in label_selector else []

    def delete(self, api, kind, name, namespace=None):
        self.calls.append(("delete", kind, name))


def _class(tmp_path: Path, learners: list[str]) -> tuple[Class, _Host]:
    host = _Host(tmp_path)
    (tmp_path / "class.json").write_text(json.dumps({"learners": learners}))
    return Class(host), host  # type: ignore[arg-type]


def test_reset_puts_one_slice_back_to_clean_and_keeps_its_records_namespaces_and_credential(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr("kailab.fleet.create_fleet", lambda kube, fleet, timeout, nodes, logs_hint: made.extend(nodes))
    klass, host = _class(tmp_path, ["ann", "bob"])
    kube = _Kube()
    monkeypatch.setattr("kailab.classroom.klass.Kube", lambda kubeconfig, context: kube)
    assert klass.reset(kube, ["ann"], load_fleet(), Progress(quiet=True)) == ["ann"]
    assert host.started == [("ann", SchedulerSettings())]  # running, with the lab's defaults
    assert ("empty", "ann-quota") in kube.calls and ("empty", "ann-gang") in kube.calls
    assert not any(c[0] == "delete" and c[1] == "Namespace" for c in kube.calls)  # their namespaces stay
    assert {c[1] for c in kube.calls if c[0] == "delete"} == {"Queue", "PriorityClass", "Topology"}
    assert [c for c in kube.calls if c[0] == "delete_nodes"] == [
        ("delete_nodes", f"{partitions.node_selector('ann')},{partitions.owner('ann').selector()}")
    ]
    assert made and {n["metadata"]["labels"][NODEPOOL_LABEL] for n in made} == {"ann"}  # made again, as the fleet
    assert not any("bob" in str(c) for c in kube.calls)  # nobody else is touched
    assert not any(c[0] == "apply" for c in kube.calls)  # the shard is there: not made again
    assert klass.learners() == ["ann", "bob"]


def test_reset_remakes_a_shard_that_is_gone(tmp_path, monkeypatch):
    monkeypatch.setattr("kailab.fleet.create_fleet", lambda *a, **k: None)
    klass, host = _class(tmp_path, ["ann"])
    kube = _Kube()
    kube.get = lambda api, kind, name, namespace=None: None  # type: ignore[method-assign]
    monkeypatch.setattr("kailab.classroom.klass.Kube", lambda kubeconfig, context: kube)
    klass.reset(kube, ["ann"], load_fleet(), Progress(quiet=True))
    assert ("apply", "SchedulingShard", "ann-shard") in kube.calls and host.started == [("ann", SchedulerSettings())]


class _NoCluster:
    def __getattr__(self, name):
        raise AssertionError(f"the cluster was used ({name})")


def test_reset_and_add_refuse_a_name_with_nothing_changed(tmp_path):
    klass, host = _class(tmp_path, ["ann"])
    with pytest.raises(KailabError, match="No learner named zoe") as e:
        klass.reset(_NoCluster(), ["zoe"], load_fleet(), Progress(quiet=True))
    assert "Learners: ann" in e.value.hint
    with pytest.raises(RosterError, match="Already in this lab's class: ann. Nothing was applied") as e:
        klass.add(_NoCluster(), from_names(["ann", "bob"]), load_fleet(), Progress(quiet=True), tmp_path / "out")
    assert "class reset --learner" in e.value.hint
    assert klass.learners() == ["ann"] and host.started == [] and not (tmp_path / "out").exists()


def test_add_makes_only_the_late_joiners_partition_and_kubeconfig(tmp_path, monkeypatch):
    klass, _ = _class(tmp_path, ["ann"])
    upped, granted = [], []
    monkeypatch.setattr(
        Class,
        "up",
        lambda self, kube, roster, fleet, progress, available=None: upped.append(roster.names) or list(roster.names),
    )
    monkeypatch.setattr(
        access, "grant", lambda kube, names, out, force, url, server: granted.append((names, out, server))
    )
    got = klass.add("kube", from_names(["bob"]), load_fleet(), Progress(quiet=True), tmp_path, server="https://x:1")
    assert got == ["bob"] and upped == [("bob",)]
    assert granted == [(["bob"], tmp_path, "https://x:1")]  # ann's kubeconfig is not written again


def _recording(control) -> records.Recording:
    engine = SimpleNamespace(cluster=SimpleNamespace(scheduler=control), progress=Progress(quiet=True))
    return records.Recording(engine, None, "ann")  # type: ignore[arg-type]


class _Control:
    def __init__(self, running: bool, settings: SchedulerSettings):
        self._running, self.settings, self.starts = running, settings, []

    def running(self) -> bool:
        return self._running

    def start(self, settings=None):
        self.starts.append(settings)


@pytest.mark.parametrize(
    "running, settings, found",
    [
        (False, SchedulerSettings(), "stopped"),
        (True, SchedulerSettings(gpu_placement="spread"), "running with"),
        (True, SchedulerSettings(), None),
    ],
)
def test_a_lesson_starts_from_a_running_scheduler_with_the_labs_defaults_and_says_when_it_was_not(
    running, settings, found, capsys
):
    control = _Control(running, settings)
    _recording(control).restore_scheduler()
    said = capsys.readouterr().err
    if found is None:
        assert control.starts == [] and said == ""
    else:  # said even when the lesson runs quietly (--json): on stderr
        assert control.starts == [SchedulerSettings()]
        assert f"ann's scheduler was {found}" in said and "restarting it with the lab's defaults" in said


def test_a_learners_down_keeps_their_lesson_records_and_leaves_their_scheduler_running(tmp_path, monkeypatch):
    kube = _Kube()
    started = []
    monkeypatch.setattr("kailab.kube.Kube", lambda path: kube)  # joined.py imports these where it uses them
    monkeypatch.setattr(joined, "whoami", lambda kube, path: "learner-ann")
    monkeypatch.setattr(
        "kailab.shards.ShardSchedulerControl",
        lambda kube, learner: SimpleNamespace(start=lambda settings=None: started.append((learner, settings))),
    )
    kube.get = lambda api, kind, name, namespace=None: {"metadata": {"name": name}}  # type: ignore[method-assign]
    from kailab import labdir

    labdir.claim(tmp_path)
    (tmp_path / joined.FILE).write_text(json.dumps({"learner": "ann", "kubeconfig": str(tmp_path / "ann.kubeconfig")}))
    done = joined.leave(joined.Joined("ann", tmp_path / "ann.kubeconfig"), tmp_path)
    assert "ann-kailab-quota" in done and started == [("ann", SchedulerSettings())]
    assert joined.current(tmp_path) is None  # this folder has left the class


@pytest.mark.parametrize("runs", [True, False])
def test_a_learners_explain_says_first_that_their_scheduler_is_stopped(tmp_path, monkeypatch, runs):
    from kailab import explain
    from kailab.lab import LearnerSlice

    monkeypatch.setattr(
        explain, "gather", lambda *a: [explain.Explanation("p", "Pending", "x"), explain.Explanation("q", "Bound", "y")]
    )
    lab = LearnerSlice(tmp_path, joined.Joined("ann", tmp_path / "ann.kubeconfig"))
    lab.__dict__.update(
        kube=None,
        view=SimpleNamespace(fair_shares=lambda: {}, per_queue=lambda figure: None, nodes=None),
        control=SimpleNamespace(running=lambda: runs),
    )
    pending, bound = lab.explain("p", "ann-kailab-quota")
    assert bound.details == []
    if runs:
        assert pending.details == []
    else:
        assert "ann's scheduler is stopped" in pending.details[0]
        assert "kailab class reset --learner ann" in pending.details[0]


@pytest.mark.parametrize("runs", [True, False])
def test_a_joined_learners_status_shows_their_slice_not_no_lab_is_running(tmp_path, runs):
    """``kailab status`` for a joined learner (it said "No lab is running → kailab up"): the class's API server and
    their scheduler as components, and only their nodes, queues and lesson namespaces' pods — each asked with their
    slice's selectors, never the whole cluster's (their credential may not list it)."""
    from kailab.lab import LearnerSlice
    from kailab.pods import pod_view
    from kailab.view import View

    asked: list[tuple] = []
    node = {"metadata": {"name": "ann-kwok-a100-0", "labels": {}}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
    pod = {
        "metadata": {"name": "w-0", "namespace": "ann-kailab-quota", "labels": {"kai.scheduler/queue": "ann-team"}},
        "spec": {"nodeName": "ann-kwok-a100-0", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
        "status": {"phase": "Running"},
    }

    def list_node(**kw):
        asked.append(("nodes", kw.get("label_selector")))
        return SimpleNamespace(data=json.dumps({"items": [node]}).encode())

    def refused(*a, **kw):  # the whole cluster's pods, or the API server's own metrics: not a learner's
        raise RuntimeError("403")

    kube = SimpleNamespace(
        api=SimpleNamespace(configuration=SimpleNamespace(host="https://192.0.2.7:6443"), param_serialize=refused),
        core=SimpleNamespace(list_node=list_node, list_pod_for_all_namespaces=refused, list_namespaced_pod=refused),
        pods=lambda ns: asked.append(("pods", ns)) or [pod],
        list=lambda api, kind, label_selector=None: asked.append(("queues", label_selector)) or [],
    )
    lab = LearnerSlice(tmp_path, joined.Joined("ann", tmp_path / "ann.kubeconfig"))
    view = View(queues="kai.scheduler/node-pool=ann", nodes="sel-ann", namespaces=lambda k: ["ann-kailab-quota"])
    lab.__dict__.update(kube=kube, view=view, control=SimpleNamespace(running=lambda: runs))
    status = lab.status(with_queues=True)
    assert status["runtime"] == "class" and status["healthy"] is runs
    assert [c["name"] for c in status["components"]] == ["the class's API server", "your scheduler (ann)"]
    assert status["components"][0]["detail"] == "https://192.0.2.7:6443"
    assert status["nodes"] == [{"name": "ann-kwok-a100-0", "pool": "-", "gpus": 8, "used": 2, "free": 6}]
    assert ("nodes", "sel-ann") in asked and ("pods", "ann-kailab-quota") in asked
    assert ("queues", "kai.scheduler/node-pool=ann") in asked
    assert pod_view(pod).gpus == 2  # the row's "used" is the pod's GPUs, as status counts them
