"""Scenario data → Kubernetes objects (Queues, PriorityClasses, Jobs, Pods, PodGroups, Deployments, operators' kinds).

Deployments and StatefulSets: Kubernetes' controllers of long-running pods, never a gang to KAI.

The operators' kinds: RayClusters, PyTorchJobs, JobSets, LeaderWorkerSets (their words: objects.py, operated.py).

Also what the runbooks' causes need: PodDisruptionBudgets, PersistentVolumeClaims, a namespace's ResourceQuota.

Where KAI reads a setting matters, and the public course lab got it wrong:
the queue label and the gang size (``kai.scheduler/batch-min-member``) go on
the **Job** (KAI's pod-grouper reads the top owner), not only on its pod template.
"""

from __future__ import annotations

from typing import Any

from kailab import gpus, queues
from kailab.labels import (
    COMPLETE_DELAY_ANNOTATION,
    DEFAULT_SCHEDULER_NAME,
    GPU_FRACTION_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    HOSTNAME_LABEL,
    JOBSET_API,
    KAI_SCHEDULER_NAME,
    KWOK_TOLERATION,
    LWS_API,
    MANAGED,
    MIN_MEMBER_ANNOTATION,
    NODEPOOL_LABEL,
    POD_GROUP_ANNOTATION,
    PODGROUP_API,
    PREEMPTIBILITY_LABEL,
    PREEMPTION_DELAY_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    PYTORCH_API,
    QUEUE_LABEL,
    RAY_API,
    SCENARIO_LABEL,
    SKIP_PODGROUPER_ANNOTATION,
    STALENESS_ANNOTATION,
    SUBGROUP_LABEL,
    TOPOLOGY_ANNOTATION,
    TOPOLOGY_API,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_REQUIRED_ANNOTATION,
    WORKLOAD_LABEL,
)
from kailab.scenarios.model import Scenario
from kailab.scenarios.objects import PriorityClassFile, QueueFile, ResourceFile, TopologyFile, WorkloadFile

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def _resource(r: ResourceFile) -> dict:
    return queues.resource(r.quota, r.limit, r.overQuotaWeight)


def queue_object(q: QueueFile) -> dict:
    """A scenario's queue as a KAI Queue (kailab.queues: the one shape); ``nodePool``: its partition's label."""
    obj = queues.queue_object(
        q.name,
        _resource(q.gpu),
        _resource(q.cpu),
        _resource(q.memory),
        parent=q.parent,
        priority=q.priority,
        preempt_min_runtime=q.preemptMinRuntime,
        reclaim_min_runtime=q.reclaimMinRuntime,
    )
    if q.nodePool:
        obj["metadata"].setdefault("labels", {})[NODEPOOL_LABEL] = q.nodePool
    return obj


def priority_class_object(pc: PriorityClassFile) -> dict:
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": pc.name, "labels": dict(MANAGED)},
        "value": pc.value,
        "globalDefault": False,
        "description": "kailab scenario priority class",
    }
    if pc.preemptionPolicy is not None:
        obj["preemptionPolicy"] = pc.preemptionPolicy
    if pc.preemptible is not None:
        obj["metadata"]["labels"][PREEMPTIBILITY_LABEL] = "preemptible" if pc.preemptible else "non-preemptible"
    return obj


def topology_object(t: TopologyFile) -> dict:
    """A scenario's topology as KAI's Topology object (``pkg/apis/kai/v1alpha1/topology_types.go``)."""
    return {
        "apiVersion": TOPOLOGY_API,
        "kind": "Topology",
        "metadata": {"name": t.name, "labels": dict(MANAGED)},
        "spec": {"levels": [lv.model_dump(exclude_none=True) for lv in t.levels]},
    }


def topology_annotations(w: WorkloadFile) -> dict[str, str]:
    """The annotations KAI's pod-grouper reads from a workload's top owner for its topology constraint
    (``pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go``)."""
    c = w.topology
    if c is None:
        return {}
    out = {TOPOLOGY_ANNOTATION: c.name}
    if c.required:
        out[TOPOLOGY_REQUIRED_ANNOTATION] = c.required
    if c.preferred:
        out[TOPOLOGY_PREFERRED_ANNOTATION] = c.preferred
    return out


