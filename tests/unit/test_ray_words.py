"""A RayCluster in a scenario: the object kailab applies, what the scenario needs of a cluster, and who starts
KubeRay. Its bad inputs are in tests/badinput/scenarios/ray-*.yaml; on the real KAI and KubeRay:
tests/fleet/test_operators_on_kai.py."""

from __future__ import annotations

from types import SimpleNamespace

from kailab import operators, parallel
from kailab.checks import unable
from kailab.labels import QUEUE_LABEL, WORKLOAD_LABEL
from kailab.paths import EXERCISES
from kailab.progress import Progress
from kailab.scenarios.engine import Engine
from kailab.scenarios.live import LiveCluster
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import workload_objects
from kailab.scenarios.objects import OPERATED_KINDS
from kailab.scenarios.replay import ReplayCluster

RAY_GANG = EXERCISES / "ray-gang.yaml"


def test_a_ray_cluster_is_one_object_with_the_queue_label_where_kais_grouper_reads_it():
    s = load_scenario(RAY_GANG)
    ray = s.workload("ray")
    (obj,) = workload_objects(ray, s)
    assert (obj["apiVersion"], obj["kind"]) in operators.OPERATORS["kuberay"].kinds
    assert obj["metadata"]["labels"][QUEUE_LABEL] == "gang-demo"  # the top owner: CalcPodGroupQueue reads it first
    head = obj["spec"]["headGroupSpec"]["template"]
    (group,) = obj["spec"]["workerGroupSpecs"]
    assert (group["groupName"], group["replicas"], group["minReplicas"]) == ("gpu-workers", 4, 2)
    assert group["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert "limits" not in head["spec"]["containers"][0]["resources"]  # the head: gpus: 0
    # kailab counts the pods KubeRay makes by the workload label on both templates
    assert head["metadata"]["labels"][WORKLOAD_LABEL] == group["template"]["metadata"]["labels"][WORKLOAD_LABEL]
    assert ray.total_pods == 5
    no_queue = s.workload("ray-no-queue")
    assert QUEUE_LABEL not in workload_objects(no_queue, s)[0]["metadata"]["labels"]


def test_every_operated_kind_is_one_an_operator_of_kailabs_serves():
    served = {kind for op in operators.OPERATORS.values() for _, kind in op.kinds}
    assert set(OPERATED_KINDS) <= served


def test_a_scenario_with_a_ray_cluster_needs_kuberay_and_a_cluster_without_it_says_so():
    s = load_scenario(RAY_GANG)
    assert "operator:RayCluster" in s.needs
    said = unable(s.needs, frozenset())
    assert "it makes a RayCluster, whose operator this cluster does not run" in said
    assert unable(s.needs, frozenset({"operator:RayCluster"})) == ""


class Control(operators.OperatorControl):
    def __init__(self, runs=frozenset(operators.OPERATORS)):
        self.runs = runs
        self.asked: list[str] = []

    def ensure(self, name, progress):
        self.asked.append(name)

    def status(self):
        return []

    def can_run(self):
        return self.runs


def test_a_lab_with_operators_can_run_their_kinds_and_one_without_cannot():
    kube = SimpleNamespace()
    assert "operator:RayCluster" in LiveCluster(kube, operators=Control()).abilities()  # type: ignore[arg-type]
    only_jobset = LiveCluster(kube, operators=Control(frozenset({"jobset"})))  # type: ignore[arg-type]
    assert "operator:JobSet" in only_jobset.abilities() and "operator:RayCluster" not in only_jobset.abilities()
    assert not any(a.startswith("operator:") for a in LiveCluster(kube).abilities())  # type: ignore[arg-type]


def test_a_live_cluster_starts_the_operators_the_objects_need():
    control = Control()
    cluster = LiveCluster(SimpleNamespace(), operators=control)  # type: ignore[arg-type]
    s = load_scenario(RAY_GANG)
    cluster.ensure_operators([o for w in s.workloads for o in workload_objects(w, s)], Progress(quiet=True))
    assert control.asked == ["kuberay"]


def test_the_engine_asks_for_the_operator_before_the_first_step_and_only_then():
    asked = []

    class Replay(ReplayCluster):
        def ensure_operators(self, objects, progress):
            asked.append(sorted({o["kind"] for o in objects}))
            assert not [c for c in self.calls if c[0] == "apply" and c[1].startswith("RayCluster/")]

    Engine(Replay([]), Progress(quiet=True)).run(load_scenario(RAY_GANG))
    assert asked == [["Job", "RayCluster"]]
    asked.clear()
    Engine(Replay([]), Progress(quiet=True)).run(load_scenario(EXERCISES / "gang.yaml"))
    assert asked == []


def test_side_by_side_runs_ray_gang_in_the_lab_itself_for_its_default_queue():
    assert parallel.in_the_lab_itself("ray-gang")  # its RayCluster without a queue label: default-queue
    # the lab's cluster offers the operators, a partition's does not
    assert parallel.in_the_lab_itself("ray-sharing") and parallel.in_the_lab_itself("ray-autoscale")
    assert not parallel.in_the_lab_itself("fractions")
    assert parallel.in_the_lab_itself("baseline")  # the default kube-scheduler
    assert not parallel.in_the_lab_itself("gang")


def test_operators_with_no_crd_on_the_cluster_cost_one_read_each_and_no_listing():
    read, listed = [], []
    kube = SimpleNamespace(
        crd=lambda name: read.append(name) or ({"name": name} if name == "rayclusters.ray.io" else None),
        list=lambda api, kind, namespace=None: listed.append(kind) or [{"metadata": {"name": "r"}}],
        delete=lambda api, kind, name, ns: listed.append(f"deleted {kind}/{name}"),
    )
    operators.delete_workloads(kube, "ns")  # type: ignore[arg-type]
    assert set(read) >= {c for op in operators.OPERATORS.values() for c in op.crds if op.name != "kuberay"}
    assert [k for k in listed if not k.startswith("deleted")] == ["RayCluster", "RayJob", "RayService"]
    assert "deleted RayCluster/r" in listed


def test_an_existing_cluster_can_run_only_the_operators_installed_there(monkeypatch):
    from kailab.runtimes import existing_operators

    found = [
        existing_operators.Found(operators.OPERATORS["kuberay"], (), "ray-system/kuberay-operator"),
        existing_operators.Found(operators.OPERATORS["jobset"], ("jobsets.jobset.x-k8s.io",), None),
        existing_operators.Found(operators.OPERATORS["lws"], (), None, unread="Deployments: 403 Forbidden"),
        existing_operators.Found(operators.OPERATORS["training-operator"], (), None),
    ]
    control = existing_operators.ExistingOperators(SimpleNamespace())  # type: ignore[arg-type]
    monkeypatch.setattr(existing_operators, "find_all", lambda kube: found)
    assert control.can_run() == {"kuberay", "lws"}
    assert "RayCluster" in control.kinds() and "JobSet" not in control.kinds()


def test_an_existing_clusters_findings_name_the_lessons_an_operator_lets_run():
    from kailab.runtimes.existing_operators import lessons_of

    assert lessons_of(operators.OPERATORS["kuberay"]) == ["ray-gang", "ray-sharing", "ray-autoscale"]
    assert lessons_of(operators.OPERATORS["jobset"]) == ["jobset-lws"]
    assert lessons_of(operators.OPERATORS["lws"]) == ["jobset-lws"]
    assert lessons_of(operators.OPERATORS["training-operator"]) == ["pytorchjob"]


def test_a_learner_who_may_not_read_crds_still_has_their_namespaces_operator_objects_deleted():
    from kubernetes.client.exceptions import ApiException

    def refused(name):
        raise ApiException(status=403, reason="Forbidden")

    deleted = []
    kube = SimpleNamespace(
        crd=refused,
        list=lambda api, kind, namespace=None: [{"metadata": {"name": "r"}}] if kind == "RayCluster" else [],
        delete=lambda api, kind, name, ns: deleted.append(f"{kind}/{name} in {ns}"),
    )
    operators.delete_workloads(kube, "ns")  # type: ignore[arg-type]
    assert deleted == ["RayCluster/r in ns"]
