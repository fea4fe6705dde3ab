"""The isolation matrix, as multi-tenancy benchmarks prove it: every resource kind the API server serves (read from
discovery at run time: core, every group, KAI's CRDs, subresources) × every verb, in each scope — the learner's own
namespaces, another learner's, the lab's, cluster-scoped — read from the learner's own SelfSubjectRulesReview (what
``kubectl auth can-i --list`` asks, through the API, never its text), against what a learner is meant to be able to
do (written out here, not read from kailab's roles), and the writes RBAC allows but the admission policy guards,
tried for real. Used by the local fleet test (tests/fleet/test_class_isolation_fleet.py) and the kind one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes import client

from kailab import partitions, shards
from kailab.classroom import access, credentials, grading
from kailab.kube import Kube
from kailab.labels import KAI_NAMESPACE

# Verbs RBAC knows beyond the ones discovery lists: each would be a way out of a slice if granted.
SPECIAL_VERBS = ("impersonate", "bind", "escalate", "approve", "sign", "use", "attest")
READ = frozenset({"get", "list", "watch"})
WRITE = READ | {"create", "update", "patch", "delete"}
LESSON = WRITE | {"deletecollection"}
ANY = "*"  # every name
LAB = "the lab's namespaces"
TASKS = "the class's tasks"  # kailab/classroom/grading.py's namespace


@dataclass(frozen=True)
class Kind:
    group: str
    resource: str  # "pods", or a subresource: "pods/exec"
    namespaced: bool
    verbs: frozenset[str]

    @property
    def name(self) -> str:
        return f"{self.group or 'core'}/{self.resource}"


def served(kube: Kube) -> list[Kind]:
    """Every resource (and subresource) of every group version the API server serves, merged across versions."""
    found: dict[tuple[str, str], Kind] = {}

    def get(path: str) -> dict:
        return kube.dyn.request("GET", path).to_dict()

    def add(group: str, path: str) -> None:
        listing = get(path)
        for r in listing.get("resources") or []:
            key = (group, r["name"])
            old = found.get(key)
            verbs = frozenset(r.get("verbs") or []) | (old.verbs if old else frozenset())
            found[key] = Kind(group, r["name"], bool(r.get("namespaced")), verbs)

    add("", "/api/v1")
    groups = get("/apis")
    for g in groups["groups"]:
        for v in g["versions"]:
            add(g["name"], f"/apis/{v['groupVersion']}")
    return sorted(found.values(), key=lambda k: (k.group, k.resource))


def every_verb(kinds: list[Kind]) -> list[str]:
    return sorted(set().union(*(k.verbs for k in kinds)) | set(SPECIAL_VERBS))


def rules(learner: Kube, namespace: str) -> list[dict]:
    """The learner's resource rules in ``namespace`` (cluster-wide ones included), as the API server says them."""
    review = client.AuthorizationV1Api(learner.api).create_self_subject_rules_review(
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": namespace}}
    )
    assert not review.status.incomplete, review.status.evaluation_error  # every authorizer could say
    return [r.to_dict() for r in review.status.resource_rules or []]


def _resource_matches(rule_resource: str, resource: str) -> bool:
    """RBAC's rule (k8s.io/kubernetes pkg/apis/rbac/v1 ResourceMatches): ``*``, the exact resource, or ``*/sub``."""
    if rule_resource in ("*", resource):
        return True
    sub = resource.partition("/")[2]
    return bool(sub) and rule_resource == f"*/{sub}"


def allowed(found: list[dict], kind: Kind, verb: str) -> str | frozenset[str] | None:
    """None: refused; ANY: for every name; else the names it is allowed on."""
    names: set[str] = set()
    for r in found:
        if not ({"*", verb} & set(r.get("verbs") or [])):
            continue
        if not ({"*", kind.group} & set(r.get("api_groups") or [])):
            continue
        if not any(_resource_matches(x, kind.resource) for x in r.get("resources") or []):
            continue
        if not r.get("resource_names"):
            return ANY
        names |= set(r["resource_names"])
    return frozenset(names) or None


Matrix = dict[str, dict[str, str | frozenset[str]]]  # kind name → verb → allowance (refused verbs left out)


def matrix(found: list[dict], kinds: list[Kind], verbs: list[str], namespaced: bool) -> Matrix:
    out: Matrix = {}
    for kind in kinds:
        if kind.namespaced != namespaced:
            continue
        row = {v: a for v in verbs if (a := allowed(found, kind, v)) is not None}
        if row:
            out[kind.name] = row
    return out


