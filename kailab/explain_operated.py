"""``kailab explain`` for the pods an operator makes (a RayCluster's, a PyTorchJob's, a JobSet's, a LeaderWorkerSet's).

KAI's pod-grouper walks a pod's owners to the top one (pkg/podgrouper/podgrouper.go, GetPodOwners) and gives the
kind's plugin that object (hub/hub.go); the PodGroup it makes names that top owner as its owner
(plugins/defaultgrouper/default_grouper.go, GetPodGroupMetadata). So the PodGroup says which object the gang is of,
and how big: what :class:`Gang` reads, never re-derived.

The rules are data (:data:`RULES`): each reads an explanation and its :class:`Gang` and, when it recognises the
failure, says what it is and which runbook to read. :func:`gang_of`, :func:`served_kinds` and :func:`crd_served`
read the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kailab import operators
from kailab.explain_words import MIN_MEMBER
from kailab.gpus import is_fraction
from kailab.kai_strings import get as kai
from kailab.labels import PODGROUP_API, QUEUE_LABEL

MIN_SUB_GROUP = kai("field.minSubGroup")


@dataclass(frozen=True)
class Gang:
    """The PodGroup KAI's pod-grouper made for a pod an operator made, and what else explain needs of it.

    ``owner_labelled``: whether the top owner carries the queue label (KAI reads it there first);
    ``too_big``: (a pod of the gang, its GPUs, the largest node's GPUs) when that pod fits on no node.
    """

    kind: str  # the top owner's kind (RayCluster …)
    owner: str  # its name
    pod_group: str
    size: str  # "minMember 3", or "minSubGroup 2" (a JobSet's PodGroup has no minMember of its own)
    queue: str  # the PodGroup's spec.queue: the queue KAI schedules it in
    operator: str  # the operator's title (KubeRay …)
    grouper: str  # the KAI grouper plugin that sized it
    owner_labelled: bool = True
    too_big: tuple[str, float, float] | None = None
    pod_queues: tuple[str, ...] = ()  # the queue labels its pods carry, sorted ("": a pod without one)

    def line(self) -> str:
        return (
            f"KAI's pod-grouper walked its owners up to {self.kind} '{self.owner}' (made by {self.operator}) and gave "
            f"it PodGroup '{self.pod_group}': {self.size}, queue '{self.queue}' (sized by {self.grouper})."
        )


@dataclass(frozen=True)
class Rule:
    """One failure of an operator's workload: ``says`` (the pod's state, its own label's queue, its gang) → what
    happened, or "" when it is not this failure; ``runbook`` to read."""

    name: str
    says: Callable[[str, str, Gang], str]
    runbook: str


def _queue_on_template(state: str, pod_queue: str, g: Gang) -> str:
    if not g.owner_labelled and len(g.pod_queues) > 1:
        said = ", ".join(f"'{q}'" if q else "none" for q in g.pod_queues)
        return (
            f"Its {g.kind} has no {QUEUE_LABEL} label and its pods' templates disagree ({said}): KAI reads the top "
            "owner's label first, then the label of the pod it is grouping, and fixes a PodGroup's queue when it makes "
            "it (default_grouper.go CalcPodGroupQueue; podgroup/handler.go keeps it after) — so the gang's queue, "
            f"'{g.queue}' now, is that of whichever pod KAI grouped first. Put the label on the {g.kind} itself."
        )
    if not pod_queue or pod_queue == g.queue:
        return ""
    if g.owner_labelled:
        return (
            f"Its pod template has {QUEUE_LABEL}: '{pod_queue}', but its {g.kind}'s own label says '{g.queue}': KAI "
            "reads the top owner's label first, and the pod's only when the owner has none (default_grouper.go)."
        )
    return (
        f"Its pod template has {QUEUE_LABEL}: '{pod_queue}', its {g.kind} has none, and KAI put the gang in "
        f"'{g.queue}'. KAI reads the label on the top owner first, then on the pod it is grouping, and fixes a "
        "PodGroup's queue when it makes it, from the first pod it sees (default_grouper.go CalcPodGroupQueue; "
        f"podgroup/handler.go keeps it after): a template without the label ({g.kind}'s first pod) decided. Put the "
        f"label on the {g.kind} itself."
    )


def _group_too_big(state: str, pod_queue: str, g: Gang) -> str:
    if state != "Pending" or g.too_big is None:
        return ""
    pod, wants, largest = g.too_big
    return (
        f"Its whole gang waits: pod '{pod}' of {g.kind} '{g.owner}' asks for {wants:g} GPUs, and the largest node has "
        f"{largest:g}. A pod runs on one node, so KAI can never place that one, and with its gang's {g.size} not one "
        "pod of the gang binds — not even those that would fit. Give that worker group at most one node's GPUs per "
        "pod (more pods instead)."
    )


# First match wins; a rule here names its runbook over the general ones (gang-not-binding, too-big, pending-forever)
RULES = (
    Rule("queue-on-template", _queue_on_template, "runbooks/operator-queue-on-template.md"),
    Rule("group-too-big", _group_too_big, "runbooks/operator-group-too-big.md"),
)
# The runbooks a rule above may take over: they say less than the rule does
GENERAL = ("", "runbooks/gang-not-binding.md", "runbooks/too-big.md", "runbooks/pod-pending-forever.md")


def apply_rules(state: str, pod_queue: str, g: Gang | None, runbook: str) -> tuple[list[str], str]:
    """(details to add, the runbook then) for a pod of gang ``g``: where it comes from, and what a rule recognises."""
    if g is None:
        return [], runbook
    details = [g.line()]
    for rule in RULES:
        said = rule.says(state, pod_queue, g)
        if said:
            details.append(said)
            if runbook in GENERAL:
                runbook = rule.runbook
            break
    return details, runbook


def gang_of(kube, pod_group: str, namespace: str, peers: list, nodes: list[dict], cache: dict) -> Gang | None:
    """The :class:`Gang` of a PodGroup whose top owner is an operator's kind; None for any other (or none).
    ``peers``: the namespace's pods (PodView); ``nodes``: rows of ``status.nodes_and_gpus``; ``cache``: per call."""
    if not pod_group:
        return None
    if pod_group in cache:
        return cache[pod_group]
    group = _readable(kube, PODGROUP_API, "PodGroup", pod_group, namespace) or {}
    refs = (group.get("metadata") or {}).get("ownerReferences") or []
    ref = refs[0] if refs else {}
    op = operators.operator_for(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
    gang = None
    if op is not None:
        spec = group.get("spec") or {}
        size = (
            f"{MIN_SUB_GROUP} {spec[MIN_SUB_GROUP]}"
            if spec.get(MIN_SUB_GROUP) is not None
            else f"{MIN_MEMBER} {spec.get(MIN_MEMBER, '?')}"
        )
        owner = _readable(kube, ref["apiVersion"], ref["kind"], ref["name"], namespace)
        largest = max((n["gpus"] for n in nodes), default=0)
        big = [p for p in peers if p.pod_group == pod_group and not is_fraction(p.gpus) and p.gpus > largest]
        gang = Gang(
            kind=ref["kind"],
            owner=ref["name"],
            pod_group=pod_group,
            size=size,
            queue=spec.get("queue") or "default-queue",
            operator=op.title,
            grouper=op.grouper,
            # not readable (a learner's RBAC): taken as labelled, so nothing is said of its label
            owner_labelled=owner is None or QUEUE_LABEL in ((owner.get("metadata") or {}).get("labels") or {}),
            too_big=(big[0].name, big[0].gpus, largest) if big and nodes else None,
            pod_queues=tuple(sorted({p.queue for p in peers if p.pod_group == pod_group})),
        )
    cache[pod_group] = gang
    return gang


def _readable(kube, api_version: str, kind: str, name: str, namespace: str) -> dict | None:
    """The object, {} when it is not there, None when this user may not read it."""
    try:
        return kube.get(api_version, kind, name, namespace) or {}
    except Exception as e:
        if getattr(e, "status", None) != 403:
            raise
        return None


def owned_pod_groups(kube, kind: str, name: str, namespace: str) -> set[str]:
    """The PodGroups of ``namespace`` whose owner is the ``kind`` object ``name``: KAI's gang of it."""
    return {
        g["metadata"]["name"]
        for g in kube.list(PODGROUP_API, "PodGroup", namespace=namespace)
        if any(r.get("kind") == kind and r.get("name") == name for r in g["metadata"].get("ownerReferences") or [])
    }


def crd_of(api_version: str, kind: str) -> str:
    """The CRD that serves an operator's kind, as each of them names it (``rayclusters.ray.io``)."""
    return f"{kind.lower()}s.{api_version.split('/')[0]}"


def crd_served(kube, crd: str) -> bool:
    """Whether the cluster has this CRD (taken as served when this user may not list CRDs: a learner)."""
    names = kube.crd_names()
    return names is None or crd in names


def served_kinds(kube, namespace: str, name: str, kind: str | None = None) -> list[tuple[operators.Operator, str, str]]:
    """(operator, apiVersion, kind) of each operator's object called ``name`` in ``namespace`` — of ``kind`` alone when
    given — of the kinds this cluster serves. The CRDs' names are listed once (their metadata alone: a CRD's schema is
    hundreds of KB), so a kind not served costs no API discovery; a user who may not list them (a learner) asks for
    each kind, and a kind not served or not theirs to read is passed over."""
    crds = kube.crd_names()
    found = []
    for op in operators.OPERATORS.values():
        for api_version, k in op.kinds:
            if (kind is not None and k != kind) or (crds is not None and crd_of(api_version, k) not in crds):
                continue
            try:
                if kube.get(api_version, k, name, namespace) is not None:
                    found.append((op, api_version, k))
            except Exception as e:  # a learner: not served here (no CRD list to tell), or not theirs to read
                if crds is not None and getattr(e, "status", None) != 403:
                    raise
    return found


def kind_named(text: str) -> tuple[operators.Operator, str, str] | None:
    """``RayCluster/name`` (any case): (its operator, apiVersion, kind); None when ``text`` names no operator kind."""
    kind = text.split("/", 1)[0].lower() if "/" in text else ""
    for op in operators.OPERATORS.values():
        for api_version, k in op.kinds:
            if k.lower() == kind:
                return op, api_version, k
    return None


def not_served(op: operators.Operator, kind: str, missing: list[str], lessons: list[str]) -> str:
    """What to say of a kind the cluster does not serve: which operator, and the lessons that then do not apply."""
    which = f"the lessons {', '.join(lessons)} need it and do not apply here" if lessons else "lessons need it"
    return (
        f"This cluster does not serve {kind} (no CRD {', '.join(missing)}): its operator, {op.title}, is not "
        f"installed, so nothing makes such pods; {which}. kailab installs no CRD on a cluster it did not make."
    )


def no_pods(op: operators.Operator, kind: str) -> str:
    """What to say of an operator's object that has no pods (and so no PodGroup)."""
    return (
        f"The {kind} has no pods, so KAI has nothing to group: {op.title} makes its pods, and has made none — is "
        f"{op.title} running (kailab status; on a cluster kailab did not make, kailab doctor)? Its events may say "
        "more (kubectl describe)."
    )
