"""Whose object is it: the labels a lab stamps, the selectors its cleanup uses, and the refusal to change
another's queue or priority class — decided before anything of a scenario is applied."""

from __future__ import annotations

import pytest

from kailab.checks import FleetNode
from kailab.errors import KailabError
from kailab.labels import LAB_ID_LABEL, MANAGED
from kailab.ownership import Owner, foreign, refused, stamped
from kailab.paths import EXERCISES
from kailab.progress import Progress
from kailab.scenarios.engine import Engine, claims
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.replay import ReplayCluster

OURS = {**MANAGED, LAB_ID_LABEL: "abc"}


def test_a_lab_on_an_adopted_cluster_owns_only_what_carries_its_id():
    me = Owner("abc")
    assert me.owns(OURS)
    assert not me.owns(MANAGED)  # the cluster's own lab (kailab made that cluster), not this one
    assert not me.owns({**MANAGED, LAB_ID_LABEL: "xyz"})  # another learner's lab
    assert not me.owns({LAB_ID_LABEL: "abc"})  # not managed by kailab
    assert not me.owns(None)
    assert (
        me.selector("kailab.io/scenario")
        == "app.kubernetes.io/managed-by=kailab,kailab.io/lab-id=abc,kailab.io/scenario"
    )


def test_the_lab_of_a_cluster_kailab_made_never_selects_a_guest_labs_objects():
    host = Owner()
    assert host.owns(MANAGED) and not host.owns(OURS)
    assert host.selector() == "app.kubernetes.io/managed-by=kailab,!kailab.io/lab-id"
    assert host.labels == MANAGED


def test_foreign_is_what_exists_and_is_not_ours():
    found = {
        "Queue team-prod": {"team": "platform"},
        "Queue mine": OURS,
        "Queue absent": None,
        "PriorityClass urgent": {**MANAGED, LAB_ID_LABEL: "xyz"},
    }
    assert foreign(found, Owner("abc")) == ["PriorityClass urgent", "Queue team-prod"]
    err = refused(["Queue team-prod"])
    assert "Queue team-prod" in err.message and "--prefix" in err.hint and "Nothing was applied" in err.message


def test_stamped_labels_the_object_and_its_pod_template():
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "labels": {"a": "1"}},
        "spec": {"template": {"metadata": {"labels": {"b": "2"}}, "spec": {}}},
    }
    stamped(job, Owner("abc"))
    assert job["metadata"]["labels"] == {"a": "1", **OURS}
    assert job["spec"]["template"]["metadata"]["labels"] == {"b": "2", **OURS}
    crd = stamped({"kind": "CustomResourceDefinition", "metadata": {"name": "x"}, "spec": {"group": "g"}}, Owner("abc"))
    assert crd["metadata"]["labels"] == OURS and "template" not in crd["spec"]


def test_a_scenario_claims_its_queues_set_queues_missing_queues_classes_and_namespace(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nqueues: [{name: q1}]\nmissingQueues: [ghost]\npriorityClasses: [{name: low, value: 10}]\n"
        "workloads: [{name: w, queue: q1}]\nsteps: [{apply: w}, {queue: {name: q9}}]\n"
    )
    assert [(o["kind"], o["metadata"]["name"]) for o in claims(load_scenario(path))] == [
        ("Queue", "q1"),
        ("Queue", "q9"),
        ("Queue", "ghost"),
        ("PriorityClass", "low"),
        ("Namespace", "kailab-s"),
    ]


@pytest.mark.parametrize("namespace", ["default", "kube-system", "team-a"])
def test_a_scenario_naming_a_namespace_that_is_not_the_labs_is_refused_with_a_name_to_use(tmp_path, namespace):
    path = tmp_path / "s.yaml"
    path.write_text(
        f"name: s\nnamespace: {namespace}\nqueues: [{{name: q1}}]\nworkloads: [{{name: w, queue: q1}}]\n"
        "steps: [{apply: w}]\n"
    )
    cluster = Occupied({namespace})
    verdict = Engine(cluster, Progress(quiet=True)).run(load_scenario(path))
    assert not verdict.passed and f"Namespace {namespace}" in verdict.error, verdict.error
    assert cluster.calls == []  # nothing cleared, labelled or applied
    with pytest.raises(KailabError) as err:
        Engine(cluster, Progress(quiet=True)).refuse_foreign([load_scenario(path)])
    assert err.value.message.startswith(f"kailab will not change or delete Namespace {namespace}: it exists")
    assert f"give {path} namespace: kailab-s (or leave namespace: out)" in err.value.hint