def _owner_meta(w: WorkloadFile, scenario: Scenario) -> dict:
    """Labels and annotations KAI reads from the top owner (the Job, the Deployment, a bare Pod); the file's own
    labels and annotations last, as written (KAI's keys among them already agree with kailab's words)."""
    labels = {**MANAGED, WORKLOAD_LABEL: w.name, SCENARIO_LABEL: scenario.name}
    if w.queue:
        labels[QUEUE_LABEL] = w.queue
    if w.preemptibility:
        labels[PREEMPTIBILITY_LABEL] = w.preemptibility
    if w.nodePool:
        labels[NODEPOOL_LABEL] = w.nodePool
    if w.priorityClassLabel:
        labels[PRIORITY_CLASS_LABEL] = w.priorityClassLabel  # as given: nobody checks that the class exists
    elif w.priority_class and w.scheduler == KAI_SCHEDULER_NAME and not w.priorityClassName:
        labels["priorityClassName"] = w.priority_class  # KAI reads this label before the pods' spec
    labels.update(w.labels)
    annotations = {}
    if w.minMember is not None and w.kind == "Job":
        annotations[MIN_MEMBER_ANNOTATION] = str(w.minMember)
    annotations.update(_policy_annotations(w))
    if w.kind != "PodGroup":  # a hand-made PodGroup says it in its spec
        annotations.update(topology_annotations(w))
    annotations.update(w.annotations)
    return {"labels": labels, "annotations": annotations}


def _policy_annotations(w: WorkloadFile) -> dict[str, str]:
    """KAI's per-workload policies on the top owner, where its pod-grouper reads them into the PodGroup's spec
    (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go); a hand-made PodGroup has them in its
    spec, and pods that join one (podGroup:) are left alone by the pod-grouper."""
    if w.kind == "PodGroup":
        return {}
    out = {}
    if w.preemptionDelay:
        out[PREEMPTION_DELAY_ANNOTATION] = w.preemptionDelay
    if w.stalenessGracePeriod is not None:
        out[STALENESS_ANNOTATION] = w.stalenessGracePeriod
    if w.podGroup is not None:
        out[SKIP_PODGROUPER_ANNOTATION] = "true"
    return out


def _resources(w: WorkloadFile) -> dict:
    res: dict = {}
    # a fraction is KAI's gpu-fraction annotation, not a limit; so is a share of one GPU's memory (gpuMemory)
    limits = gpus.request(w.gpus)[0] if w.gpuMemory is None else {}
    if limits:
        res["limits"] = limits
    requests = {k: v for k, v in (("cpu", w.cpu), ("memory", w.memory)) if v}
    more_limits = {k: v for k, v in (("cpu", w.cpuLimit), ("memory", w.memoryLimit)) if v}
    if requests:
        res["requests"] = requests
    if more_limits:
        res["limits"] = {**res.get("limits", {}), **more_limits}
    return res


