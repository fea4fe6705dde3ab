"""A learner's credential: a ServiceAccount, what RBAC lets it do, what the admission policy refuses, a kubeconfig.

Pure builders (Kubernetes objects as dicts); ``classroom.access`` applies them. What a learner may do:

- in their own lesson namespaces (made by ``class up``, one per exercise, named ``<learner>-…``): everything a
  lesson does — workloads, pods, PodGroups, events, ConfigMaps (lesson records) — through a Role bound there;
- those namespaces themselves: get and patch (RBAC ``resourceNames``), nothing else's;
- cluster-wide: read nodes, namespaces, queues, priority classes and topologies (a lesson lists them by label);
  create, change and delete Queues, PriorityClasses and KAI Topologies (the topology lesson) — which RBAC cannot
  limit by name on create, so one ValidatingAdmissionPolicy (CEL, built into the API server) refuses any learner's
  request whose object (or, on update and delete, old object) is not named ``<learner>-…`` and labelled as theirs
  (their node pool and owner labels, by which ``class down`` finds it) — and, since a cluster-scoped object can
  act beyond its name (:func:`effect_rules`), a PriorityClass that would be every pod's default (``globalDefault``)
  and a Queue under another's parent queue;
- their own SchedulingShard (``<learner>-shard``): get and patch (RBAC ``resourceNames``) — their scheduler's
  settings; the same policy keeps its partition theirs (``<learner>``, or ``<learner>.stopped`` while stopped,
  kailab/shards.py), its ``args`` to the flags and values kailab's settings set (no ``--partition-label-value``
  of another's, no scheduling cycle shorter than the lab's), its other fields to those kailab's settings write, and
  its usage database to the lab's (:func:`shard_rules`); and, in KAI's namespace only (kind, existing), their
  scheduler's metrics through the API server's proxy to its Service and its Deployment (get: whether KAI's
  operator has rolled it out).
- the same policy holds a learner's pods to their partition (:func:`pod_rules`): a pod, or the pod template of a
  Job, Deployment, ReplicaSet or StatefulSet, carries their node-pool label, names only their queues (``kai.scheduler/queue``)
  and nodes (``nodeName``), selects no other node pool, and tolerates no other partition's taint
  (``kailab.io/partition``, see ``kailab.partitions.taint``) nor every taint (a toleration without a key), and a pod for any
  scheduler but KAI's (kube-scheduler knows no partitions) selects their node pool; and a PodGroup they
  make by hand (``scheduling.run.ai``) carries their node-pool label and names only their queues (``spec.queue``,
  and the queue label if it has one), since KAI's schedulers pick PodGroups by that label and charge that queue.

Nothing lets a learner read or change another learner's pods, namespaces or SchedulingShard, any node, or KAI's
Config.
"""

from __future__ import annotations

import base64

from kailab.labels import (
    KAI_NAMESPACE,
    KAI_SCHEDULER_NAME,
    LAB_ID_LABEL,
    LEARNER_LABEL,
    MANAGED,
    NODEPOOL_LABEL,
    PARTITION_TAINT_KEY,
    PODGROUP_API,
    QUEUE_API,
    QUEUE_LABEL,
    SHARD_API,
    TOPOLOGY_API,
)
from kailab.ownership import Owner
from kailab.partitions import LAB_ID_PREFIX
from kailab.scheduler_settings import LAB_SCHEDULER_ARGS, USAGE_DB_CLIENT, SchedulerSettings
from kailab.shards import STOPPED_SUFFIX, scheduler_name, shard_name

SHARD_GROUP = SHARD_API.split("/")[0]

