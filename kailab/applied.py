"""What a scenario applies, cut down to the lines KAI reads — so a learner can write them on a real cluster.

Derived from the objects ``kailab/scenarios/manifests.py`` builds (the same ones the engine applies), never
written per lesson. What KAI does not read is left out: kailab's own labels, the KWOK toleration, the image.
:func:`kai_lines` is pure (a scenario in, rows out); ``render.applied_table`` shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kailab.labels import (
    GPU,
    GPU_FRACTION_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    MIN_MEMBER_ANNOTATION,
    POD_GROUP_ANNOTATION,
    PREEMPTIBILITY_LABEL,
    QUEUE_LABEL,
    SKIP_PODGROUPER_ANNOTATION,
    SUBGROUP_LABEL,
    TOPOLOGY_ANNOTATION,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_REQUIRED_ANNOTATION,
)
from kailab.scenarios.manifests import priority_class_object, queue_object, topology_object, workload_objects
from kailab.scenarios.model import Scenario, SetQueue

UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}  # kailab's CPU and memory unless a file says otherwise

# Labels and annotations KAI reads (v0.17.0): the queue and preemptibility labels and the priorityClassName label
# (the pod-grouper reads them from the top owner), the gang size on a Job, a fraction, a hand-made PodGroup's name,
# a topology constraint.
KAI_LABELS = (QUEUE_LABEL, PREEMPTIBILITY_LABEL, "priorityClassName", SUBGROUP_LABEL)
KAI_ANNOTATIONS = (
    MIN_MEMBER_ANNOTATION,
    GPU_FRACTION_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    POD_GROUP_ANNOTATION,
    SKIP_PODGROUPER_ANNOTATION,
    TOPOLOGY_ANNOTATION,
    TOPOLOGY_REQUIRED_ANNOTATION,
    TOPOLOGY_PREFERRED_ANNOTATION,
)
POD_SPEC_FIELDS = ("schedulerName", "priorityClassName", "nodeSelector")


@dataclass(frozen=True)
class Line:
    """One row: the object (``Job prod-train``), where in it (``metadata.labels``), and what it says there."""

    obj: str
    where: str
    what: str


def kai_lines(scenario: Scenario) -> list[Line]:
    """Priority classes, queues (and later changes to them), topologies, then each workload's first object of each
    kind."""
    lines: list[Line] = []
    for obj in map(priority_class_object, scenario.priority_classes):
        _add(lines, _name(obj), "", {"value": obj["value"], **_metadata(obj)})
    queues = [(q, "spec") for q in scenario.queues]
    queues += [(s.queue, "spec, set by a later step") for s in scenario.steps if isinstance(s, SetQueue)]
    for q, where in queues:
        obj = queue_object(q)
        spec = {k: v for k, v in obj["spec"].items() if k != "resources"}
        resources = {k: v for k, v in obj["spec"]["resources"].items() if k == "gpu" or v != UNLIMITED}
        lines.append(Line(_name(obj), where, _flow({**spec, "resources": resources})))
    for obj in map(topology_object, scenario.topologies):
        _add(lines, _name(obj), "spec", obj["spec"])
    for w in scenario.workloads:
        objects = workload_objects(w, scenario)
        firsts = {o["kind"]: o for o in reversed(objects)}  # the first object of each kind
        copies = {"Job": w.jobs or 1, "Pod": w.pods}
        for kind in ("PodGroup", "Job", "Deployment", "StatefulSet", "RayCluster", *OPERATED_SIZES, "Pod"):
            if kind in firsts:
                lines += _object_lines(firsts[kind], copies.get(kind, 1))
    return lines


def _object_lines(obj: dict, copies: int) -> list[Line]:
    """KAI's lines of one Job, Deployment, StatefulSet, PodGroup or Pod: its metadata, its size, what its pods ask for."""
    name = _name(obj) + (f" (×{copies})" if copies > 1 else "")
    out: list[Line] = []
    _add(out, name, "metadata", _metadata(obj))
    spec = obj["spec"]
    if obj["kind"] == "PodGroup":
        _add(out, name, "spec", spec)
        return out
    if obj["kind"] == "RayCluster":  # KAI's Ray grouper reads each group's size (plugins/ray/ray_grouper.go)
        _add(out, name, "spec.headGroupSpec.template.spec", _pod_lines(spec["headGroupSpec"]["template"]["spec"]))
        for i, g in enumerate(spec["workerGroupSpecs"]):
            group = {**_pick(g, ("groupName", "replicas", "minReplicas")), **_pod_lines(g["template"]["spec"])}
            _add(out, name, f"spec.workerGroupSpecs[{i}]", group)
        return out
    if obj["kind"] in OPERATED_SIZES:  # the counts the kind's KAI grouper reads (kailab/scenarios/operated.py)
        for where, size, pod in OPERATED_SIZES[obj["kind"]](spec):
            _add(out, name, where, {**size, **_pod_lines(pod)})
        return out
    if obj["kind"] == "Pod":
        pod, where = spec, "spec"
    else:
        _add(out, name, "spec", _pick(spec, ("parallelism", "replicas")))
        _add(out, name, "spec.template.metadata", _pick(_metadata(spec["template"]), ("annotations",)))
        pod, where = spec["template"]["spec"], "spec.template.spec"
    _add(out, name, where, _pod_lines(pod))
    return out


