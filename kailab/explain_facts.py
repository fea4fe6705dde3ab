"""What else the cluster says about a waiting pod, beyond KAI's words: its owners, queues, budgets, rivals, nodes.

Read by ``kailab explain`` (:func:`kailab.explain.explain_pods`) into its Facts.
"""

from __future__ import annotations

from kailab.explain_words import preemptor
from kailab.gpus import is_fraction
from kailab.kai_strings import get as kai
from kailab.kube import Kube
from kailab.labels import NODEPOOL_LABEL, PODGROUP_API, PRIORITY_CLASS_LABEL


def rivals(queue: str, queues: dict[str, dict], standing: dict[str, dict], usage: dict[str, float] | None):
    """The recent GPU usage of ``queue`` and of its sibling queues (same parent) that hold or ask for GPUs: those
    time-based fair share weighs it against. None when the usage is not known."""
    if usage is None:
        return None
    parent = ((queues.get(queue) or {}).get("spec") or {}).get("parentQueue")
    wanting = {
        name
        for name, q in queues.items()
        if (q.get("spec") or {}).get("parentQueue") == parent
        and (standing.get(name, {}).get("allocated") or standing.get(name, {}).get("pending"))
    }
    return {name: usage.get(name, 0.0) for name in wanting | {queue}}


def owner_chain(kube: Kube, pod: dict) -> list[dict]:
    """The metadata of the pod, its controller and that one's (a Job; a ReplicaSet, then its Deployment): where KAI's
    pod-grouper reads labels, top owner first."""
    meta = pod.get("metadata") or {}
    chain = [meta]
    refs = meta.get("ownerReferences") or []
    for _ in range(2):  # a ReplicaSet's owner is the Deployment
        ref = next((r for r in refs if r.get("controller")), None)
        owner = kube.get(ref["apiVersion"], ref["kind"], ref["name"], meta.get("namespace")) if ref else None
        if owner is None:
            break
        owner_meta = owner.get("metadata") or {}
        chain.insert(0, owner_meta)
        refs = owner_meta.get("ownerReferences") or []
    return chain


def priority_label(kube: Kube, pod: dict, chain: list[dict] | None = None) -> str:
    """The priorityClassName label KAI's pod-grouper reads first: on the pod's top owner (a Job, a Deployment
    through its ReplicaSet), else on the pod; "" when neither has one. ``chain``: :func:`owner_chain`'s, if read."""
    chain = chain if chain is not None else owner_chain(kube, pod)
    return next(
        (m["labels"][PRIORITY_CLASS_LABEL] for m in chain if PRIORITY_CLASS_LABEL in (m.get("labels") or {})), ""
    )


def parent_outside(queue: dict | None, queues: dict[str, dict]) -> tuple[str, str, str] | None:
    """(parent, the parent's partition, the queue's) when a queue and its parent carry different node-pool labels —
    a KAI scheduler lists only its own partition's queues (pkg/scheduler/conf/scheduler_conf.go, GetLabelSelector)
    and drops a queue whose parent it does not list; None otherwise."""
    parent = ((queue or {}).get("spec") or {}).get("parentQueue")
    if not queue or not parent or parent not in queues:
        return None
    mine = (queue["metadata"].get("labels") or {}).get(NODEPOOL_LABEL, "")
    theirs = (queues[parent]["metadata"].get("labels") or {}).get(NODEPOOL_LABEL, "")
    return (parent, theirs, mine) if mine != theirs else None


def selects(selector: dict | None, meta: dict) -> bool:
    """Whether a label selector (matchLabels, matchExpressions) selects an object with this metadata: an empty one
    selects every object (policy/v1's PodDisruptionBudget), none selects none."""
    if selector is None:
        return False
    labels = meta.get("labels") or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        held = key in labels
        if not {
            "In": held and labels.get(key) in values,
            "NotIn": not held or labels.get(key) not in values,
            "Exists": held,
            "DoesNotExist": not held,
        }.get(op, False):
            return False
    return True


def quotas_past_fleet(queues: list[dict], nodes: list[dict]) -> tuple[float, float] | None:
    """(top-level queues' GPU quotas summed, the fleet's GPUs) when the quotas are more; None otherwise. An unlimited
    quota (-1) is not counted. The same rule as ``kailab status --queues``' warning (:func:`kailab.status.quota_warnings`)."""
    from kailab.status import top_level_quotas

    quotas, fleet = top_level_quotas(queues), sum(n["gpus"] for n in nodes)
    return (quotas, fleet) if nodes and quotas > fleet else None


def never_preempting(kube: Kube, evictions: list[str]) -> frozenset[str]:
    """The preemptors named in these messages ("ns/podgroup") whose priority class says preemptionPolicy: Never."""
    out = set()
    for named in {who for who in map(preemptor, evictions) if who}:
        ns, pg = named.split("/", 1)
        group = kube.get(PODGROUP_API, "PodGroup", pg, ns) or {}
        pc = (group.get("spec") or {}).get("priorityClassName")
        cls = kube.get("scheduling.k8s.io/v1", "PriorityClass", pc) if pc else None
        if cls and cls.get("preemptionPolicy") == "Never":
            out.add(named)
    return frozenset(out)


def readable(kube, api_version: str, kind: str, namespace: str) -> list[dict]:
    """The objects of a kind in ``namespace``, none when this user may not list them (a learner: budgets and bind
    requests are not theirs to read, and none of theirs can be there to explain)."""
    try:
        return kube.list(api_version, kind, namespace=namespace)
    except Exception as e:
        if getattr(e, "status", None) != 403:
            raise
        return []


def queue_standing(row: dict) -> str:
    """Why a full fleet may or may not make room: where the queue stands against its quota and fair share."""
    name, held, quota, share = row["name"], row["allocated"], row.get("quota"), row.get("fair_share")
    if share is not None and held >= share:
        return (
            f"Its queue '{name}' holds {held:g} GPUs, its fair share is {share:g}: the spare GPUs are "
            "other queues' share now, so KAI will not reclaim for it."
        )
    below_quota = quota is not None and quota >= 0 and held < quota
    if below_quota or (share is not None and held < share):
        where = f"{held:g} of its quota {quota:g}" if below_quota else f"{held:g} GPUs, below its fair share {share:g}"
        return (
            f"Its queue '{name}' holds {where}: KAI reclaims for it from queues over their quota or fair "
            f"share — unless their pods are non-preemptible or inside their queue's {kai('field.reclaimMinRuntime')}."
        )
    return f"Its queue '{name}' holds {held:g} GPUs" + (f" (fair share {share:g})." if share is not None else ".")


def nearest_node(nodes: list[dict], need: float) -> str:
    """The node closest to fitting the pod (most free GPUs, a shared GPU not free: :mod:`kailab.gpus`), and what it lacks."""
    if not nodes:
        return "There are no nodes."
    best = max(nodes, key=lambda n: n["free"])
    wants = f"a {need:g} fraction of one GPU" if is_fraction(need) else f"{need:g}"
    return (
        f"Nearest node: {best['name']} ({best['pool']}) has {best['free']} free GPU(s) of {best['gpus']}; "
        f"the pod needs {wants}."
    )