CLASS_NAMESPACE = "kailab-class"  # the learners' ServiceAccounts
SA_PREFIX = "learner-"
POLICY = "kailab-class-learners"
READER = "kailab-class-reader"  # the cluster-wide part every learner shares
RBAC = "rbac.authorization.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"
# What makes pods in a learner's namespaces (their Role grants them): the policy checks the pods they would make
WORKLOADS = (
    ("", "pods"),
    ("batch", "jobs"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
)
PODGROUPS = (PODGROUP_API.split("/")[0], "podgroups")  # a gang made by hand: the policy checks its partition and queue
TOKEN_SECONDS = 12 * 3600  # a class day; `class down` revokes it sooner by deleting the ServiceAccount


def service_account(learner: str) -> str:
    return SA_PREFIX + learner


def username(learner: str) -> str:
    """The user the API server sees for the learner's token."""
    return f"system:serviceaccount:{CLASS_NAMESPACE}:{service_account(learner)}"


def _meta(name: str, labels: dict[str, str], namespace: str | None = None) -> dict:
    meta = {"name": name, "labels": dict(labels)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def class_objects(owner: Owner = Owner(), usage_db_url: str | None = None) -> list[dict]:
    """What every learner shares: their ServiceAccounts' namespace, the read-only ClusterRole, the admission policy
    (``usage_db_url``: the lab's usage database a learner's shard may name, :func:`shard_rules`)."""
    labels = owner.labels
    read = ["get", "list", "watch"]
    write = [*read, "create", "update", "patch", "delete"]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(CLASS_NAMESPACE, labels)},
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": _meta(READER, labels),
            "rules": [
                {"apiGroups": [""], "resources": ["nodes", "namespaces"], "verbs": read},
                {"apiGroups": [QUEUE_API.split("/")[0]], "resources": ["queues"], "verbs": write},
                {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": write},
                {"apiGroups": [TOPOLOGY_API.split("/")[0]], "resources": ["topologies"], "verbs": write},
            ],
        },
        *admission_policy(labels, usage_db_url),
    ]


def admission_policy(labels: dict[str, str], usage_db_url: str | None = None) -> list[dict]:
    """One policy for every learner: the learner is read from the request's user name."""
    prefix = f"system:serviceaccount:{CLASS_NAMESPACE}:{SA_PREFIX}"
    # named theirs and labelled theirs: their node pool, and the owner labels `class down` and a learner's `down`
    # delete by (kailab.partitions.owner: managed by kailab, lab id class-<learner>)
    owner = {
        **MANAGED,
        NODEPOOL_LABEL: "' + variables.learner + '",
        LAB_ID_LABEL: f"{LAB_ID_PREFIX}' + variables.learner + '",
    }
    theirs = "{o}.metadata.name.startsWith(variables.learner + '-') && has({o}.metadata.labels) && " + " && ".join(
        f"'{k}' in {{o}}.metadata.labels && {{o}}.metadata.labels['{k}'] == '{v}'" for k, v in owner.items()
    )
    policy = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": _meta(POLICY, labels),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    *(
                        _writes(group, resource, "CREATE", "UPDATE", "DELETE")
                        for group, resource in (
                            (QUEUE_API.split("/")[0], "queues"),
                            ("scheduling.k8s.io", "priorityclasses"),
                            (TOPOLOGY_API.split("/")[0], "topologies"),
                            ("", "namespaces"),
                            (SHARD_GROUP, "schedulingshards"),
                        )
                    ),
                    *(_writes(group, kind, "CREATE", "UPDATE") for group, kind in (*WORKLOADS, PODGROUPS)),
                ]
            },
            "matchConditions": [
                {"name": "learners-only", "expression": f"request.userInfo.username.startsWith('{prefix}')"}
            ],
            "variables": [
                {"name": "learner", "expression": f"request.userInfo.username.substring({len(prefix)})"},
                {"name": "workload", "expression": f"request.resource.resource in {[k for _, k in WORKLOADS]}"},
                {"name": "podgroup", "expression": f"request.resource.resource == '{PODGROUPS[1]}'"},
                {"name": "bare", "expression": "request.resource.resource == 'pods'"},
                # a Pod's spec, or the pod template's of a Job, Deployment, ReplicaSet or StatefulSet (workloads only)
                {"name": "pod", "expression": "variables.bare ? object.spec : object.spec.template.spec"},
                {"name": "podMeta", "expression": "variables.bare ? object.metadata : object.spec.template.metadata"},
            ],
            "validations": [
                *pod_rules(),
                *podgroup_rules(),
                *named_rules(theirs),
                *effect_rules(),
                *shard_rules(usage_db_url),
            ],
        },
    }
    binding = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": _meta(POLICY, labels),
        "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
    }
    return [policy, binding]


def _writes(group: str, resource: str, *operations: str) -> dict:
    """The requests a policy looks at: these operations on one resource of an API group (any version)."""
    return {"apiGroups": [group], "apiVersions": ["*"], "resources": [resource], "operations": list(operations)}