def expected(learner: str) -> dict[str, Matrix]:
    """What a learner is meant to be able to do, scope by scope (a kind or verb not here is refused)."""

    def each(verbs, names=ANY) -> dict:
        return {v: names for v in verbs}

    own_namespaces = frozenset(access.lesson_namespaces(learner))
    scheduler = shards.scheduler_name(learner)
    return {
        "own namespace": {
            **{f"core/{r}": each(LESSON) for r in ("pods", "events", "configmaps")},
            "core/serviceaccounts": each(READ),
            "batch/jobs": each(LESSON),
            "apps/deployments": each(LESSON),
            "apps/replicasets": each(LESSON),
            "apps/statefulsets": each(LESSON),
            "events.k8s.io/events": each(LESSON),
            "scheduling.run.ai/podgroups": each(LESSON),
        },
        "another learner's namespace": {},
        LAB: {},
        TASKS: {"core/configmaps": each(READ)},  # the tasks' goals and starting files; their checks are Secrets
        KAI_NAMESPACE: {
            "apps/deployments": each({"get"}, frozenset({scheduler})),
            "core/services/proxy": each({"get"}, frozenset({scheduler, f"{scheduler}:http-metrics"})),
        },
        "cluster": {
            "core/nodes": each(READ),
            "core/namespaces": {**each(READ), **each({"patch", "update"}, own_namespaces)},
            "scheduling.run.ai/queues": each(WRITE),  # admission-guarded: theirs only
            "scheduling.k8s.io/priorityclasses": each(WRITE),  # admission-guarded: theirs, no globalDefault
            "kai.scheduler/topologies": each(WRITE),  # admission-guarded: theirs only
            "kai.scheduler/schedulingshards": each({"get", "patch"}, frozenset({shards.shard_name(learner)})),
            # every authenticated user's (system:basic-user): asking what they may do
            "authorization.k8s.io/selfsubjectaccessreviews": each({"create"}),
            "authorization.k8s.io/selfsubjectrulesreviews": each({"create"}),
            "authentication.k8s.io/selfsubjectreviews": each({"create"}),
        },
    }


def lab_scope(namespace: str) -> str:
    """The scope of :func:`expected` a namespace that is no learner's falls in."""
    return KAI_NAMESPACE if namespace == KAI_NAMESPACE else TASKS if namespace == grading.NAMESPACE else LAB


def _cell(a: str | frozenset[str]) -> str:
    return "all" if a == ANY else "names " + ",".join(sorted(a))


def table(title: str, kinds: list[Kind], verbs: list[str], scopes: dict[str, Matrix]) -> str:
    """The matrix as text: every kind checked, each scope's allowed verbs (a kind allowed nothing: ``-``)."""
    lines = [title, f"{len(kinds)} kinds × {len(verbs)} verbs ({', '.join(verbs)}) × {len(scopes)} scopes"]
    lines.append("kind | " + " | ".join(scopes))
    for kind in kinds:
        cells = []
        for m in scopes.values():
            row = m.get(kind.name) or {}
            groups: dict[str, list[str]] = {}
            for verb, a in row.items():
                groups.setdefault(_cell(a), []).append(verb)
            cells.append("; ".join(f"{','.join(sorted(v))} ({c})" for c, v in sorted(groups.items())) or "-")
        lines.append(f"{kind.name}{'' if kind.namespaced else ' [cluster]'} | " + " | ".join(cells))
    return "\n".join(lines)


def refusal(call) -> tuple[int, str]:
    """The API server's status and words for a call; (0, "") when it was allowed."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import DynamicApiError

    try:
        call()
    except (ApiException, DynamicApiError) as e:
        return e.status, str(e.body)
    return 0, ""


POLICY = credentials.POLICY


# -- the writes RBAC lets a learner make on shared kinds, which only the admission policy keeps in their slice ---------

QUEUE_API = "scheduling.run.ai/v2"
PC_API = "scheduling.k8s.io/v1"
TOPOLOGY_API = "kai.scheduler/v1alpha1"
SHARD_API = "kai.scheduler/v1"
PODGROUP_API = "scheduling.run.ai/v2alpha2"


def queue(name: str, owner: str, **spec) -> dict:
    resources = {r: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for r in ("gpu", "cpu", "memory")}
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": name, "labels": dict(partitions.owner(owner).labels)},
        "spec": {"resources": resources, **spec},
    }


def priority_class(name: str, owner: str, value: int = 10, default: bool = False) -> dict:
    return {
        "apiVersion": PC_API,
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": dict(partitions.owner(owner).labels)},
        "value": value,
        "globalDefault": default,
    }


def topology(name: str, owner: str) -> dict:
    return {
        "apiVersion": TOPOLOGY_API,
        "kind": "Topology",
        "metadata": {"name": name, "labels": dict(partitions.owner(owner).labels)},
        "spec": {"levels": [{"nodeLabel": "topology.kailab.io/zone"}]},
    }


def others_objects(learner: str) -> list[dict]:
    """What the instructor makes for ``learner`` first, for another learner's attempts on it."""
    return [
        queue(f"{learner}-team", learner),
        priority_class(f"{learner}-pc", learner),
        topology(f"{learner}-topo", learner),
    ]


