"""The real workload operators on the real KAI: each operator's own pods are gang-scheduled by KAI, in the PodGroup its
pod-grouper made, with the minimum KAI v0.17.0's grouper computes for that kind.

One object per operator, each with ``schedulerName: kai-scheduler`` in its pod templates and the queue label on the
object itself (where KAI's pod-grouper reads it: the top owner). The expected gang of each is what the grouper's
source says for that object (pkg/podgrouper/podgrouper/plugins/…, cited beside each); kailab's own code computes none
of it.
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter

import pytest
from waits import until  # tests/fleet/waits.py

from kailab import build, operators, versions
from kailab.labels import MANAGED, POD_GROUP_ANNOTATION, QUEUE_API, QUEUE_LABEL, SUBGROUP_LABEL
from kailab.progress import Progress

NAMESPACE = "operators-proof"
QUEUE = "operators-proof"
PARENT = "operators-proof-parent"
GPU_TEMPLATE = {
    "spec": {
        "schedulerName": "kai-scheduler",
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "main", "image": "fake", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    }
}


def template(container: str = "main", **spec) -> dict:
    out = copy.deepcopy(GPU_TEMPLATE)
    out["spec"]["containers"][0]["name"] = container
    out["spec"].update(spec)
    return out


def meta(name: str) -> dict:
    return {"name": name, "namespace": NAMESPACE, "labels": {QUEUE_LABEL: QUEUE}}


RAY_CLUSTER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": meta("ray-gang"),
    "spec": {
        "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
        "workerGroupSpecs": [
            {
                "groupName": "gpu-workers",
                "replicas": 3,
                "minReplicas": 2,
                "maxReplicas": 4,
                "rayStartParams": {},
                "template": template("ray-worker"),
            }
        ],
    },
}
PYTORCH_JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": meta("torch-gang"),
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template("pytorch")},
            "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": template("pytorch")},
        }
    },
}


def job_template(parallelism: int) -> dict:
    return {
        "spec": {"parallelism": parallelism, "completions": parallelism, "template": template(restartPolicy="Never")}
    }


JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": meta("jobset-gang"),
    "spec": {
        "replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": job_template(1)},
            {"name": "workers", "replicas": 2, "template": job_template(2)},
        ]
    },
}
LWS = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": meta("lws-gang"),
    "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "workerTemplate": template()}},
}

# What KAI v0.17.0's grouper makes of each object above: (pods the operator makes, {PodGroup: its gang}), where a
# gang is (minMember, minSubGroup, {subgroup: (minMember, minSubGroup, parent)}).
EXPECTED = {
    # ray/ray_grouper.go calcJobNumOfPodsAndSubGroups: the head (1) plus each worker group's minReplicas (replicas
    # only where minReplicas is 0) × numOfHosts: 1 + 2 = 3, while KubeRay makes the head and all 3 replicas.
    "kuberay": (
        RAY_CLUSTER,
        4,
        {"ray-gang": (3, None, {"headgroup": (1, None, None), "gpu-workers": (2, None, None)})},
    ),
    # kubeflow/distributed_common.go calcJobNumOfPods: the sum of every replica spec's replicas (no minAvailable,
    # no elasticPolicy): 1 + 3; pytorch/pytorch_grouper.go buildSubGroups: master 1, worker the rest.
    "training-operator": (
        PYTORCH_JOB,
        4,
        {"torch-gang": (4, None, {"master": (1, None, None), "worker": (3, None, None)})},
    ),
    # jobset/jobset_grouper.go: one PodGroup per JobSet (pg-<name>-<uid>) with no minMember of its own (podgroup/
    # handler.go sets minSubGroup instead); minSubGroup
    # = the number of replicatedJobs (startupPolicy AnyOrder); per replicatedJob a parent subgroup needing all its
    # replicas, per replica a leaf needing its Job's parallelism.
    "jobset": (
        JOBSET,
        5,
        {
            "jobset-gang": (
                None,
                2,
                {
                    "driver": (None, 1, None),
                    "driver-replica-0": (1, None, "driver"),
                    "workers": (None, 2, None),
                    "workers-replica-0": (2, None, "workers"),
                    "workers-replica-1": (2, None, "workers"),
                },
            )
        },
    ),
    # leaderworkerset/lws_grouper.go: one PodGroup per LWS group (<PodGroup>-group-<index>); startupPolicy
    # LeaderCreated (the default) needs the whole group, size 3: the leader and 2 workers.
    "lws": (
        LWS,
        6,
        {f"lws-gang-group-{i}": (3, None, {"leader": (1, None, None), "workers": (2, None, None)}) for i in range(2)},
    ),
}


# Where KAI's pod-grouper put each pod: (PodGroup, subgroup) → pods, from the pods' kai.scheduler/subgroup-name,
# which the pod-grouper sets from the labels the operator gave the pod (Operator.pod_labels). The operator's pods
# must look as the grouper expects: a pod without them is in no subgroup (ray_grouper.go only logs it).
MEMBERS = {
    "kuberay": {("ray-gang", "headgroup"): 1, ("ray-gang", "gpu-workers"): 3},
    "training-operator": {("torch-gang", "master"): 1, ("torch-gang", "worker"): 3},
    "jobset": {
        ("jobset-gang", "driver-replica-0"): 1,
        ("jobset-gang", "workers-replica-0"): 2,
        ("jobset-gang", "workers-replica-1"): 2,
    },
    "lws": {(f"lws-gang-group-{i}", sub): n for i in range(2) for sub, n in (("leader", 1), ("workers", 2))},
}


def test_the_ray_gang_lesson_passes_on_kai_and_kuberay_and_replays_to_the_same_verdict(
    kai_lab, kuberay_built, tmp_path
):
    """ray-gang on the real KAI with the real KubeRay (started by the lesson itself): every row PASS, and its
    recorded change stream, replayed offline, gives the same rows. First in this file: the operators' own
    proofs below hold 19 GPUs until the module ends."""
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario
    from kailab.scenarios.replay import replay

    proc = kai_lab.cli("demo", "ray-gang", "--json", "--record", str(tmp_path))
    result = json.loads(proc.stdout or "{}")
    (live,) = result.get("verdicts") or [{"checks": [], "scenario": "?"}]
    failed = [
        f"{c['title']}: expected {c['expected']}, observed {c['observed']}" for c in live["checks"] if not c["passed"]
    ]
    assert proc.returncode == 0 and live["checks"] and not failed, "\n".join(failed) + proc.stderr[-3000:]
    assert not live.get("not_applicable")
    again = replay(load_scenario(EXERCISES / "ray-gang.yaml"), tmp_path / "ray-gang")
    rows = lambda checks: [(c["title"], c["expected"], c["observed"], c["passed"]) for c in checks]  # noqa: E731
    assert rows(c.to_dict() for c in again.checks) == rows(live["checks"])


@pytest.fixture(scope="module")
def proof(lab, operators_built):
    """The lab with a queue of unlimited quota (so no kind's default priority matters) and a namespace to work in."""
    if lab.kai_reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must prove the operators on the real KAI, but KAI cannot be built: {lab.kai_reason}")
        pytest.skip(f"KAI is not available on this machine: {lab.kai_reason}")
    kube = lab.kube
    for name, parent in ((PARENT, None), (QUEUE, PARENT)):
        resources = {r: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for r in ("cpu", "memory", "gpu")}
        spec = {"resources": resources, **({"parentQueue": parent} if parent else {})}
        kube.apply(
            {
                "apiVersion": QUEUE_API,
                "kind": "Queue",
                "metadata": {"name": name, "labels": dict(MANAGED)},
                "spec": spec,
            }
        )
    kube.ensure_namespace(NAMESPACE)
    yield lab
    operators.delete_workloads(kube, NAMESPACE)
    kube.delete_namespace(NAMESPACE)
    for name in (QUEUE, PARENT):
        kube.delete(QUEUE_API, "Queue", name)


def owned_pods(kube, obj: dict) -> list[dict]:
    """The pods of ``obj``: each pod whose chain of owners reaches it (an LWS's workers are owned by a StatefulSet
    its leader pod owns)."""
    pods = kube.pods(NAMESPACE)
    by_uid = {p["metadata"]["uid"]: p for p in pods}
    for kind, api in (("Job", "batch/v1"), ("StatefulSet", "apps/v1")):
        by_uid.update({o["metadata"]["uid"]: o for o in kube.list(api, kind, namespace=NAMESPACE)})
    found = kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], NAMESPACE)
    root = found["metadata"]["uid"] if found else None

    def reaches(o: dict, depth: int = 0) -> bool:
        for ref in o["metadata"].get("ownerReferences") or []:
            if ref["uid"] == root or (depth < 5 and ref["uid"] in by_uid and reaches(by_uid[ref["uid"]], depth + 1)):
                return True
        return False

    return [p for p in pods if reaches(p)]