def _rule(expression: str, message: str) -> dict:
    """One validation: refused (403 Forbidden) with ``message`` (a CEL string expression) when ``expression`` is false."""
    return {"expression": expression, "messageExpression": message, "reason": "Forbidden"}


def _entry_is(holder: str, field: str, key: str, test: str, *, required: bool) -> str:
    """CEL: the entry ``key`` of the map ``holder.field`` (labels, a nodeSelector) passes ``test`` (CEL, its value
    as ``{v}``); when it is missing, ``required`` says."""
    present = f"has({holder}.{field}) && '{key}' in {holder}.{field}"
    value = test.format(v=f"{holder}.{field}['{key}']")
    return f"({present} ? {value} : {'false' if required else 'true'})"


def pod_rules() -> list[dict]:
    """The pod rule: what a learner's pod (or a workload's pod template) must be so it stays in their partition.

    It carries their node-pool label (their scheduler, and no one else's, places it) and, if it names a queue, one
    of theirs; it names in ``nodeName`` only a node of theirs; its nodeSelector asks for no other node pool; it
    tolerates no other partition's taint (``kailab.partitions.taint``) nor every taint (a toleration without a key)."""
    pool = "{v} == variables.learner"
    queue = "{v}.startsWith(variables.learner + '-')"
    who = "' + variables.learner + '"
    rules = [
        (
            f"{_entry_is('object.metadata', 'labels', NODEPOOL_LABEL, pool, required=True)} && "
            f"{_entry_is('variables.podMeta', 'labels', NODEPOOL_LABEL, pool, required=True)}",
            f"'a learner\\'s pods (and pod templates) must carry the label {NODEPOOL_LABEL}={who}: their partition'",
        ),
        (
            f"{_entry_is('object.metadata', 'labels', QUEUE_LABEL, queue, required=False)} && "
            f"{_entry_is('variables.podMeta', 'labels', QUEUE_LABEL, queue, required=False)}",
            f"'a learner\\'s pod may name in {QUEUE_LABEL} only a queue of theirs ({who}-…)'",
        ),
        (
            "!has(variables.pod.nodeName) || variables.pod.nodeName == '' "
            "|| variables.pod.nodeName.startsWith(variables.learner + '-')",
            f"'a learner\\'s pod may name only their own nodes ({who}-…) in nodeName'",
        ),
        (
            _entry_is("variables.pod", "nodeSelector", NODEPOOL_LABEL, pool, required=False),
            f"'a learner\\'s pod may select only their own node pool ({NODEPOOL_LABEL}={who})'",
        ),
        (
            f"(has(variables.pod.schedulerName) && variables.pod.schedulerName == '{KAI_SCHEDULER_NAME}') || "
            + _entry_is("variables.pod", "nodeSelector", NODEPOOL_LABEL, pool, required=True),
            f"'a learner\\'s pod for any scheduler but {KAI_SCHEDULER_NAME} must select their own node pool "
            f"(nodeSelector {NODEPOOL_LABEL}={who}): kube-scheduler knows no partitions'",
        ),
        (
            "!has(variables.pod.tolerations) || variables.pod.tolerations.all(t, has(t.key) && t.key != '' && "
            f"(t.key != '{PARTITION_TAINT_KEY}' || (has(t.value) && t.value == variables.learner && "
            "(!has(t.operator) || t.operator == 'Equal'))))",
            "'a learner\\'s pod may tolerate no taint of another partition: each toleration names its key, and "
            f"{PARTITION_TAINT_KEY} only with the value {who}'",
        ),
    ]
    return [_rule(f"!variables.workload || ({e})", m) for e, m in rules]


def podgroup_rules() -> list[dict]:
    """The PodGroup rule: a PodGroup a learner makes or changes is in their partition — it carries their node-pool
    label, by which only their scheduler picks it up — and, if it names a queue (``spec.queue``, or the queue label),
    one of theirs, so no other learner's queue is charged for it."""
    pool = "{v} == variables.learner"
    queue = "{v}.startsWith(variables.learner + '-')"
    who = "' + variables.learner + '"
    rules = [
        (
            _entry_is("object.metadata", "labels", NODEPOOL_LABEL, pool, required=True),
            f"'a learner\\'s PodGroup must carry the label {NODEPOOL_LABEL}={who}: their partition'",
        ),
        (
            f"(!has(object.spec) || !has(object.spec.queue) || object.spec.queue == '' || {queue.format(v='object.spec.queue')}) && "
            f"{_entry_is('object.metadata', 'labels', QUEUE_LABEL, queue, required=False)}",
            f"'a learner\\'s PodGroup may name (spec.queue, {QUEUE_LABEL}) only a queue of theirs ({who}-…)'",
        ),
    ]
    return [_rule(f"!variables.podgroup || ({e})", m) for e, m in rules]


