"""The existing runtime's options, state and --kwok plan — everything but the cluster itself."""

from __future__ import annotations

import json

import pytest
import yaml

from kailab import versions
from kailab.errors import KailabError
from kailab.fleet import load_fleet
from kailab.labels import LAB_ID_LABEL, MANAGED
from kailab.labstate import LabState
from kailab.ownership import Owner
from kailab.paths import MANIFESTS
from kailab.runtimes import check_options, choose_runtime, get_runtime
from kailab.runtimes.base import UpOptions

OURS = {**MANAGED, LAB_ID_LABEL: "abc"}


def test_auto_never_adopts_a_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no Docker: local is the only maker left
    chosen, why = choose_runtime("auto")
    assert chosen.traits.name == "local" and "existing" not in why
    assert get_runtime("existing").traits.makes_cluster is False


def test_options_for_the_existing_runtime_are_refused_elsewhere_and_the_reverse():
    fleet = load_fleet()
    local, kind, existing = (get_runtime(n) for n in ("local", "kind", "existing"))
    with pytest.raises(KailabError, match="--prefix is for the existing runtime, not the local runtime"):
        check_options(local, UpOptions(fleet=fleet, prefix="alice"))
    with pytest.raises(KailabError, match="--kubeconfig is for the existing runtime, not the kind runtime"):
        check_options(kind, UpOptions(fleet=fleet, kubeconfig="/tmp/kc"))
    with pytest.raises(KailabError, match="--apiserver-port is for the local runtime, not the existing runtime"):
        check_options(existing, UpOptions(fleet=fleet, apiserver_port=6443))
    with pytest.raises(KailabError, match="only with --kwok"):
        check_options(existing, UpOptions(fleet=fleet, fleet_given=True))
    check_options(
        existing, UpOptions(fleet=fleet, fleet_given=True, kwok=True, prefix="a", context="c", kubeconfig="/k")
    )


def test_an_old_lab_json_still_reads_and_the_new_fields_round_trip(tmp_path):
    (tmp_path / "lab.json").write_text(json.dumps({"runtime": "local", "kubeconfig": "/k", "shape": "s", "gone": 1}))
    old = LabState.read(tmp_path)
    assert (old.runtime, old.lab_id, old.prefix, old.context, old.kwok_objects) == ("local", "", "", "", [])
    LabState(
        "existing",
        "/home/u/.kube/config",
        context="prod",
        prefix="alice",
        lab_id="abc",
        kwok_objects=[{"apiVersion": "v1", "kind": "Service", "name": "kwok-controller", "namespace": "kube-system"}],
    ).write(tmp_path)
    new = LabState.read(tmp_path)
    assert (new.kubeconfig, new.context, new.prefix, new.lab_id) == ("/home/u/.kube/config", "prod", "alice", "abc")
    assert new.kwok_objects[0]["kind"] == "Service"


def test_the_kwok_plan_is_the_pinned_release_then_kailabs_stages_then_the_fleet():
    from kailab.runtimes.existing import FLEET, kwok_plan

    fleet = load_fleet()
    plan = kwok_plan(fleet)
    assert [s.source for s in plan] == [
        f"https://github.com/kubernetes-sigs/kwok/releases/download/{versions.KWOK_VERSION}/kwok.yaml",
        str(MANIFESTS / "kwok-stages.yaml"),
        FLEET,
    ]
    assert versions.KWOK_VERSION in plan[0].title and "no instant pod-complete" in plan[1].title
    assert plan[1].wait_controller and f"{fleet.total_gpus} GPUs" in plan[2].title


def test_every_object_kwok_applies_is_labelled_as_this_labs_and_no_namespace_is_taken():
    from kailab.runtimes.existing import STAGES, manifest_objects

    release = yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "stages.kwok.x-k8s.io"},
            },
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "kwok-controller",
                    "namespace": "kube-system",
                    "labels": {"app": "kwok-controller"},
                },
                "spec": {"template": {"metadata": {"labels": {"app": "kwok-controller"}}}},
            },
        ]
    )
    objects = manifest_objects(release, Owner("abc")) + manifest_objects(STAGES.read_text(), Owner("abc"))
    assert "Namespace" not in {o["kind"] for o in objects}
    assert all(OURS.items() <= o["metadata"]["labels"].items() for o in objects)
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["metadata"]["labels"]["app"] == "kwok-controller"
    assert OURS.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "Stage"} >= {"pod-ready", "node-initialize"}


class RecordingKube:
    """Enough of Kube for the --kwok install: it records applies, and nothing exists before."""

    def __init__(self, home):
        self.applied, self.home = [], home
        self.dyn = type("Dyn", (), {"resources": type("R", (), {"invalidate_cache": lambda self: None})()})()

    def get(self, *args):
        return None

    def apply(self, obj):
        recorded = [r["name"] for r in json.loads((self.home / "lab.json").read_text())["kwok_objects"]]
        assert obj["metadata"]["name"] in recorded, "applied before lab.json names it"
        self.applied.append(obj)