def gang_of(pg: dict) -> tuple:
    spec = pg["spec"]
    subs = {s["name"]: (s.get("minMember"), s.get("minSubGroup"), s.get("parent")) for s in spec.get("subGroups") or []}
    return (spec.get("minMember"), spec.get("minSubGroup"), subs)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_operators_pods_are_ganged_and_bound_by_kai(proof, name):
    kube = proof.kube
    obj, pod_count, gangs = EXPECTED[name]
    proof.runtime.capabilities().operators.ensure(name, Progress())
    kube.apply(copy.deepcopy(obj))

    def bound() -> list[dict] | None:
        pods = owned_pods(kube, obj)
        done = len(pods) == pod_count and all(p["spec"].get("nodeName") for p in pods)
        return pods if done else None

    pods = until(f"{pod_count} pods of the {obj['kind']} bound", bound, timeout=120)
    assert {p["spec"]["schedulerName"] for p in pods} == {"kai-scheduler"}
    # every pod bound by KAI's binder (a BindRequest per pod), in the PodGroup KAI's pod-grouper named on it
    binds = {b["spec"]["podName"] for b in kube.list("scheduling.run.ai/v1alpha2", "BindRequest", namespace=NAMESPACE)}
    assert {p["metadata"]["name"] for p in pods} <= binds
    groups = {p["metadata"]["annotations"][POD_GROUP_ANNOTATION] for p in pods}
    found = {
        pg["metadata"]["name"]: pg for pg in kube.list("scheduling.run.ai/v2alpha2", "PodGroup", namespace=NAMESPACE)
    }
    made = {}
    for group in groups:
        pg = found[group]
        assert pg["spec"]["queue"] == QUEUE
        made[_short(group, obj, pg)] = gang_of(pg)
    assert made == gangs
    # the facts the grouper reads are on the operator's own pods, and put each pod where the grouper's source says
    op = operators.OPERATORS[name]
    assert [(p["metadata"]["name"], k) for p in pods for k in op.pod_labels if k not in p["metadata"]["labels"]] == []
    members: Counter = Counter()
    for p in pods:
        group = p["metadata"]["annotations"][POD_GROUP_ANNOTATION]
        members[(_short(group, obj, found[group]), p["metadata"]["labels"].get(SUBGROUP_LABEL))] += 1
    assert members == MEMBERS[name]