def pod(name: str, namespace: str, learner: str, *, labels=None, **spec) -> dict:
    """A pod as kailab makes it for ``learner`` (their labels and toleration, confined), with changes on top."""
    from kailab.labels import KWOK_TOLERATION
    from kailab.ownership import stamped

    made = stamped(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "schedulerName": "kai-scheduler",
                "tolerations": [dict(KWOK_TOLERATION)],
                "containers": [{"name": "c", "image": "x"}],
            },
        },
        partitions.owner(learner),
    )
    made["metadata"]["labels"].update(labels or {})
    made["spec"].update(spec)
    return made


def guarded_writes(a: str, ann: Kube, b: str) -> dict[str, tuple[str, object]]:
    """What learner ``a`` (client ``ann``) must be refused against learner ``b``'s slice and the class's shared
    state: description → (who refuses: "policy" or "rbac", the call)."""
    from kailab.labels import NODEPOOL_LABEL, QUEUE_LABEL

    ns = access.lesson_namespaces(a)[0]
    b_ns = access.lesson_namespaces(b)[0]
    b_node = f"{b}-kwok-a100-0"
    shard = ann.resource(SHARD_API, "SchedulingShard")

    def patch_shard(name: str, spec: dict):
        return lambda: ann.dyn.patch(shard, body={"spec": spec}, name=name, content_type="application/merge-patch+json")

    unowned = queue(f"{a}-unowned", a)
    del unowned["metadata"]["labels"]["kailab.io/lab-id"]
    no_pool = pod("no-pool-selector", ns, a, schedulerName="default-scheduler")
    no_pool["spec"].pop("nodeSelector", None)
    job_template = pod("t", ns, a, labels={NODEPOOL_LABEL: b})
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "aimed", "namespace": ns, "labels": dict(partitions.owner(a).labels)},
        "spec": {
            "template": {
                "metadata": {"labels": job_template["metadata"]["labels"]},
                "spec": {**job_template["spec"], "restartPolicy": "Never"},
            }
        },
    }
    deployment_pod = pod("d", ns, a, schedulerName="default-scheduler")
    deployment_pod["spec"].pop("nodeSelector", None)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "aimed", "namespace": ns, "labels": dict(partitions.owner(a).labels)},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {**deployment_pod["metadata"]["labels"], "app": "x"}},
                "spec": deployment_pod["spec"],
            },
        },
    }
    group = {
        "apiVersion": PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {"name": "aimed", "namespace": ns, "labels": dict(partitions.owner(a).labels)},
        "spec": {"minMember": 1, "queue": f"{b}-team"},
    }
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "mine"},
        "target": {"kind": "Node", "name": b_node},
    }
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "theirs", "namespace": b_ns}}
    return {
        "create a queue named as B's": ("policy", lambda: ann.apply(queue(f"{b}-sneaky", b))),
        "create a queue of A's name in B's partition": (
            "policy",
            lambda: ann.apply(
                {**queue(f"{a}-x", a), "metadata": {"name": f"{a}-x", "labels": dict(partitions.owner(b).labels)}}
            ),
        ),
        "create a queue of A's under B's parent queue": (
            "policy",
            lambda: ann.apply(queue(f"{a}-child", a, parentQueue=f"{b}-team")),
        ),
        "create a queue without the owner labels class down deletes by": ("policy", lambda: ann.apply(unowned)),
        "change B's queue": ("policy", lambda: ann.apply({**queue(f"{b}-team", b), "spec": {"priority": 1}})),
        "delete B's queue": ("policy", lambda: ann.delete(QUEUE_API, "Queue", f"{b}-team")),
        "create a priority class named as B's": ("policy", lambda: ann.apply(priority_class(f"{b}-mine", b))),
        "create a globalDefault priority class of A's (every pod's default)": (
            "policy",
            lambda: ann.apply(priority_class(f"{a}-everyone", a, 999999, True)),
        ),
        "change B's priority class": (
            "policy",
            lambda: ann.apply({**priority_class(f"{b}-pc", b), "description": "A was here"}),
        ),
        "delete B's priority class": ("policy", lambda: ann.delete(PC_API, "PriorityClass", f"{b}-pc")),
        "create a topology named as B's": ("policy", lambda: ann.apply(topology(f"{b}-mine", b))),
        "delete B's topology": ("policy", lambda: ann.delete(TOPOLOGY_API, "Topology", f"{b}-topo")),
        "point A's shard at B's partition": ("policy", patch_shard(shards.shard_name(a), {"partitionLabelValue": b})),
        "give A's scheduler B's partition as a flag": (
            "policy",
            patch_shard(shards.shard_name(a), {"args": {"partition-label-value": b}}),
        ),
        "give A's scheduler a 1 ms cycle (the shared cores)": (
            "policy",
            patch_shard(shards.shard_name(a), {"args": {"schedule-period": "1ms"}}),
        ),
        "give A's scheduler plugins of its own": (
            "policy",
            patch_shard(shards.shard_name(a), {"plugins": {"proportion": {"enabled": False}}}),
        ),
        "point A's scheduler's usage database at an address of A's choosing": (
            "policy",
            patch_shard(
                shards.shard_name(a),
                {"usageDBConfig": {"clientType": "prometheus", "connectionString": "http://169.254.169.254/"}},
            ),
        ),
        "change B's scheduler (B's shard)": (
            "rbac",
            patch_shard(shards.shard_name(b), {"placementStrategy": {"gpu": "spread"}}),
        ),
        "label B's namespace": ("rbac", lambda: ann.core.patch_namespace(b_ns, {"metadata": {"labels": {"x": "y"}}})),
        "a default-scheduler pod of A's that may land on any node (the instructor's)": (
            "policy",
            lambda: ann.apply(no_pool),
        ),
        "a pod of A's in B's partition": ("policy", lambda: ann.apply(pod("p1", ns, a, labels={NODEPOOL_LABEL: b}))),
        "a pod of A's in B's queue": ("policy", lambda: ann.apply(pod("p2", ns, a, labels={QUEUE_LABEL: f"{b}-team"}))),
        "a pod of A's on B's node (nodeName)": ("policy", lambda: ann.apply(pod("p3", ns, a, nodeName=b_node))),
        "a pod of A's selecting B's node pool": (
            "policy",
            lambda: ann.apply(pod("p4", ns, a, nodeSelector={NODEPOOL_LABEL: b})),
        ),
        "a pod of A's tolerating B's taint": (
            "policy",
            lambda: ann.apply(pod("p5", ns, a, tolerations=[partitions.toleration(b)])),
        ),
        "a pod of A's tolerating every taint": (
            "policy",
            lambda: ann.apply(pod("p6", ns, a, tolerations=[{"operator": "Exists"}])),
        ),
        "a Job of A's whose pods are B's partition's": ("policy", lambda: ann.apply(job)),
        "a Deployment of A's whose default-scheduler pods may land anywhere": ("policy", lambda: ann.apply(deployment)),
        "a PodGroup of A's charged to B's queue": ("policy", lambda: ann.apply(group)),
        "bind a pod of A's to B's node (pods/binding)": (
            "rbac",
            lambda: ann.core.create_namespaced_pod_binding("mine", ns, binding),
        ),
        "evict a pod of B's (pods/eviction)": (
            "rbac",
            lambda: ann.core.create_namespaced_pod_eviction("theirs", b_ns, eviction),
        ),
        "read B's pods": ("rbac", lambda: ann.core.list_namespaced_pod(b_ns)),
        "read B's shard": ("rbac", lambda: ann.dyn.get(shard, name=shards.shard_name(b))),
    }