def _pytorch_sizes(spec: dict) -> list[tuple[str, dict, dict]]:
    rows = [
        (f"spec.pytorchReplicaSpecs.{kind}", {"replicas": r["replicas"]}, r["template"]["spec"])
        for kind, r in spec["pytorchReplicaSpecs"].items()
    ]
    if "runPolicy" in spec:
        rows.append(("spec.runPolicy", spec["runPolicy"], {}))
    return rows


def _jobset_sizes(spec: dict) -> list[tuple[str, dict, dict]]:
    return [
        (
            f"spec.replicatedJobs[{i}]",
            {
                "name": rj["name"],
                "replicas": rj["replicas"],
                **_pick(rj["template"]["spec"], ("parallelism", "completions")),
            },
            rj["template"]["spec"]["template"]["spec"],
        )
        for i, rj in enumerate(spec["replicatedJobs"])
    ]


def _lws_sizes(spec: dict) -> list[tuple[str, dict, dict]]:
    group = spec["leaderWorkerTemplate"]
    return [
        (
            "spec",
            {"replicas": spec["replicas"], "leaderWorkerTemplate": {"size": group["size"]}},
            group["workerTemplate"]["spec"],
        )
    ]


# kind → (where, the counts its KAI grouper reads, the pod spec there)
OPERATED_SIZES = {"PyTorchJob": _pytorch_sizes, "JobSet": _jobset_sizes, "LeaderWorkerSet": _lws_sizes}


def _pod_lines(pod: dict) -> dict:
    """What KAI reads of a pod spec: its scheduler, priority class, node selector and GPUs."""
    if not pod:
        return {}
    gpus = _pick(pod["containers"][0].get("resources", {}).get("limits"), (GPU,))
    return {**_pick(pod, POD_SPEC_FIELDS), **({"containers": [{"resources": {"limits": gpus}}]} if gpus else {})}


def _metadata(obj: dict) -> dict:
    meta = obj["metadata"]
    picked = {
        "labels": _pick(meta.get("labels"), KAI_LABELS),
        "annotations": _pick(meta.get("annotations"), KAI_ANNOTATIONS),
    }
    return {k: v for k, v in picked.items() if v}


def _name(obj: dict) -> str:
    return f"{obj['kind']} {obj['metadata']['name']}"


def _pick(mapping: dict | None, keys: tuple[str, ...]) -> dict:
    return {k: mapping[k] for k in keys if mapping and k in mapping}


def _add(lines: list[Line], obj: str, where: str, value) -> None:
    if value not in ({}, None, ""):
        lines.append(Line(obj, where, _flow(value)))


def _flow(value) -> str:
    """A value as one line of YAML flow style, as a learner would type it (``{quota: 8, limit: -1}``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, str) and (value == "" or value[0] in "-0123456789" or value in ("true", "false")):
        return f'"{value}"'  # a number-like string keeps its quotes: "10", "1"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