def _short(group: str, obj: dict, pg: dict) -> str:
    """The PodGroup's name with KAI's prefix and the object's uid left out (pg-<name>-<uid>[-group-<i>])."""
    uid = next(r["uid"] for r in pg["metadata"].get("ownerReferences") or [] if r["kind"] == obj["kind"])
    return group.removeprefix("pg-").replace(f"-{uid}", "")


@pytest.mark.parametrize("name", list(operators.OPERATORS))
def test_what_kailab_knows_of_each_operator_is_what_its_module_installs(operators_built, name):
    """The CRDs, Deployment, image and webhooks kailab looks for on a cluster it did not make are upstream's own."""
    op = operators.OPERATORS[name]
    kubectl = build.ensure_built([versions.build("kubernetes")], Progress(quiet=True))["kubectl"]
    objects = operators.manifests(op, kubectl)
    assert {c["metadata"]["name"] for c in operators.of_kind(objects, "CustomResourceDefinition")} == set(op.crds)
    image = operators.the_deployment(op, objects)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.rsplit(":", 1)[0].endswith(op.image_name)
    assert (
        bool(operators.of_kind(objects, "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"))
        == op.webhooks
    )
    served = {kind for crd in operators.of_kind(objects, "CustomResourceDefinition") for kind in _served(crd)}
    assert set(op.kinds) <= served


