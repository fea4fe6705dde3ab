"""`kailab explain` for the pods an operator makes: the PodGroup KAI made of the top owner, and the rules that
recognise an operator's common failures (kailab/explain_operated.py)."""

from __future__ import annotations

from kailab import operators
from kailab.explain import Facts, explain_pod, gather
from kailab.explain_operated import Gang, apply_rules, gang_of, kind_named
from kailab.labels import POD_GROUP_ANNOTATION, QUEUE_LABEL
from kailab.pods import PodView

NODES = [{"name": "kwok-a100-0", "pool": "a100", "gpus": 8, "free": 8}]
GANG_SHORT = "Resources were found for 0 pods while 3 are required for gang scheduling."


def gang(**changes) -> Gang:
    base = {
        "kind": "RayCluster",
        "owner": "ray",
        "pod_group": "pg-ray-1",
        "size": "minMember 3",
        "queue": "team-research",
        "operator": "KubeRay",
        "grouper": "pkg/podgrouper/podgrouper/plugins/ray/",
    }
    return Gang(**{**base, **changes})


def ray_pod(name="ray-workers-x", queue="team-research", gpus=1.0, node="") -> PodView:
    return PodView(
        name,
        namespace="ns",
        queue=queue,
        scheduler="kai-scheduler",
        gpus=gpus,
        node=node,
        phase="Running" if node else "Pending",
        pod_group="pg-ray-1",
    )


def test_every_pod_of_an_operators_gang_says_which_podgroup_kai_made_of_which_owner():
    details, runbook = apply_rules("Pending", "team-research", gang(), "runbooks/gang-not-binding.md")
    assert runbook == "runbooks/gang-not-binding.md"  # nothing wrong but the gang: the general runbook
    (line,) = details
    assert "RayCluster 'ray'" in line and "PodGroup 'pg-ray-1'" in line and "minMember 3" in line
    assert "KubeRay" in line and "plugins/ray/" in line
    assert apply_rules("Pending", "x", None, "runbooks/too-big.md") == ([], "runbooks/too-big.md")  # not an operator's


def test_a_queue_label_on_the_template_only_is_recognised():
    details, runbook = apply_rules("Bound", "team-research", gang(queue="default-queue", owner_labelled=False), "")
    assert runbook == "runbooks/operator-queue-on-template.md"
    assert "its RayCluster has none" in details[1] and "'default-queue'" in details[1] and QUEUE_LABEL in details[1]
    # the head, whose template has no label: nothing to say of the label, the gang line only
    assert apply_rules("Bound", "", gang(queue="default-queue", owner_labelled=False), "")[1] == ""
    # every template labelled, so the first pod had it: the label worked
    assert apply_rules("Bound", "team-research", gang(owner_labelled=False), "")[1] == ""


def test_templates_that_disagree_on_the_queue_are_recognised_whichever_pod_came_first():
    for first in ("default-queue", "team-research"):  # the head's (no label) or a worker's
        g = gang(queue=first, owner_labelled=False, pod_queues=("", "team-research"))
        for label in ("", "team-research"):  # the head, a worker
            details, runbook = apply_rules("Bound", label, g, "")
            assert runbook == "runbooks/operator-queue-on-template.md", (first, label)
            assert "templates disagree (none, 'team-research')" in details[1] and f"'{first}' now" in details[1]


def test_the_owners_label_wins_over_the_templates():
    details, runbook = apply_rules("Pending", "team-b", gang(queue="team-a"), "runbooks/gang-not-binding.md")
    assert runbook == "runbooks/operator-queue-on-template.md"
    assert "RayCluster's own label says 'team-a'" in details[1]