def pod_template(w: WorkloadFile, scenario: Scenario, restart: str) -> dict:
    meta = _owner_meta(w, scenario)
    annotations = {}
    if w.completeAfter is not None:
        annotations[COMPLETE_DELAY_ANNOTATION] = f"{w.completeAfter:g}s"
    if w.kind == "PodGroup" or w.podGroup is not None:
        annotations[POD_GROUP_ANNOTATION] = w.podGroup or w.name
    if w.gpuMemory is None:
        annotations.update(gpus.request(w.gpus)[1])
    else:
        annotations[GPU_MEMORY_ANNOTATION] = str(w.gpuMemory)
    for key in (GPU_FRACTION_ANNOTATION, GPU_MEMORY_ANNOTATION):  # KAI reads them on the pods: as the file wrote them
        if key in w.annotations and key in annotations:
            annotations[key] = w.annotations[key]
    spec: dict = {
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": 0,
        "tolerations": [dict(KWOK_TOLERATION)]
        if w.tolerations is None
        else [t.model_dump(exclude_none=True) for t in w.tolerations],
        "containers": [
            {
                "name": "main",
                "image": PAUSE_IMAGE,
                "resources": _resources(w),
            }
        ],
    }
    if w.scheduler != DEFAULT_SCHEDULER_NAME:
        spec["schedulerName"] = w.scheduler
    if w.node or w.nodeSelector:
        spec["nodeSelector"] = {**w.nodeSelector, **({HOSTNAME_LABEL: w.node} if w.node else {})}
    if w.schedulingGates:
        spec["schedulingGates"] = [{"name": gate} for gate in w.schedulingGates]
    if w.nodeAffinity:
        terms = [{"matchExpressions": [r.model_dump(mode="json", exclude_defaults=True) for r in w.nodeAffinity]}]
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    for word, pod_terms in (("podAffinity", w.podAffinity), ("podAntiAffinity", w.podAntiAffinity)):
        if pod_terms:
            spec.setdefault("affinity", {})[word] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": dict(t.matchLabels)}, "topologyKey": t.topologyKey}
                    for t in pod_terms
                ]
            }
    if w.volumeClaim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": w.volumeClaim}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    if w.priority_class:
        spec["priorityClassName"] = w.priority_class
    return {
        "metadata": {
            # kailab's priorityClassName label goes on the top owner only; one the file wrote goes everywhere
            "labels": {k: v for k, v in meta["labels"].items() if k != "priorityClassName" or k in w.labels},
            "annotations": annotations,
        },
        "spec": spec,
    }


def namespace_objects(scenario: Scenario) -> list[dict]:
    """What the scenario's namespace holds before any workload: its ResourceQuota (``namespaceQuota``) and the
    PersistentVolumeClaims its workloads mount (``volumeClaim``: 1Gi, storage class "" — only a PersistentVolume
    made for it could bind it, and the lab makes none)."""
    ns = scenario.namespace
    out: list[dict] = []
    if scenario.namespace_quota:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": NAMESPACE_QUOTA, "namespace": ns, "labels": dict(MANAGED)},
                "spec": {"hard": dict(scenario.namespace_quota)},
            }
        )
    for claim in sorted({w.volumeClaim for w in scenario.workloads if w.volumeClaim}):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": ns, "labels": dict(MANAGED)},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        )
    return out


NAMESPACE_QUOTA = "kailab-quota"  # the ResourceQuota a scenario's namespaceQuota makes


def disruption_budget(w: WorkloadFile, scenario: Scenario) -> list[dict]:
    """The workload's PodDisruptionBudget (``disruptionBudget``), over its pods; none when it has none."""
    if w.disruptionBudget is None:
        return []
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": w.name, "namespace": scenario.namespace, "labels": dict(MANAGED)},
            "spec": {
                "minAvailable": w.disruptionBudget.minAvailable,
                "selector": {"matchLabels": {WORKLOAD_LABEL: w.name}},
            },
        }
    ]


def workload_objects(w: WorkloadFile, scenario: Scenario, pods: int | None = None) -> list[dict]:
    """The objects that make one workload (its PodDisruptionBudget last); ``pods`` overrides its size (the scale
    step)."""
    return [*_workload_objects(w, scenario, pods), *disruption_budget(w, scenario)]