def _served(crd: dict) -> set[tuple[str, str]]:
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    return {(f"{group}/{v['name']}", kind) for v in crd["spec"]["versions"] if v.get("served")}


# Objects only the operator's own validating webhook refuses (their CRDs' schemas accept them), and that webhook.
REFUSED_BY_WEBHOOK = {
    "training-operator": (  # pytorchjob_webhook.go: a replica needs a container named "pytorch"
        {**PYTORCH_JOB, "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template("main")}}}},
        "validator.pytorchjob.training-operator.kubeflow.org",
    ),
    "jobset": (  # jobset_webhook.go: a replicatedJob's groupName must be a DNS-1035 label
        {**JOBSET, "spec": {"replicatedJobs": [{**JOBSET["spec"]["replicatedJobs"][0], "groupName": "Not_DNS"}]}},
        "vjobset.kb.io",
    ),
    "lws": (  # leaderworkerset_webhook.go: maxSurge and maxUnavailable may not both be 0
        {
            **LWS,
            "spec": {
                **LWS["spec"],
                "rolloutStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 0},
                },
            },
        },
        "vleaderworkerset.kb.io",
    ),
}


@pytest.mark.parametrize("name", list(REFUSED_BY_WEBHOOK))
def test_each_operators_webhooks_are_served_and_called_by_the_api_server(proof, name):
    from kubernetes.client.exceptions import ApiException

    obj, webhook = REFUSED_BY_WEBHOOK[name]
    proof.runtime.capabilities().operators.ensure(name, Progress())
    kube = proof.kube
    resource = kube.resource(obj["apiVersion"], obj["kind"])
    body = {**copy.deepcopy(obj), "metadata": {**obj["metadata"], "name": f"refused-{name}"}}
    with pytest.raises(ApiException) as refused:
        kube.dyn.create(resource, body=body, namespace=NAMESPACE, dry_run="All")
    said = json.loads(refused.value.body)["message"]
    assert said.startswith(f'admission webhook "{webhook}" denied the request'), said


def test_a_cluster_kailab_did_not_make_is_read_for_its_operators_never_changed(proof):
    """The existing runtime's view, on this lab's API server: KubeRay's CRDs (installed above) without a controller
    Deployment is not installed; a ready Deployment of upstream's name makes it installed; nothing is applied."""
    from kailab.errors import KailabError
    from kailab.preflight import OK, WARN
    from kailab.runtimes.existing_operators import ExistingOperators, operator_findings

    kube = proof.kube
    ray = operators.OPERATORS["kuberay"]
    proof.runtime.capabilities().operators.ensure("kuberay", Progress())  # its CRDs, and a process (no Deployment)
    control = ExistingOperators(kube)
    with pytest.raises(KailabError) as lacking:
        control.ensure("kuberay", Progress())
    assert "no ready controller" in lacking.value.message and "--set batchScheduler.name=kai-scheduler" in str(
        lacking.value.hint
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": ray.deployment, "namespace": NAMESPACE, "labels": dict(MANAGED)},
        "spec": {
            "selector": {"matchLabels": {"app": "ray-operator-stand-in"}},
            "template": {
                "metadata": {"labels": {"app": "ray-operator-stand-in"}},
                "spec": {
                    "tolerations": GPU_TEMPLATE["spec"]["tolerations"],  # KWOK runs it, as a Deployment elsewhere
                    "containers": [{"name": "manager", "image": "quay.io/kuberay/operator:v1.5.1"}],
                },
            },
        },
    }
    kube.apply(deployment)
    try:
        until("the stand-in Deployment ready", lambda: control.status()[0].running, timeout=60)
        control.ensure("kuberay", Progress())  # found: nothing to do
        rows = {f.check: f for f in operator_findings(kube)}
        assert rows["KubeRay"].status == OK and f"{NAMESPACE}/{ray.deployment}" in rows["KubeRay"].found
        assert rows["LeaderWorkerSet"].status in (OK, WARN)
    finally:
        kube.delete("apps/v1", "Deployment", ray.deployment, NAMESPACE)