def test_a_worker_group_too_big_for_any_node_keeps_the_whole_gang_waiting():
    big = gang(too_big=("ray-big-worker-x", 16.0, 8.0))
    details, runbook = apply_rules("Pending", "team-research", big, "runbooks/gang-not-binding.md")
    assert runbook == "runbooks/operator-group-too-big.md"
    assert "'ray-big-worker-x'" in details[1] and "16 GPUs" in details[1] and "largest node has 8" in details[1]
    assert "whole gang waits" in details[1]
    # KAI's own too-big words on the big pod itself: the operator's runbook says more
    assert (
        apply_rules("Pending", "team-research", big, "runbooks/too-big.md")[1] == "runbooks/operator-group-too-big.md"
    )
    assert apply_rules("Bound", "team-research", big, "")[1] == ""  # bound: it did not wait for that
    # a runbook of a more specific cause stays
    assert apply_rules("Pending", "team-research", big, "runbooks/stale-gang.md")[1] == "runbooks/stale-gang.md"


def test_explain_pod_reads_the_gangs_queue_not_the_pods_label():
    facts = Facts(gang=gang(queue="default-queue", owner_labelled=False))
    e = explain_pod(ray_pod(), [GANG_SHORT], None, True, True, NODES, facts=facts)
    assert e.state == "Pending" and "queue 'default-queue'" in e.summary, e
    assert e.runbook == "runbooks/operator-queue-on-template.md"
    assert e.details[0].startswith("KAI's pod-grouper walked its owners up to RayCluster 'ray'")
    big = Facts(gang=gang(too_big=("ray-big-worker-x", 16.0, 8.0)))
    e = explain_pod(ray_pod(), [GANG_SHORT], None, True, True, NODES, facts=big)
    assert e.runbook == "runbooks/operator-group-too-big.md", e


class FakeKube:
    """Objects by (kind, name); a kind in ``unserved`` is not served (its CRD is missing)."""

    def __init__(self, objects, pods=(), unserved=()):
        self.objects, self._pods, self.unserved = objects, list(pods), set(unserved)

    def get(self, api_version, kind, name, namespace=None):
        if kind in self.unserved:
            raise LookupError(kind)
        return self.objects.get((kind, name))

    def list(self, api_version, kind, namespace=None, **_):
        return [o for (k, _n), o in self.objects.items() if k == kind]

    def pods(self, namespace):
        return self._pods

    def crd_names(self):
        return {n for (k, n) in self.objects if k == "CustomResourceDefinition"}


def pod_group(name, owner_kind, owner, api_version="ray.io/v1", **spec):
    refs = [{"apiVersion": api_version, "kind": owner_kind, "name": owner, "uid": "u"}]
    return {"metadata": {"name": name, "ownerReferences": refs}, "spec": spec}


def test_gang_of_reads_the_podgroups_owner_and_size_and_the_biggest_pod():
    objects = {
        ("PodGroup", "pg-ray-1"): pod_group("pg-ray-1", "RayCluster", "ray", minMember=3, queue="default-queue"),
        ("RayCluster", "ray"): {"metadata": {"name": "ray", "labels": {}}},
        ("PodGroup", "pg-js"): pod_group("pg-js", "JobSet", "js", "jobset.x-k8s.io/v1alpha2", minSubGroup=2),
        ("JobSet", "js"): {"metadata": {"name": "js", "labels": {QUEUE_LABEL: "q"}}},
        ("PodGroup", "pg-job"): pod_group("pg-job", "Job", "j", "batch/v1", minMember=1),
    }
    peers = [ray_pod(gpus=1), ray_pod("ray-big-x", gpus=16), ray_pod("half", gpus=0.5)]
    got = gang_of(FakeKube(objects), "pg-ray-1", "ns", peers, NODES, {})
    assert got is not None and (got.kind, got.owner, got.size, got.queue) == (
        "RayCluster",
        "ray",
        "minMember 3",
        "default-queue",
    )
    assert got.owner_labelled is False and got.too_big == ("ray-big-x", 16, 8)
    assert got.pod_queues == ("team-research",)
    assert got.operator == "KubeRay" and got.grouper == operators.OPERATORS["kuberay"].grouper
    js = gang_of(FakeKube(objects), "pg-js", "ns", [], NODES, {})
    assert js is not None and js.size == "minSubGroup 2" and js.owner_labelled and js.too_big is None
    assert gang_of(FakeKube(objects), "pg-job", "ns", [], NODES, {}) is None  # a Job's: the general rules
    assert gang_of(FakeKube(objects), "", "ns", [], NODES, {}) is None


