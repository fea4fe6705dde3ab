"""What ``kailab up --runtime existing`` checks before it adopts a cluster, as findings.

:func:`findings` is pure: what was read of the cluster (:class:`Facts`) → one row per check,
ok, warning or problem, with what to do. A problem stops the adoption before anything changes;
a warning is said and the lab goes ahead. ``kailab.runtimes.existing`` reads the facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kailab import versions
from kailab.labels import KAI_HELM_RELEASE, KAI_NAMESPACE, KAI_SCHEDULER_DEPLOYMENT, KAI_SCHEDULER_NAME

KAI_CRDS = ("queues.scheduling.run.ai", "podgroups.scheduling.run.ai", "bindrequests.scheduling.run.ai")
LESSON_GPUS = 32  # the fleet every lesson was proved on
INSTALL_KAI = (
    f"helm upgrade -i {KAI_HELM_RELEASE} {versions.KAI_CHART} --version {versions.KAI_VERSION} "
    f"-n {KAI_NAMESPACE} --create-namespace --set global.gpuSharing=true"
)

OK, WARN, PROBLEM = "ok", "warning", "problem"


@dataclass(frozen=True)
class SchedulerDeployment:
    """KAI's scheduler Deployment, as found."""

    namespace: str
    name: str
    image: str
    ready: int
    wanted: int


@dataclass(frozen=True)
class Facts:
    """What was read of the cluster. ``server`` None: the API server did not answer (nothing else was read)."""

    server: str | None = None  # the API server's version
    crds: frozenset[str] = frozenset()  # KAI's CRDs that exist
    scheduler: SchedulerDeployment | None = None
    kai_bound_pods: int = 0  # pods bound by the scheduler named kai-scheduler, whatever runs it
    gpu_nodes: tuple[tuple[str, float], ...] = ()  # (node, nvidia.com/gpu allocatable) of nodes that have GPUs
    gpu_sharing: bool | None = None  # KAI's Config kai-config: spec.admission.gpuSharing; None: no Config
    kwok: str | None = None  # with --kwok: "absent", "ours" (this lab installed it) or "foreign"
    fleet_gpus: int = 0  # with --kwok: GPUs kailab's fleet adds
    fleet_nodes: int = 0
    taken_nodes: tuple[str, ...] = ()  # with --kwok: nodes of the fleet's names that exist and are not this lab's
    unread: dict[str, str] = field(default_factory=dict)  # what could not be read → why


@dataclass(frozen=True)
class Finding:
    """One row of the table: what was checked, ok/warning/problem, what was found, what to do."""

    check: str
    status: str
    found: str
    todo: str = ""


def image_version(image: str) -> str | None:
    """The tag of an image reference (``…/scheduler:v0.17.0`` → ``v0.17.0``); None without one."""
    ref = image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    return tag if name and "/" not in tag else None


def findings(facts: Facts) -> list[Finding]:
    """Every check, in the order the table shows them."""
    if facts.server is None:
        return [
            Finding(
                "API server",
                PROBLEM,
                "does not answer",
                "Check the kubeconfig and context (kubectl --kubeconfig PATH [--context NAME] get nodes).",
            )
        ]
    rows = [
        Finding("API server", OK, f"answers (Kubernetes {facts.server})"),
        _crds(facts),
        _scheduler(facts),
        _version(facts),
        _gpus(facts),
        _sharing(facts),
    ]
    if facts.kwok is not None:
        rows.append(_kwok(facts))
    rows += [
        Finding(f"read {what}", WARN, f"could not: {why}", "Grant kailab's user read access, or check it by hand.")
        for what, why in sorted(facts.unread.items())
    ]
    return rows


def blocking(rows: list[Finding]) -> list[Finding]:
    """The findings that stop the adoption."""
    return [f for f in rows if f.status == PROBLEM]


def _crds(facts: Facts) -> Finding:
    missing = [c for c in KAI_CRDS if c not in facts.crds]
    if not missing:
        return Finding("KAI's CRDs", OK, ", ".join(KAI_CRDS))
    return Finding(
        "KAI's CRDs",
        PROBLEM,
        f"missing: {', '.join(missing)}",
        f"Install KAI Scheduler {versions.KAI_VERSION}: {INSTALL_KAI}",
    )


