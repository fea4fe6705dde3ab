"""A page's watches of the cluster, one set per server whatever the number of browsers.

Several :class:`~kailab.kube.Watched` sharing one condition, started and stopped together, read without asking the
API server again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from kubernetes import client

from kailab.api_errors import api_error_words, no_answer
from kailab.kube import Kube, as_json
from kailab.pods import PodView, pod_view
from kailab.watched import Watched


class Watches:
    """Named watches (a name may hold several: one per namespace) notifying one condition on every change."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self._named: dict[str, list[Watched]] = {}

    def add(self, name: str, watched: Watched) -> Watched:
        self._named.setdefault(name, []).append(watched)
        return watched

    def start(self) -> None:
        """Start every watch (each lists first); on a failure, stop those started and raise."""
        started = []
        try:
            for w in (w for ws in self._named.values() for w in ws):
                w.start()
                started.append(w)
        except BaseException:
            for w in started:
                w.stop()
            raise

    def stop(self) -> None:
        for w in (w for ws in self._named.values() for w in ws):
            w.stop()

    def count(self) -> int:
        return sum(len(ws) for ws in self._named.values())

    def version(self) -> tuple:
        """Changes so far, and whether it fails, per watch: a new tuple means something changed."""
        return tuple((w.version, w.error is None) for ws in self._named.values() for w in ws)

    def objects(self, name: str) -> list[dict]:
        """The objects the watches of that name hold now (the API's JSON)."""
        with self.cond:
            return [o for w in self._named.get(name, []) for o in w.objects.values()]

    def failing(self) -> str:
        """ "" while every watch works; else what the first failing one met, in words."""
        for w in (w for ws in self._named.values() for w in ws):
            if w.error is not None:
                return failure_words(w.error)
        return ""


def failure_words(e: Exception) -> str:
    status = getattr(e, "status", None)
    if isinstance(e, client.exceptions.ApiException) and status:
        return f"the API server answered {api_error_words(e)}"
    return f"the API server {no_answer(e)}"


class PodViews:
    """Pods as :class:`~kailab.pods.PodView`, kept up to date from a watch's changes (read once per change, not on
    every look), and the pods' JSON by "namespace/name"."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.views: dict[str, PodView] = {}

    def listen(self, watched: Watched) -> Watched:
        watched.on_change(self._changed)
        return watched

    def _changed(self, kind: str, obj: Any) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        with self.lock:
            if kind == "DELETED":
                self.views.pop(key, None)
            else:
                self.views[key] = pod_view(obj)

    def all(self) -> list[PodView]:
        with self.lock:
            return list(self.views.values())

    def has(self, key: str) -> bool:
        with self.lock:
            return key in self.views


def pods(kube: Kube, cond: threading.Condition, namespace: str | None = None, selector: str = "") -> Watched:
    """An unstarted watch of the pods of one namespace, or of every namespace."""
    kw = {"label_selector": selector} if selector else {}
    if namespace is None:
        return Watched(as_json(kube.core.list_pod_for_all_namespaces), cond=cond, **kw)
    return Watched(as_json(kube.core.list_namespaced_pod), namespace, cond=cond, **kw)


def config_maps(kube: Kube, cond: threading.Condition, selector: str, namespace: str | None = None) -> Watched:
    if namespace is None:
        return Watched(as_json(kube.core.list_config_map_for_all_namespaces), cond=cond, label_selector=selector)
    return Watched(as_json(kube.core.list_namespaced_config_map), namespace, cond=cond, label_selector=selector)


def secrets(kube: Kube, cond: threading.Condition, selector: str, namespace: str) -> Watched:
    """An unstarted watch of one namespace's Secrets (the class's stored tasks, for the instructor's page)."""
    return Watched(as_json(kube.core.list_namespaced_secret), namespace, cond=cond, label_selector=selector)


def nodes(kube: Kube, cond: threading.Condition, selector: str = "") -> Watched:
    return Watched(as_json(kube.core.list_node), cond=cond, label_selector=selector)


def namespaces(kube: Kube, cond: threading.Condition, selector: str = "") -> Watched:
    return Watched(as_json(kube.core.list_namespace), cond=cond, label_selector=selector)


def custom(kube: Kube, cond: threading.Condition, api_version: str, plural: str, selector: str = "") -> Watched:
    """A cluster-scoped custom resource (KAI's Queues, SchedulingShards)."""
    group, version = api_version.split("/")
    listing: Callable = partial(client.CustomObjectsApi(kube.api).list_cluster_custom_object, group, version, plural)
    return Watched(listing, cond=cond, **({"label_selector": selector} if selector else {}))
