"""What kailab reads of a cluster it did not make: its preflight facts, KAI's metrics, GPU sharing.

The facts the preflight checks before adopting it (``kailab.preflight`` turns them into findings), and what the
adopted lab offers (KAI's scheduler metrics through the API server's proxy, GPU sharing as KAI's Config says).
Reads only; nothing here changes the cluster."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kailab.fleet import Fleet, node_objects
from kailab.gpus import node_gpus
from kailab.kube import Kube
from kailab.labels import KAI_CONFIG_NAME, KAI_SCHEDULER_DEPLOYMENT, KAI_SCHEDULER_NAME, KWOK_CONTROLLER
from kailab.ownership import Owner
from kailab.preflight import KAI_CRDS, Facts, SchedulerDeployment

METRICS_PORT = "http-metrics"  # the port of the Service KAI's operator makes for its scheduler
KAI_CONFIG = ("kai.scheduler", "v1", "configs", KAI_CONFIG_NAME)
STAGES_CRD = "stages.kwok.x-k8s.io"

T = TypeVar("T")


def exists(call: Callable[[], T]) -> T | None:
    """The API's answer, or None when it says 404."""
    try:
        return call()
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def find_scheduler(kube: Kube) -> SchedulerDeployment | None:
    """KAI's scheduler Deployment (the operator's ``kai-scheduler-default``), in whatever namespace KAI is."""
    items = kube.apps.list_deployment_for_all_namespaces(
        field_selector=f"metadata.name={KAI_SCHEDULER_DEPLOYMENT}", _request_timeout=10
    ).items
    if not items:
        return None
    d = items[0]
    containers = d.spec.template.spec.containers or []
    wanted = d.spec.replicas if d.spec.replicas is not None else 1
    return SchedulerDeployment(
        d.metadata.namespace,
        d.metadata.name,
        containers[0].image if containers else "",
        (d.status.ready_replicas if d.status else 0) or 0,
        wanted,
    )


def gpu_sharing(kube: Kube) -> bool | None:
    """KAI's Config ``kai-config``: ``spec.admission.gpuSharing`` (false when unset); None without the Config."""
    group, version, plural, name = KAI_CONFIG
    conf = exists(lambda: client.CustomObjectsApi(kube.api).get_cluster_custom_object(group, version, plural, name))
    if conf is None:
        return None
    return bool(((conf.get("spec") or {}).get("admission") or {}).get("gpuSharing", False))


def _gpus(node) -> int:
    return node_gpus(node.status.allocatable if node.status else None)


def _labels(obj) -> dict[str, str] | None:
    return None if obj is None else (obj.metadata.labels or {})


def kwok_state(kube: Kube, owner: Owner) -> str:
    """Is KWOK here? "absent", "ours" (every part found is this lab's) or "foreign"."""
    ext = client.ApiextensionsV1Api(kube.api)
    found = [
        _labels(exists(lambda: ext.read_custom_resource_definition(STAGES_CRD))),
        _labels(exists(lambda: kube.apps.read_namespaced_deployment(KWOK_CONTROLLER[1], KWOK_CONTROLLER[0]))),
    ]
    found = [f for f in found if f is not None]
    return "absent" if not found else "ours" if all(owner.owns(f) for f in found) else "foreign"


def read_facts(kube: Kube, owner: Owner, fleet: Fleet | None) -> Facts:
    """What the preflight checks need, read from the cluster (``fleet``: with --kwok, the fleet to add)."""
    try:
        server = client.VersionApi(kube.api).get_code(_request_timeout=5).git_version
    except Exception:
        return Facts()
    unread: dict[str, str] = {}

    def read(what: str, call: Callable[[], object], default):
        try:
            return call()
        except ApiException as e:
            unread[what] = f"{e.status} {e.reason}"
        except Exception as e:  # a timeout, a refused connection: said, not raised
            unread[what] = f"{type(e).__name__}: {str(e)[:120]}"
        return default

    ext = client.ApiextensionsV1Api(kube.api)

    def crd(name: str) -> object | None:
        return exists(lambda: ext.read_custom_resource_definition(name))

    crds = frozenset(c for c in KAI_CRDS if read(f"CRD {c}", partial(crd, c), None))
    nodes = read("nodes", lambda: kube.core.list_node(_request_timeout=10).items, [])
    gpu_nodes = tuple((n.metadata.name, _gpus(n)) for n in nodes)
    bound = read(
        "pods",
        lambda: (
            kube.core.list_pod_for_all_namespaces(
                field_selector=f"spec.schedulerName={KAI_SCHEDULER_NAME},spec.nodeName!=",
                limit=500,
                _request_timeout=10,
            ).items
        ),
        [],
    )
    facts = dict(
        server=server,
        crds=crds,
        scheduler=read("Deployments", lambda: find_scheduler(kube), None),
        kai_bound_pods=len(bound),
        gpu_nodes=tuple((n, g) for n, g in gpu_nodes if g > 0),
        gpu_sharing=read("KAI's Config", lambda: gpu_sharing(kube), None),
    )
    if fleet is not None:
        others = {n.metadata.name for n in nodes if not owner.owns(n.metadata.labels)}
        taken = tuple(o["metadata"]["name"] for o in node_objects(fleet) if o["metadata"]["name"] in others)
        facts.update(
            kwok=read("KWOK", lambda: kwok_state(kube, owner), "foreign"),
            fleet_gpus=fleet.total_gpus,
            fleet_nodes=fleet.node_count,
            taken_nodes=taken,
        )
    return Facts(**facts, unread=unread)


def scheduler_metrics(kube: Kube) -> Callable[[], str | None] | None:
    """KAI's scheduler metrics through the API server's service proxy, when the chart's Service is there."""
    try:
        services = kube.core.list_service_for_all_namespaces(
            field_selector=f"metadata.name={KAI_SCHEDULER_DEPLOYMENT}", _request_timeout=5
        ).items
    except Exception:
        return None
    svc = next((s for s in services if any(p.name == METRICS_PORT for p in s.spec.ports or [])), None)
    if svc is None:
        return None

    def read() -> str | None:
        try:
            return kube.core.connect_get_namespaced_service_proxy_with_path(
                f"{KAI_SCHEDULER_DEPLOYMENT}:{METRICS_PORT}", svc.metadata.namespace, "metrics", _request_timeout=5
            )
        except Exception:
            return None

    return read


def sharing(kube: Kube) -> bool:
    """KAI's GPU sharing is on (False when KAI's Config cannot be read)."""
    try:
        return bool(gpu_sharing(kube))
    except Exception:
        return False