def _scheduler(facts: Facts) -> Finding:
    d = facts.scheduler
    if d is not None:
        where = f"{d.namespace}/{d.name}, {d.ready}/{d.wanted} ready"
        if d.ready >= d.wanted > 0:
            return Finding("KAI's scheduler", OK, where)
        return Finding(
            "KAI's scheduler",
            PROBLEM,
            where + ": not ready, so nothing would be scheduled",
            f"Look at it: kubectl -n {d.namespace} get pods,events",
        )
    bound = (
        (
            f"but {facts.kai_bound_pods} pods were bound by {KAI_SCHEDULER_NAME}, so one runs somewhere (outside the "
            "cluster, as on kailab's local runtime)"
        )
        if facts.kai_bound_pods
        else f"and no pod has been bound by {KAI_SCHEDULER_NAME} yet: if none runs, every lesson will wait and fail"
    )
    return Finding(
        "KAI's scheduler",
        WARN,
        f"no Deployment {KAI_SCHEDULER_DEPLOYMENT} found, {bound}",
        "" if facts.kai_bound_pods else f"Install KAI with its Helm chart if it is not running: {INSTALL_KAI}",
    )


def _version(facts: Facts) -> Finding:
    d = facts.scheduler
    if d is None:
        return Finding(
            "KAI's version",
            WARN,
            f"unknown (no scheduler Deployment to read); the lessons were proved on {versions.KAI_VERSION}",
        )
    tag = image_version(d.image)
    if tag is not None and (tag == versions.KAI_VERSION or tag.startswith(versions.KAI_VERSION + "-")):
        return Finding("KAI's version", OK, f"{tag}, the version the lessons were proved on")
    return Finding(
        "KAI's version",
        WARN,
        f"{tag or 'unknown'} ({d.image}); the lessons were proved on {versions.KAI_VERSION}, so a verdict may differ",
        f"To match them: helm upgrade {KAI_HELM_RELEASE} {versions.KAI_CHART} --version {versions.KAI_VERSION} "
        f"-n {d.namespace}",
    )


def _gpus(facts: Facts) -> Finding:
    total = sum(g for _, g in facts.gpu_nodes)
    nodes = ", ".join(f"{n} ({g:g})" for n, g in facts.gpu_nodes[:6]) + (" …" if len(facts.gpu_nodes) > 6 else "")
    have = (
        f"{len(facts.gpu_nodes)} nodes with {total:g} GPUs: {nodes}"
        if facts.gpu_nodes
        else "no node has nvidia.com/gpu"
    )
    if facts.kwok is not None:
        total += facts.fleet_gpus
        have += f"; kailab's fleet adds {facts.fleet_gpus} fake GPUs on {facts.fleet_nodes} KWOK nodes"
    elif not facts.gpu_nodes:
        return Finding(
            "GPU nodes", PROBLEM, have, "Add --kwok for kailab's fleet of fake GPUs, or adopt a cluster with GPU nodes."
        )
    if total != LESSON_GPUS:
        return Finding(
            "GPU nodes",
            WARN,
            f"{have} — {total:g} in all; the lessons were written for {LESSON_GPUS}",
            "Lessons that need another fleet say “not applicable” instead of failing.",
        )
    return Finding("GPU nodes", OK, have)


def _sharing(facts: Facts) -> Finding:
    if facts.gpu_sharing is None:
        return Finding(
            "GPU sharing",
            WARN,
            "unknown: no KAI Config kai-config (KAI was not installed by its Helm chart, or by another version)",
            "The fractions lesson is not run here.",
        )
    if facts.gpu_sharing:
        return Finding("GPU sharing", OK, "on (kai-config: admission.gpuSharing)")
    return Finding(
        "GPU sharing",
        WARN,
        "off: the fractions lesson is not run here",
        f"To turn it on: helm upgrade {KAI_HELM_RELEASE} … --reuse-values --set global.gpuSharing=true",
    )


def _kwok(facts: Facts) -> Finding:
    if facts.taken_nodes:
        return Finding(
            "KWOK fleet",
            PROBLEM,
            f"nodes of the fleet's names exist and are not this lab's: {', '.join(facts.taken_nodes[:5])}",
            "Leave out --kwok, or adopt a cluster without those nodes.",
        )
    if facts.kwok == "foreign":
        return Finding(
            "KWOK fleet",
            PROBLEM,
            "KWOK is installed here, not by this lab; kailab will not change its controller or stages",
            "Leave out --kwok (use the cluster's own nodes), or ask whoever installed KWOK.",
        )
    if facts.kwok == "ours":
        return Finding("KWOK fleet", OK, f"KWOK {versions.KWOK_VERSION} installed by this lab")
    return Finding(
        "KWOK fleet",
        OK,
        f"will install KWOK {versions.KWOK_VERSION} (its release manifest), kailab's "
        "stages and fleet, all labelled as this lab's",
    )