def test_kwok_install_applies_crds_first_records_each_object_and_makes_the_fleet(tmp_path, monkeypatch):
    from kailab.runtimes import existing

    release = yaml.safe_dump_all(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "kwok-controller", "namespace": "kube-system"},
            },
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "stages.kwok.x-k8s.io"},
            },
        ]
    )
    fetched, fleets = [], []
    monkeypatch.setattr(existing, "_established", lambda kube, name: True)
    monkeypatch.setattr(existing, "_available", lambda kube, ns, name: True)
    monkeypatch.setattr(
        existing.ExistingRuntime, "_create_fleet", staticmethod(lambda kube, owner, fleet: fleets.append(fleet))
    )
    rt = existing.ExistingRuntime(tmp_path, fetch=lambda url: fetched.append(url) or release)
    state = LabState("existing", "/k", lab_id="abc")
    state.write(tmp_path)
    kube = RecordingKube(tmp_path)
    rt._install_kwok(kube, Owner("abc"), state, load_fleet(), existing.Progress(quiet=True))
    assert fetched == [existing.kwok_plan(load_fleet())[0].source]
    kinds = [o["kind"] for o in kube.applied]
    assert kinds[:2] == ["CustomResourceDefinition", "Deployment"] and set(kinds[2:]) == {"Stage"}
    assert all(OURS.items() <= o["metadata"]["labels"].items() for o in kube.applied)
    assert [r["name"] for r in LabState.read(tmp_path).kwok_objects] == [o["metadata"]["name"] for o in kube.applied]
    assert fleets == [load_fleet()]


def test_kwok_objects_that_exist_and_are_not_ours_are_refused_before_any_apply(tmp_path, monkeypatch):
    from kailab.runtimes import existing

    release = yaml.safe_dump(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kwok-controller"}}
    )

    class Taken(RecordingKube):
        def get(self, *args):
            return {"metadata": {"labels": {"owner": "platform-team"}}}

    rt = existing.ExistingRuntime(tmp_path, fetch=lambda url: release)
    state = LabState("existing", "/k", lab_id="abc")
    state.write(tmp_path)
    kube = Taken(tmp_path)
    with pytest.raises(KailabError, match="ClusterRole kwok-controller"):
        rt._install_kwok(kube, Owner("abc"), state, load_fleet(), existing.Progress(quiet=True))
    assert kube.applied == [] and LabState.read(tmp_path).kwok_objects == []


def test_queues_are_deleted_children_first():
    from kailab.runtimes.existing import leaves_first

    queues = [
        {"metadata": {"name": n}, "spec": {"parentQueue": p} if p else {}}
        for n, p in [("a", None), ("a-1", "a"), ("a-1-x", "a-1"), ("b", None), ("c", "elsewhere")]
    ]
    order = leaves_first(queues)
    assert order.index("a-1-x") < order.index("a-1") < order.index("a") and set(order) == {
        "a",
        "a-1",
        "a-1-x",
        "b",
        "c",
    }


def test_a_second_up_may_not_point_the_lab_elsewhere(tmp_path):
    from kailab.runtimes.existing import ExistingRuntime

    state = LabState("existing", "/clusters/a.yaml", context="", prefix="alice", lab_id="abc")
    rt = ExistingRuntime(tmp_path)
    rt._refuse_changes(state, UpOptions(fleet=load_fleet()))  # nothing given: the lab as it is
    rt._refuse_changes(state, UpOptions(fleet=load_fleet(), kubeconfig="/clusters/a.yaml", prefix="alice"))
    with pytest.raises(KailabError, match="--prefix bob \\(the lab has alice\\)"):
        rt._refuse_changes(state, UpOptions(fleet=load_fleet(), prefix="bob"))
    with pytest.raises(KailabError, match="--kubeconfig /clusters/b.yaml"):
        rt._refuse_changes(state, UpOptions(fleet=load_fleet(), kubeconfig="/clusters/b.yaml"))


def test_retain_is_honoured_by_the_local_runtime_and_refused_by_the_others_with_why():
    """--retain keeps a half-made local lab; kind and existing always keep theirs, so they refuse it and say so."""
    fleet = load_fleet()
    check_options(get_runtime("local"), UpOptions(fleet=fleet, retain=True))
    for name, keeps in (
        ("kind", "the next kailab up completes it"),
        ("existing", "kailab down removes what it applied"),
    ):
        with pytest.raises(KailabError, match=f"--retain is for the local runtime, not the {name} runtime") as err:
            check_options(get_runtime(name), UpOptions(fleet=fleet, retain=True))
        assert keeps in err.value.hint and "leave out --retain" in err.value.hint
    runtimes = [get_runtime(n) for n in ("local", "kind", "existing")]
    assert all(("retain" in r.traits.takes) != bool(r.traits.after_failed_up) for r in runtimes), (
        "a runtime either takes --retain or says what a failed up leaves"
    )
