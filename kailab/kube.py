"""The cluster, through the official kubernetes client: server-side apply, get, delete, watch.

Nothing here knows which runtime made the cluster; it needs only a kubeconfig.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from kailab.api_errors import PROBE_TIMEOUT, no_answer, tls_failed
from kailab.api_paths import api_request, object_metadata
from kailab.errors import KailabError, NotRunning
from kailab.kubeconfig import load_config, share_tls
from kailab.labels import LAB_ID_LABEL, MANAGED, PODGROUP_API
from kailab.waiting import Pending, TimedOut, seen, until
from kailab.watched import Watched

FIELD_MANAGER = "kailab"

urllib3.disable_warnings()

# The workloads a namespace is emptied of before its pods (group/version, plural), deleted by the API's path: the typed
# client's apps/v1 module alone takes 0.1 s to import
WORKLOADS = (("batch/v1", "jobs"), ("apps/v1", "deployments"), ("apps/v1", "replicasets"), ("apps/v1", "statefulsets"))

# What a list answers with when only the objects' metadata is wanted (the API server's PartialObjectMetadataList)
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


class Kube:
    """One cluster: typed clients for the common kinds, a dynamic client for everything else."""

    def __init__(self, kubeconfig: Path | str, context: str | None = None):
        self.kubeconfig = str(kubeconfig)
        self.context = context
        cfg = load_config(self.kubeconfig, context)
        cfg.connection_pool_maxsize = 16  # a fleet is created by 16 threads at once (fleet.create_fleet)
        self._cfg = cfg
        self.api = client.ApiClient(cfg)
        share_tls(self.api)
        self.core = client.CoreV1Api(self.api)
        self._apps: client.AppsV1Api | None = None
        self._dyn: DynamicClient | None = None
        self._resources: dict[tuple[str, str], Any] = {}  # see resource()

    @property
    def apps(self) -> client.AppsV1Api:
        """The typed client of apps/v1, made on first use: its module takes 0.1 s of CPU to import, and a lesson
        needs none of it (what it deletes of apps/v1 goes by the API's path)."""
        if self._apps is None:
            self._apps = client.AppsV1Api(self.api)
        return self._apps

    @property
    def dyn(self) -> DynamicClient:
        if self._dyn is None:
            # The client caches discovery in a file named after the server address; every lab on
            # this machine may reuse 127.0.0.1:<port>, so key the cache by this kubeconfig (and context)
            # instead (in kailab's cache folder: never beside a kubeconfig that may be the user's).
            from kailab.paths import cache_home

            where = str(Path(self.kubeconfig).resolve()) + (f"\0{self.context}" if self.context else "")
            key = hashlib.sha256(where.encode()).hexdigest()[:16]
            cache = cache_home() / "discovery" / f"{key}.json"
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise KailabError(
                    f"kailab cannot write its cache folder {cache_home()}: "
                    f"{'a file is in the way' if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror or e}.",
                    hint="Point KAILAB_CACHE at a folder you own (or unset it).",
                ) from None
            self._dyn = DynamicClient(self.api, cache_file=str(cache))
        return self._dyn

    def ping(self, timeout: float = 2.0) -> bool:
        """True when the API server answers (GET /version)."""
        return self.probe((timeout, timeout)) is None

    def probe(self, timeout: tuple[float, float] = PROBE_TIMEOUT) -> str | None:
        """None when the API server answers GET /version within ``timeout`` (connect, read; one try);
        else what happened, in words: no answer, refused, TLS failed, credentials refused."""
        cfg = copy.copy(self._cfg)
        cfg.retries = False
        api = client.ApiClient(cfg)
        try:
            client.VersionApi(api).get_code(_request_timeout=timeout)
            return None
        except ApiException as e:
            if e.status == 0 and str(e.reason).startswith("SSLError"):  # the client's wording of a TLS failure
                return f"the API server at {cfg.host} {tls_failed(str(e.reason).partition(chr(10))[2])}"
            if e.status in (401, 403):
                return f"the API server at {cfg.host} refuses these credentials ({e.status} {e.reason})"
            return f"the API server at {cfg.host} answers {e.status} {e.reason}"
        except Exception as e:
            return f"the API server at {cfg.host} {no_answer(e)}"
        finally:
            api.close()

    def resource(self, api_version: str, kind: str):
        """The dynamic client's resource of a kind, kept once found: every apply, get, delete and list asks, and the
        client searches its discovery each time (0.15 s of CPU in a demo all side by side); one not found is asked
        again each time."""
        found = self._resources.get((api_version, kind))
        if found is not None:
            return found
        try:
            found = self.dyn.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            # A CRD installed after discovery ran: refresh once.
            self.dyn.resources.invalidate_cache()
            found = self.dyn.resources.get(api_version=api_version, kind=kind)
        self._resources[(api_version, kind)] = found
        return found

    def apply(self, obj: dict) -> dict:
        """Server-side apply one object as field manager ``kailab``."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        out = self.dyn.server_side_apply(
            res,
            body=obj,
            name=meta["name"],
            namespace=meta.get("namespace") if res.namespaced else None,
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            serializer=as_read,
        )
        return out

    def apply_status(self, obj: dict) -> None:
        """Server-side apply the status of an object (nodes carry capacity there)."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        body = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "metadata": {"name": obj["metadata"]["name"]},
            "status": obj["status"],
        }
        self.dyn.server_side_apply(
            res.subresources["status"],
            body=body,
            name=obj["metadata"]["name"],
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            serialize=False,  # the answer is not made into a dict…
        ).read()  # …but read to its end: unread, its connection never went back to the pool (a TLS handshake more)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.dyn.get(self.resource(api_version, kind), name=name, namespace=namespace, serializer=as_read)
        except NotFoundError:
            return None

    def crd(self, name: str) -> dict | None:
        """A CustomResourceDefinition's metadata, None when the cluster has none: a CRD's whole JSON runs to a
        megabyte, and whether it is there (and whose it is) is all some reads ask."""
        return object_metadata(self.api, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")

    def pods(self, namespace: str | None = None, **kw) -> list[dict]:
        """Pods (the API's JSON, :func:`as_json`) of one namespace, or of every namespace; ``kw``: the list's
        options (``label_selector`` …)."""
        if namespace is None:
            return as_json(self.core.list_pod_for_all_namespaces)(**kw)["items"]
        return as_json(self.core.list_namespaced_pod)(namespace, **kw)["items"]

    def events(self, namespace: str) -> list[dict]:
        """The events (the API's JSON) of one namespace."""
        return as_json(self.core.list_namespaced_event)(namespace)["items"]

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict]:
        """Objects of a kind; none when the cluster does not serve the kind (KAI's CRDs not installed)."""
        try:
            res = self.resource(api_version, kind)
        except (ResourceNotFoundError, NotFoundError):
            return []
        except ApiException as e:
            if e.status == 404:
                return []
            raise
        try:
            out = self.dyn.get(res, namespace=namespace, label_selector=label_selector, serializer=as_read)
        except NotFoundError:
            return []
        return list(out.get("items") or ())

    def crd_names(self) -> set[str] | None:
        """The names of the cluster's CustomResourceDefinitions, read as their metadata alone (one CRD's schema is
        hundreds of KB: KubeRay's, JobSet's); None when these credentials may not list them."""
        try:
            answer = client.ApiextensionsV1Api(self.api).list_custom_resource_definition(
                _headers={"Accept": METADATA_LIST}, _preload_content=False
            )
        except ApiException as e:
            if e.status == 403:
                return None
            raise
        return {_name(o) for o in json.loads(answer.data).get("items") or ()}

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """Delete with background propagation; a missing object is fine. The API's answer: the object being deleted
        (with its deletionTimestamp) or a Status; None when it was gone already."""
        try:
            answer = self.dyn.delete(
                self.resource(api_version, kind),
                name=name,
                namespace=namespace,
                body={"propagationPolicy": "Background"},
                serializer=as_read,
            )
        except NotFoundError:
            return None
        return answer if isinstance(answer, dict) else None

    def ensure_namespace(self, name: str, labels: dict[str, str] | None = None, timeout: float = 30) -> None:
        """Create a namespace and wait for its default ServiceAccount (pods are refused until it exists).

        A namespace that exists and is not of the owner ``labels`` name (kailab's, with that lab id or none) is
        refused, never labelled: kailab empties its namespaces, and would empty the user's with them."""
        from kailab.ownership import Owner, refused

        labels = {**MANAGED, **(labels or {})}
        found = self.get("v1", "Namespace", name)
        if found is not None and not Owner(labels.get(LAB_ID_LABEL, "")).owns(found["metadata"].get("labels")):
            raise refused(
                [f"Namespace {name}"],
                "Name a namespace that does not exist on this cluster yet: kailab makes it, and empties only those it made.",
            )
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
        self._watch_until(
            self.core.list_namespaced_service_account,
            [name],
            lambda names: "default" in names,
            timeout,
            field_selector="metadata.name=default",
        )

    def delete_namespace(self, name: str, timeout: float = 60) -> None:
        """Delete a namespace and wait until it is gone (its pods emptied first)."""
        self.empty_namespace(name, timeout)
        if not _found(lambda: self.core.delete_namespace(name, body=client.V1DeleteOptions(grace_period_seconds=0))):
            return
        if not self._watch_until(
            self.core.list_namespace, [], lambda names: not names, timeout, field_selector=f"metadata.name={name}"
        ):
            raise NotRunning(
                f"Namespace {name} was not deleted within {timeout:.0f}s.",
                hint="Is kube-controller-manager running? See: kailab status",
            ) from TimedOut(f"Not within {timeout:.0f}s: namespace {name} deleted.")

    def empty_namespace(self, name: str, timeout: float = 60) -> None:
        """Delete every workload, pod, PodGroup and event in a namespace; wait until its pods are gone.

        Much faster than deleting the namespace (the namespace controller works in
        backed-off rounds: about 5 s even for an empty one), and it leaves no old
        events behind to be mistaken for new ones.
        """

        def workloads_and_pods() -> None:  # each answer (the objects deleted) read, not made into the client's objects
            for group_version, plural in WORKLOADS:
                api_request(
                    self.api,
                    "DELETE",
                    f"/apis/{group_version}/namespaces/{quote(name, safe='')}/{plural}",
                    body={"propagationPolicy": "Background", "gracePeriodSeconds": 0},
                ).read()
            self.core.delete_collection_namespaced_pod(
                name, body=client.V1DeleteOptions(grace_period_seconds=0), _preload_content=False
            ).read()

        try:
            if not _found(workloads_and_pods):
                return
        except ApiException as e:
            if e.status != 504:
                raise
            # Thousands of pods outlast the API server's request timeout; the deletion goes on, and the loop
            # below waits for it (and deletes again what is left).

        # A controller may create a pod just before its owner is gone: delete again until none is left. The wait
        # ends on the cluster, not on a clock: it goes on while pods are still going (16 learners' lessons at once
        # kept the API server deleting for more than a minute: one lesson UNDECIDED), and gives up after ``timeout``
        # seconds in which not one pod went, or :data:`~kailab.pace.MOST` times ``timeout`` in all.
        from kailab.pace import MOST

        left: set[str] = set()

        def none_left(names: set[str]) -> bool:
            left.clear()
            left.update(names)
            return not names

        began = went = time.monotonic()
        before: set[str] | None = None
        while not self._watch_until(self.core.list_namespaced_pod, [name], none_left, 5):
            now = time.monotonic()
            if before is None or before - left:  # a pod of those left last time went: the deletion goes on
                went = now
            before = set(left)
            if now - went > timeout or now - began > timeout * MOST:
                stalled = now - went > timeout
                raise NotRunning(
                    f"Pods in namespace {name} were not deleted: {len(left)} left"
                    + (f", not one gone in {timeout:.0f}s." if stalled else f" after {now - began:.0f}s."),
                    hint="Is the KWOK controller running? See: kailab status",
                ) from TimedOut(f"Not within {timeout:.0f}s: pods deleted in {name}.")
            self.core.delete_collection_namespaced_pod(
                name, body=client.V1DeleteOptions(grace_period_seconds=0), _preload_content=False
            ).read()
        groups = f"/apis/{PODGROUP_API}/namespaces/{quote(name, safe='')}/podgroups"  # one call for all (64 one by
        # one took 2 s); 404: no KAI here
        _found(lambda: api_request(self.api, "DELETE", groups, [("propagationPolicy", "Background")]).read())
        self.core.delete_collection_namespaced_event(name, _preload_content=False).read()  # every event: not typed

    def _watch_until(
        self, list_fn: Callable, args: Sequence, done: Callable[[set[str]], bool], timeout: float, **kw
    ) -> bool:
        """List, then watch, keeping the set of object names, until ``done(names)``; False at the timeout. The list and
        the changes are read as the API's JSON (:func:`as_json`): only names are kept, and a typed pod costs several
        times more (a partition's removal waits on hundreds of pods)."""
        list_fn = as_json(list_fn)
        listing = list_fn(*args, **kw)
        names = {_name(o) for o in listing.get("items") or ()}
        if done(names):
            return True
        deadline = time.monotonic() + timeout
        w = watch.Watch()
        try:
            for ev in w.stream(
                list_fn,
                *args,
                resource_version=(listing.get("metadata") or {}).get("resourceVersion"),
                timeout_seconds=max(1, int(timeout)),
                **kw,
            ):
                if ev["type"] == "DELETED":
                    names.discard(_name(ev["object"]))
                elif ev["type"] in ("ADDED", "MODIFIED"):
                    names.add(_name(ev["object"]))
                if done(names):
                    return True
                if time.monotonic() > deadline:
                    break
        finally:
            w.stop()
        return done({_name(o) for o in list_fn(*args, **kw).get("items") or ()})