class Occupied(ReplayCluster):
    """A cluster where some names are taken by objects this lab did not make."""

    def __init__(self, taken: set[str], abilities=None):
        super().__init__([], node_gpus=[8, 8, 8, 4, 4])
        self.taken = taken
        self._abilities = abilities

    def foreign(self, objects):
        return sorted(f"{o['kind']} {o['metadata']['name']}" for o in objects if o["metadata"]["name"] in self.taken)

    def abilities(self):
        return super().abilities() if self._abilities is None else self._abilities


def test_a_foreign_queue_of_the_same_name_stops_the_scenario_before_anything_is_applied():
    cluster = Occupied({"team-prod"})
    verdict = Engine(cluster, Progress(quiet=True)).run(load_scenario(EXERCISES / "reclaim.yaml"))
    assert not verdict.passed and "Queue team-prod" in verdict.error and "will not change or delete" in verdict.error
    assert cluster.calls == []  # no namespace, no queue, no workload


def test_refuse_foreign_checks_every_scenario_of_a_run_first():
    engine = Engine(Occupied({"gang-demo"}), Progress(quiet=True))
    scenarios = [load_scenario(EXERCISES / f"{n}.yaml") for n in ("quota", "gang")]
    with pytest.raises(KailabError, match="Queue gang-demo"):
        engine.refuse_foreign(scenarios)
    Engine(Occupied(set()), Progress(quiet=True)).refuse_foreign(scenarios)  # nothing taken: no error


@pytest.mark.parametrize(
    "lesson, lacking, words",
    [
        ("placement", {"scheduler-control"}, "reconfigures KAI's scheduler"),
        ("fairshare", {"fair-share"}, "fair share"),
        ("fractions", {"gpu-sharing"}, "GPU fractions"),
        ("time-fairshare", {"usage-db"}, "KAI's usage database"),  # kind: no Prometheus kailab can start
    ],
)
def test_a_scenario_needing_what_the_cluster_lacks_is_not_applicable_and_applies_nothing(lesson, lacking, words):
    from kailab.scenarios.model import ABILITIES

    cluster = Occupied(set(), abilities=frozenset(ABILITIES) - lacking)
    verdict = Engine(cluster, Progress(quiet=True)).run(load_scenario(EXERCISES / f"{lesson}.yaml"))
    assert verdict.outcome == "NOT APPLICABLE" and verdict.ok and cluster.calls == []
    assert verdict.not_applicable.startswith("on this cluster: ") and words in verdict.not_applicable


def test_what_each_lesson_needs_of_the_cluster():
    needs = {p.stem: load_scenario(p).needs for p in EXERCISES.glob("*.yaml")}
    assert {n for n, need in needs.items() if "scheduler-control" in need} == {
        "placement",
        "consolidation",
        "fairshare",
        "time-fairshare",
    }
    assert {n for n, need in needs.items() if "fair-share" in need} == {"fairshare", "time-fairshare"}
    assert {n for n, need in needs.items() if "gpu-sharing" in need} == {"fractions", "ray-sharing"}
    assert {n for n, need in needs.items() if "usage-db" in need} == {"time-fairshare"}


def test_lessons_that_need_the_lesson_fleet_say_so_on_another():
    cluster = Occupied(set())
    cluster._nodes = [FleetNode(f"n{i}", 8) for i in range(5)]  # 40 GPUs: reclaim's borrower would not fill the fleet
    verdict = Engine(cluster, Progress(quiet=True)).run(load_scenario(EXERCISES / "reclaim.yaml"))
    assert (
        verdict.outcome == "NOT APPLICABLE"
        and verdict.not_applicable == "on this fleet: it needs 32 GPUs, the fleet has 40"
    )


def test_clearing_empties_the_labs_namespaces_with_pods_and_the_next_one_only():
    """A namespace with pods holds GPUs: emptied. The next scenario's: emptied (no old Job or event in it).
    Another of the lab's without pods: left as it is. Another lab's: never looked at."""
    from types import SimpleNamespace

    from kailab.scenarios.live import clear_scenarios

    pods = {"kailab-quota": ["p"], "kailab-gang": [], "kailab-borrow": [], "guest-quota": ["q"]}
    emptied, selectors = [], []

    def list_namespace(label_selector):
        selectors.append(label_selector)
        return SimpleNamespace(
            items=[SimpleNamespace(metadata=SimpleNamespace(name=n)) for n in pods if n.startswith("kailab-")]
        )

    kube = SimpleNamespace(
        core=SimpleNamespace(
            list_namespace=list_namespace, list_namespaced_pod=lambda n, limit: SimpleNamespace(items=pods[n][:limit])
        ),
        empty_namespace=emptied.append,
        crd=lambda name: None,  # no operator's CRD: no RayCluster (…) to delete first
    )
    assert clear_scenarios(kube, Owner(), also=("kailab-borrow", "guest-quota")) == ["kailab-quota"]
    assert emptied == ["kailab-quota", "kailab-borrow"]
    assert selectors == [Owner().selector("kailab.io/scenario")]