def named_rules(theirs: str) -> list[dict]:
    """Queues, priority classes and namespaces: a learner makes, changes and deletes only their own."""
    return [
        _rule(
            f"variables.workload || variables.podgroup || request.operation == 'DELETE' || ({theirs.format(o='object')})",
            "'a learner may only make ' + request.resource.resource + ' named ' + "
            f"variables.learner + '-… and labelled {NODEPOOL_LABEL}=' + variables.learner + ', {LAB_ID_LABEL}="
            f"{LAB_ID_PREFIX}' + variables.learner + ' and {next(iter(MANAGED))}={next(iter(MANAGED.values()))}'",
        ),
        _rule(
            f"variables.workload || variables.podgroup || request.operation == 'CREATE' || "
            f"({theirs.format(o='oldObject')})",
            "'this ' + request.resource.resource + ' is not ' + variables.learner + "
            "'\\'s: a learner may only change or delete their own'",
        ),
    ]


def effect_rules() -> list[dict]:
    """What a cluster-scoped object of a learner's may not do beyond its name: a PriorityClass may not be the
    default of every pod created without one (``globalDefault``: the other learners' and the lab's too), and a Queue
    hangs only under a parent queue of theirs (KAI charges a child's use to its parent, and reclaims across the tree).
    """
    queue = "object.spec.parentQueue"
    return [
        _rule(
            "request.resource.resource != 'priorityclasses' || request.operation == 'DELETE' || "
            "!has(object.globalDefault) || !object.globalDefault",
            "'a learner\\'s PriorityClass may not be globalDefault: it would be the priority of every pod made "
            "without one, other learners\\' too'",
        ),
        _rule(
            "request.resource.resource != 'queues' || request.operation == 'DELETE' || !has(object.spec) || "
            f"!has({queue}) || {queue} == '' || {queue}.startsWith(variables.learner + '-')",
            "'a learner\\'s queue may have as parentQueue only a queue of theirs (' + variables.learner + '-…)'",
        ),
    ]


# The fields of a SchedulingShard's spec kailab's settings write (SchedulerSettings.shard_spec); KAI v0.17.0's CRD
# has more (plugins, actions, scenarioSearchBudgets, goMemLimit…), which a learner's shard may not set.
SHARD_FIELDS = (
    "partitionLabelValue",
    "args",
    "placementStrategy",
    "minRuntime",
    "kValue",
    "queueDepthPerAction",
    "usageDBConfig",
)
SHARD_FIELDS_REFUSED = ("actions", "goMemLimit", "goMemLimitRatio", "plugins", "scenarioSearchBudgets")


def shard_rules(usage_db_url: str | None) -> list[dict]:
    """A learner's SchedulingShard (theirs by name, RBAC): its partition stays theirs (or their stopped one),
    its args are the flags kailab sets with the values it sets (no other partition as a flag, no scheduling cycle
    shorter than the lab's, which would take the shared cores from everyone), it sets no field kailab's settings
    do not write, and its usage database is the lab's (``usage_db_url``; None: none may be named, the local
    runtime's supervisor gives its own) — never an address of the learner's choosing for their scheduler to call."""
    spec = "object.spec"
    args = f"{spec}.args"
    usage = f"{spec}.usageDBConfig"
    period = LAB_SCHEDULER_ARGS["schedule-period"]
    url_ok = f"{usage}.connectionString == '{usage_db_url}'" if usage_db_url else "false"
    rules = [
        (
            f"has({spec}.partitionLabelValue) && {spec}.partitionLabelValue in "
            f"[variables.learner, variables.learner + '{STOPPED_SUFFIX}']",
            "'a learner\\'s SchedulingShard keeps partitionLabelValue ' + variables.learner",
        ),
        (
            f"!has({args}) || ({args}.all(k, k in {list(SchedulerSettings.ARGS)!r}) && "
            f"(!('schedule-period' in {args}) || {args}['schedule-period'] == '{period}') && "
            f"(!('full-hierarchy-fairness' in {args}) || {args}['full-hierarchy-fairness'] in ['true', 'false']))",
            f"'a learner\\'s SchedulingShard has only the args {', '.join(SchedulerSettings.ARGS)} "
            f"(schedule-period {period}, full-hierarchy-fairness true or false)'",
        ),
        (
            " && ".join(f"!has({spec}.{f})" for f in SHARD_FIELDS_REFUSED),
            f"'a learner\\'s SchedulingShard sets only {', '.join(SHARD_FIELDS)}'",
        ),
        (
            f"!has({usage}) || ((!has({usage}.clientType) || {usage}.clientType == '{USAGE_DB_CLIENT}') && "
            f"!has({usage}.connectionStringEnvVar) && (!has({usage}.connectionString) || {url_ok}))",
            "'a learner\\'s SchedulingShard may name no usage database but the lab\\'s'",
        ),
    ]
    return [
        _rule(f"request.resource.resource != 'schedulingshards' || request.operation == 'DELETE' || ({e})", m)
        for e, m in rules
    ]