def allowed_writes(a: str, ann: Kube) -> dict[str, tuple[object, object]]:
    """What learner ``a`` may do in their slice, with the call that undoes it: the refusals above are not all-refusing."""
    ns = access.lesson_namespaces(a)[0]
    from kailab.labels import NODEPOOL_LABEL

    # kube-scheduler's, confined as kailab confines it: their node pool selected
    mine = pod("mine", ns, a, schedulerName="default-scheduler", nodeSelector={NODEPOOL_LABEL: a})
    return {
        "a queue of theirs": (
            lambda: ann.apply(queue(f"{a}-ok", a)),
            lambda: ann.delete(QUEUE_API, "Queue", f"{a}-ok"),
        ),
        "a child queue under their own": (
            lambda: ann.apply(queue(f"{a}-ok-child", a, parentQueue=f"{a}-team")),
            lambda: ann.delete(QUEUE_API, "Queue", f"{a}-ok-child"),
        ),
        "a priority class of theirs": (
            lambda: ann.apply(priority_class(f"{a}-ok", a)),
            lambda: ann.delete(PC_API, "PriorityClass", f"{a}-ok"),
        ),
        "a default-scheduler pod on their own nodes": (
            lambda: ann.apply(mine),
            lambda: ann.core.delete_namespaced_pod("mine", ns, grace_period_seconds=0),
        ),
    }