def _name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def _found(call: Callable[[], object]) -> bool:
    """Run an API call; False when the API answers 404 (nothing there), any other error raises."""
    try:
        call()
        return True
    except ApiException as e:
        if e.status == 404:
            return False
        raise


def as_read(_client, data: dict) -> dict:
    """The dynamic client's answer as the API's JSON (its ``serializer``): not wrapped in its ResourceInstance, whose
    making and ``to_dict()`` cost 8× the JSON's reading (one of KubeRay's CRDs, 300 KB: 46 ms)."""
    return data


def as_json(list_fn: Callable) -> Callable:
    """A list call of the client's (``kube.core.list_namespaced_pod`` …) that answers with the API's JSON: the list as
    a dict, and, watched by :class:`Watched`, every change as a dict (the client's watch turns changes into its typed
    objects only for a call that names its return type). Several times cheaper than the typed objects: a lesson's pod
    watch sees thousands of changes (measured: 0.03 ms a pod as JSON, 0.21 ms as a ``V1Pod``)."""

    def call(*args, **kw):
        if kw.get("watch"):
            return list_fn(*args, **kw)  # the watch reads the stream itself
        return json.loads(list_fn(*args, _preload_content=False, **kw).data)

    return call


def watch_pods(kube: Kube, namespace: str | None = None, cond: threading.Condition | None = None) -> Watched:
    """A started watch of the pods (as the API's JSON) of one namespace, or of every namespace."""
    if namespace is None:
        return Watched(as_json(kube.core.list_pod_for_all_namespaces), cond=cond).start()
    return Watched(as_json(kube.core.list_namespaced_pod), namespace, cond=cond).start()


def wait_until(cond: threading.Condition, predicate: Callable[[], bool], timeout: float) -> bool:
    """Wait on a condition shared by several watches until ``predicate()`` holds; False at the timeout.
    (What no watch can tell is polled with :func:`kailab.waiting.until`.)"""
    deadline = time.monotonic() + timeout
    with cond:
        while True:
            if predicate():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            cond.wait(min(left, 1.0))


def wait_crds_established(kube: Kube, names: list[str], timeout: float = 60, what: str = "KAI's CRDs") -> None:
    """Until the API server serves each CRD ``names`` (its Established condition), else a KailabError naming ``what``."""
    pending = set(names)

    def established() -> bool | Pending:
        for name in list(pending):
            crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            conds = ((crd or {}).get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                pending.discard(name)
        return not pending or Pending(", ".join(sorted(pending)))

    until(
        established,
        timeout,
        0.2,
        fail=lambda last: KailabError(
            f"{what} were not established within {timeout:.0f}s: {seen(last)}.",
            hint="See kube-apiserver's log in the lab folder (kailab status names it).",
        ),
    )