def _workload_objects(w: WorkloadFile, scenario: Scenario, pods: int | None = None) -> list[dict]:
    n = w.pods if pods is None else pods
    ns = scenario.namespace
    meta = _owner_meta(w, scenario)
    if w.kind == "Job":
        names = [w.name] if w.jobs is None else [f"{w.name}-{i}" for i in range(w.jobs)]
        return [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": ns, **meta},
                "spec": {
                    "parallelism": n,
                    "completions": max(w.pods, n),
                    # KAI's evictions delete pods; each counts as a failure to the Job controller.
                    "backoffLimit": 100000,
                    "template": pod_template(w, scenario, "Never"),
                },
            }
            for name in names
        ]
    if w.kind == "RayCluster":
        return [ray_cluster(w, scenario)]
    if w.kind in OPERATED_OBJECTS:
        return [OPERATED_OBJECTS[w.kind](w, scenario)]
    if w.kind in ("Deployment", "StatefulSet"):
        # A StatefulSet keeps Kubernetes' defaults (podManagementPolicy OrderedReady: pod <i> is made once pod <i-1>
        # is Ready) and names no Service: its pods need no network identity here.
        return [
            {
                "apiVersion": "apps/v1",
                "kind": w.kind,
                "metadata": {"name": w.name, "namespace": ns, **meta},
                "spec": {
                    "replicas": n,
                    "selector": {"matchLabels": {WORKLOAD_LABEL: w.name}},
                    "template": pod_template(w, scenario, "Always"),
                },
            }
        ]
    pod_group: list[dict] = []
    if w.kind == "PodGroup":
        spec: dict[str, Any] = {"minMember": w.minMember or n, "queue": w.queue or "default-queue"}
        if w.priority_class:
            spec["priorityClassName"] = w.priority_class
        if w.preemptibility:
            spec["preemptibility"] = w.preemptibility
        if w.topology is not None:  # the fields KAI's pod-grouper fills from the annotations (podgroup/handler.go)
            spec["topologyConstraint"] = {
                "topology": w.topology.name,
                **({"requiredTopologyLevel": w.topology.required} if w.topology.required else {}),
                **({"preferredTopologyLevel": w.topology.preferred} if w.topology.preferred else {}),
            }
        if w.preemptionDelay:
            spec["preemptionDelay"] = w.preemptionDelay
        if w.stalenessGracePeriod is not None:
            spec["stalenessGracePeriod"] = w.stalenessGracePeriod
        if w.subGroups:
            spec["subGroups"] = [
                {"name": g.name, **({"minMember": g.minMember} if g.minMember else {})} for g in w.subGroups
            ]
        pod_group.append(
            {
                "apiVersion": PODGROUP_API,
                "kind": "PodGroup",
                "metadata": {
                    "name": w.name,
                    "namespace": ns,
                    "labels": meta["labels"],
                    **({"annotations": dict(w.podGroupAnnotations)} if w.podGroupAnnotations else {}),
                },
                "spec": spec,
            }
        )
    subgroup_of = [g.name for g in w.subGroups for _ in range(g.pods)]
    pod_objects: list[dict] = []
    for i in range(n):
        tmpl = pod_template(w, scenario, "Never")
        labels = meta["labels"] if w.kind == "Pod" else tmpl["metadata"]["labels"]
        annotations = {**meta["annotations"], **tmpl["metadata"]["annotations"]}
        if w.kind == "PodGroup":
            # The pod-grouper must leave these pods to the hand-made PodGroup. KAI v0.17.0 reads
            # this as an annotation (pkg/podgrouper/pod_controller.go, shouldSkipPodGrouper).
            annotations = {**annotations, SKIP_PODGROUPER_ANNOTATION: "true"}
        if i < len(subgroup_of):
            labels = {**labels, SUBGROUP_LABEL: subgroup_of[i]}
        pod_objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{w.name}-{i}", "namespace": ns, "labels": labels, "annotations": annotations},
                "spec": tmpl["spec"],
            }
        )
    return pod_objects + pod_group if w.podGroupAfterPods else pod_group + pod_objects


