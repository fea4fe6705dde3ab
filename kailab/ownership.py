"""Whose object is it? kailab changes and deletes only what this lab made.

Every object a lab creates carries ``app.kubernetes.io/managed-by: kailab``; a lab on a cluster
kailab adopted (``kailab up --runtime existing``) adds ``kailab.io/lab-id: <its id>``. A lab on a
cluster kailab made has no id, and its objects carry none. Cleanup selects by these labels only,
and a Queue, PriorityClass or Topology of the same name that is not this lab's is refused, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass

from kailab.errors import KailabError
from kailab.labels import LAB_ID_LABEL, MANAGED, QUEUE_API, TOPOLOGY_API

# The cluster-wide kinds a scenario makes beside its namespace (apiVersion, kind): a lab's or learner's cleanup
# deletes its own of each, by its labels.
CLUSTER_KINDS = ((QUEUE_API, "Queue"), ("scheduling.k8s.io/v1", "PriorityClass"), (TOPOLOGY_API, "Topology"))


@dataclass(frozen=True)
class Owner:
    """One lab, as its labels say it: ``lab_id`` "" is the lab of a cluster kailab made."""

    lab_id: str = ""

    @property
    def labels(self) -> dict[str, str]:
        """What every object this lab creates carries."""
        return {**MANAGED, LAB_ID_LABEL: self.lab_id} if self.lab_id else dict(MANAGED)

    def selector(self, *extra: str) -> str:
        """A label selector for this lab's objects (and ``extra`` terms such as ``kailab.io/scenario``)."""
        mine = f"{LAB_ID_LABEL}={self.lab_id}" if self.lab_id else f"!{LAB_ID_LABEL}"
        return ",".join([*(f"{k}={v}" for k, v in MANAGED.items()), mine, *extra])

    def owns(self, labels: dict[str, str] | None) -> bool:
        """True when an object with these labels is this lab's."""
        labels = labels or {}
        return all(labels.get(k) == v for k, v in MANAGED.items()) and labels.get(LAB_ID_LABEL, "") == self.lab_id

    def confine(self, pod_spec: dict) -> None:
        """Keep a pod of this lab's on its nodes; a lab of a cluster's own has them all (see kailab.partitions)."""


def stamped(obj: dict, owner: Owner) -> dict:
    """``obj`` with the owner's labels on it, and on each of its pod templates (a Job's or Deployment's, and those
    an operator's kind nests: a RayCluster's groups, a PyTorchJob's replicas, a JobSet's Jobs, a LeaderWorkerSet's
    workers); its pods confined to the owner's nodes."""
    obj.setdefault("metadata", {}).setdefault("labels", {}).update(owner.labels)
    spec = obj.get("spec")
    if obj.get("kind") == "Pod" and isinstance(spec, dict):
        owner.confine(spec)
        return obj
    top = spec.get("template") if isinstance(spec, dict) else None
    for template in [top] if isinstance(top, dict) else pod_templates(spec):
        template.setdefault("metadata", {}).setdefault("labels", {}).update(owner.labels)
        if isinstance(template.get("spec"), dict):
            owner.confine(template["spec"])
    return obj


def pod_templates(node: object) -> list[dict]:
    """The pod templates inside an object's spec: each mapping whose ``spec`` has containers (not searched within)."""
    if isinstance(node, list):
        return [t for item in node for t in pod_templates(item)]
    if not isinstance(node, dict):
        return []
    inner = node.get("spec")
    if isinstance(inner, dict) and isinstance(inner.get("containers"), list):
        return [node]
    return [t for value in node.values() for t in pod_templates(value)]


def foreign(found: dict[str, dict[str, str] | None], owner: Owner) -> list[str]:
    """Of the objects looked up (``"Kind name"`` → its labels, None when it does not exist), those that
    exist and are not this lab's: kailab may not change or delete them."""
    return sorted(name for name, labels in found.items() if labels is not None and not owner.owns(labels))


def refused(names: list[str], hint: str | None = None) -> KailabError:
    """The error for a run that would change or delete objects kailab did not make (for this lab);
    ``hint`` replaces the usual one (a prefix of the lab's own)."""
    it = "it" if len(names) == 1 else "them"
    return KailabError(
        f"kailab will not change or delete {', '.join(names)}: {'it exists' if len(names) == 1 else 'they exist'} "
        f"on this cluster, and kailab did not make {it} for this lab. Nothing was applied.",
        hint=hint
        or "Give this lab's queues and namespaces a prefix of their own: kailab down, then "
        "kailab up --runtime existing --kubeconfig PATH --prefix NAME (or remove "
        f"{it} yourself if {it} {'is' if len(names) == 1 else 'are'} yours and no longer needed).",
    )