def test_a_kind_is_named_as_kind_slash_name_in_any_case():
    op, api_version, kind = kind_named("raycluster/ray") or (None, "", "")
    assert op is operators.OPERATORS["kuberay"] and (api_version, kind) == ("ray.io/v1", "RayCluster")
    assert kind_named("PyTorchJob/t")[2] == "PyTorchJob"  # type: ignore[index]
    assert kind_named("ray") is None and kind_named("Deployment/d") is None


def test_a_kind_the_cluster_does_not_serve_names_its_operator_and_the_lessons_that_need_it():
    (e,) = gather(FakeKube({}), "LeaderWorkerSet/lws", "ns")
    assert e.state == "NotServed" and e.runbook == "runbooks/operator-not-installed.md"
    assert "does not serve LeaderWorkerSet" in e.summary and "LeaderWorkerSet" in e.summary
    assert "leaderworkersets.leaderworkerset.x-k8s.io" in e.summary and "jobset-lws" in e.summary
    assert "installs no CRD" in e.summary


def test_an_operators_object_without_pods_says_its_operator_makes_none():
    crd = ("CustomResourceDefinition", "rayclusters.ray.io")
    objects = {crd: {"metadata": {"name": crd[1]}}, ("RayCluster", "ray"): {"metadata": {"name": "ray"}}}
    for asked in ("ray", "RayCluster/ray"):
        (e,) = gather(FakeKube(objects, unserved=("PyTorchJob", "JobSet")), asked, "ns")
        assert e.state == "NoPods" and e.runbook == "runbooks/operator-not-installed.md", e
        assert "KubeRay makes its pods" in e.summary


def test_an_operators_object_is_explained_by_its_pods_those_of_the_podgroup_it_owns(monkeypatch):
    import kailab.explain as explain

    crd = ("CustomResourceDefinition", "rayclusters.ray.io")
    objects = {
        crd: {"metadata": {"name": crd[1]}},
        ("RayCluster", "ray"): {"metadata": {"name": "ray"}},
        ("PodGroup", "pg-ray-1"): pod_group("pg-ray-1", "RayCluster", "ray", minMember=3),
    }
    mine = {"metadata": {"name": "ray-head-x", "annotations": {POD_GROUP_ANNOTATION: "pg-ray-1"}}}
    other = {"metadata": {"name": "other", "annotations": {POD_GROUP_ANNOTATION: "pg-other"}}}
    seen = {}
    monkeypatch.setattr(explain, "explain_pods", lambda kube, pods, *a, **k: seen.setdefault("pods", pods))
    gather(FakeKube(objects, pods=[mine, other]), "RayCluster/ray", "ns")
    assert seen["pods"] == [mine]


def test_evidence_names_each_pods_gang_and_the_object_kai_walked_up_to():
    from kailab.evidence import gangs

    groups = [
        {
            "metadata": {
                "name": "pg-ray-1",
                "namespace": "ns",
                "ownerReferences": [{"kind": "RayCluster", "name": "ray"}],
            }
        },
        {"metadata": {"name": "pg-bare", "namespace": "ns"}},
    ]
    views = [ray_pod(), PodView("loose", namespace="ns"), PodView("bare", namespace="ns", pod_group="pg-bare")]
    assert gangs(views, groups) == {("ns", "ray-workers-x"): "pg-ray-1: RayCluster/ray", ("ns", "bare"): "pg-bare: -"}


def test_an_owner_this_user_may_not_read_is_not_said_to_lack_the_label():
    class Forbidden(Exception):
        status = 403

    class Learner(FakeKube):
        def get(self, api_version, kind, name, namespace=None):
            if kind == "RayCluster":
                raise Forbidden()
            return super().get(api_version, kind, name, namespace)

    objects = {("PodGroup", "pg-ray-1"): pod_group("pg-ray-1", "RayCluster", "ray", minMember=3)}
    got = gang_of(Learner(objects), "pg-ray-1", "ns", [ray_pod()], NODES, {})
    assert got is not None and got.owner_labelled