def ray_cluster(w: WorkloadFile, scenario: Scenario) -> dict:
    """A RayCluster for KubeRay (ray.io/v1): its head from the workload's own words, a worker group per
    ``workerGroups`` entry. The queue label (and kailab's) are on the RayCluster, the top owner KAI's pod-grouper
    reads (defaultgrouper.CalcPodGroupQueue), and on the pod templates, so kailab counts the pods KubeRay makes."""
    head = pod_template(w, scenario, "Always")
    workers = [
        {
            "groupName": g.name,
            "replicas": g.replicas,
            "minReplicas": g.minReplicas,
            "maxReplicas": g.replicas,
            # KubeRay tells Ray a worker's GPUs from its nvidia.com/gpu limit, which a fraction has not
            # (ray-operator controllers/ray/common/pod.go): Ray's own share is said here
            "rayStartParams": {"num-gpus": f"{g.gpus:g}"} if gpus.is_fraction(g.gpus) else {},
            "template": _with_labels(pod_template(w.model_copy(update={"gpus": g.gpus}), scenario, "Always"), g.labels),
        }
        for g in w.workerGroups
    ]
    return {
        "apiVersion": RAY_API,
        "kind": "RayCluster",
        "metadata": {"name": w.name, "namespace": scenario.namespace, **_owner_meta(w, scenario)},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": head}, "workerGroupSpecs": workers},
    }


def _with_labels(template: dict, labels: dict[str, str]) -> dict:
    """A pod template with these labels added (a worker group's own)."""
    template["metadata"]["labels"] = {**template["metadata"]["labels"], **labels}
    return template


def _top_owner(w: WorkloadFile, scenario: Scenario, api_version: str, spec: dict) -> dict:
    return {
        "apiVersion": api_version,
        "kind": w.kind,
        "metadata": {"name": w.name, "namespace": scenario.namespace, **_owner_meta(w, scenario)},
        "spec": spec,
    }


def pytorch_job(w: WorkloadFile, scenario: Scenario) -> dict:
    """A PyTorchJob for the training-operator (kubeflow.org/v1): its master and workers from the same pod words, the
    container named ``pytorch`` (its webhook wants that name); ``minAvailable`` in ``runPolicy.schedulingPolicy``,
    where KAI's Kubeflow grouper reads it (plugins/kubeflow/distributed_common.go). The queue label on the
    PyTorchJob, the top owner KAI's pod-grouper reads, and on the pods' template (kailab counts them by it)."""

    def template() -> dict:
        out = pod_template(w, scenario, "OnFailure")
        out["spec"]["containers"][0]["name"] = "pytorch"
        return out

    replicas = {"Master": w.master, **({"Worker": w.workers} if w.workers else {})}
    spec: dict[str, Any] = {
        "pytorchReplicaSpecs": {
            kind: {"replicas": n, "restartPolicy": "OnFailure", "template": template()} for kind, n in replicas.items()
        }
    }
    if w.minAvailable is not None:
        spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": w.minAvailable}}
    return _top_owner(w, scenario, PYTORCH_API, spec)


def jobset(w: WorkloadFile, scenario: Scenario) -> dict:
    """A JobSet (jobset.x-k8s.io/v1alpha2): per replicatedJob, ``replicas`` Jobs of ``parallelism`` pods at once and
    ``completions`` (default: ``parallelism``) in all — the two numbers a Job has, of which KAI's JobSet grouper reads
    only ``parallelism`` (plugins/jobset/jobset_grouper.go, singleReplicaSubGroupMinMember)."""
    jobs = [
        {
            "name": rj.name,
            "replicas": rj.replicas,
            "template": {
                "spec": {
                    "parallelism": rj.parallelism,
                    "completions": rj.completions or rj.parallelism,
                    "backoffLimit": 100000,  # KAI's evictions delete pods; each counts as a failure to the Job
                    "template": pod_template(w, scenario, "Never"),
                }
            },
        }
        for rj in w.replicatedJobs
    ]
    return _top_owner(w, scenario, JOBSET_API, {"replicatedJobs": jobs})


def leader_worker_set(w: WorkloadFile, scenario: Scenario) -> dict:
    """A LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): ``replicas`` groups of ``size`` pods, a leader and its
    workers, all from the workload's pod words (LWS runs them as StatefulSets: restartPolicy Always)."""
    spec = {
        "replicas": w.replicas,
        "leaderWorkerTemplate": {"size": w.size, "workerTemplate": pod_template(w, scenario, "Always")},
    }
    return _top_owner(w, scenario, LWS_API, spec)


OPERATED_OBJECTS = {"PyTorchJob": pytorch_job, "JobSet": jobset, "LeaderWorkerSet": leader_worker_set}