def learner_objects(learner: str, namespaces: list[str], owner: Owner) -> list[dict]:
    """The learner's ServiceAccount and what it may do: a Role in each of their namespaces, their namespaces by
    name, and the shared reader role."""
    labels = {**owner.labels, LEARNER_LABEL: learner}
    sa = service_account(learner)
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": CLASS_NAMESPACE}]
    own = f"kailab-learner-{learner}"
    out: list[dict] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(sa, labels, CLASS_NAMESPACE)},
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": _meta(own, labels),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["namespaces"],
                    "resourceNames": list(namespaces),
                    "verbs": ["get", "patch", "update"],
                },
                {
                    "apiGroups": [SHARD_GROUP],
                    "resources": ["schedulingshards"],
                    "resourceNames": [shard_name(learner)],
                    "verbs": ["get", "patch"],
                },
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(own, labels),
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": own},
        },
        {  # in KAI's namespace (kind, existing): whether their scheduler's Deployment has rolled out (KAI's operator
            # restarts it), and their scheduler's metrics through the API server's proxy to the operator's Service
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": _meta(own, labels, KAI_NAMESPACE),
            "rules": [
                {
                    "apiGroups": ["apps"],
                    "resources": ["deployments"],
                    "resourceNames": [scheduler_name(learner)],
                    "verbs": ["get"],
                },
                {
                    "apiGroups": [""],
                    "resources": ["services/proxy"],
                    "resourceNames": [scheduler_name(learner), f"{scheduler_name(learner)}:http-metrics"],
                    "verbs": ["get"],
                },
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": _meta(own, labels, KAI_NAMESPACE),
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": own},
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(f"{own}-reader", labels),
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
        },
    ]
    lesson = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
    for ns in namespaces:
        out.append(
            {
                "apiVersion": RBAC,
                "kind": "Role",
                "metadata": _meta("kailab-learner", labels, ns),
                "rules": [
                    {"apiGroups": [""], "resources": ["pods", "events", "configmaps"], "verbs": lesson},
                    {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get", "list", "watch"]},
                    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": lesson},
                    {
                        "apiGroups": ["apps"],
                        "resources": ["deployments", "replicasets", "statefulsets"],
                        "verbs": lesson,
                    },
                    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": lesson},
                    {"apiGroups": [PODGROUP_API.split("/")[0]], "resources": ["podgroups"], "verbs": lesson},
                ],
            }
        )
        out.append(
            {
                "apiVersion": RBAC,
                "kind": "RoleBinding",
                "metadata": _meta("kailab-learner", labels, ns),
                "subjects": subject,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kailab-learner"},
            }
        )
    return out


def kubeconfig(learner: str, server: str, ca_data: str, token: str, cluster: str) -> dict:
    """The learner's kubeconfig: the cluster's server and CA (``ca_data`` base64, as kubeconfigs hold it), their token.

    ``cluster`` names the class's cluster (its context is ``kailab-class-<learner>``), so ``kailab join`` can tell
    a file for another cluster.
    """
    base64.b64decode(ca_data, validate=True)  # a CA that is not base64 is a bug here, not the learner's
    context = f"kailab-class-{learner}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": service_account(learner), "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": service_account(learner)}}],
        "preferences": {},
    }
