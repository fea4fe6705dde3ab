"""What each page shows, made from its watches by the views the terminal commands use — never a second copy.

- the lab's page (``kailab serve``): queues with quota, limit, weight, KAI's fair share and allocated GPUs
  (:func:`kailab.status.queue_rows`), every GPU of every node coloured by queue (:func:`kailab.gpus.in_use`,
  :func:`kailab.status.node_rows`, :func:`kailab.watch.colour_order`), the pods waiting, and each lesson's record
  (:func:`kailab.classroom.records.record_row`): its expectations decided so far, then its verdict and GPU timeline;
- the class's page (``kailab class serve``): ``class status``'s view (:func:`kailab.classroom.records.class_view`),
  the tasks learners handed in, graded on the instructor's side (:class:`kailab.classroom.grading.GradeCache`),
  its per-lesson summary (:func:`kailab.classroom.report.lesson_summary`), each learner's totals
  (:func:`kailab.classroom.report.learner_totals`), scheduler (:func:`kailab.shards.runs`) and join
  (:func:`kailab.classroom.joined.join_states`).

A model holds its watches (started once, for every browser), says when it changed (:meth:`version`), and gives its
view as plain data (:meth:`view`). Nothing in a view is a credential, a kubeconfig or a path on this machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kailab import gpus, partitions, shards
from kailab.classroom import STUCK_SECONDS, records, report
from kailab.classroom.joined import join_states
from kailab.explain import Explanation, Scope, gather
from kailab.kube import Kube
from kailab.labels import JOINED_LABEL, LEARNER_LABEL, NODEPOOL_LABEL, QUEUE_API, RECORD_LABEL, SHARD_API
from kailab.lesson import lesson_names
from kailab.pods import PodView
from kailab.scenarios.live import serves
from kailab.status import node_rows, pool_rows, queue_rows
from kailab.watch import colour_order
from kailab.web import watches

if TYPE_CHECKING:
    from kailab.view import View

MAX_NODES = 128  # more nodes than this are shown as one row per pool
MAX_PENDING = 60  # waiting pods listed; the rest are counted
FAIR_SHARE_SECONDS = 2.0  # fair shares are read this often while a browser looks (KAI divides once per cycle)


# What a page shows before its first look (or when that failed): nothing, said as nothing.
EMPTY = {
    "lab": {
        "whose": "the lab",
        "down": "",
        "queues": [],
        "fair_shares": False,
        "grid": {"pools": [], "nodes": [], "legend": []},
        "pending": [],
        "waiting": 0,
        "lessons": [],
        "unreadable": [],
    },
    "class": {"down": "", "learners": [], "lessons": [], "status": {}, "summary": [], "totals": {}, "stuck_after": 0},
}


def queue_tree(rows: list[dict]) -> list[dict]:
    """Queue rows in tree order (each parent before its children, depth-first), each with its ``depth``."""
    children: dict[str | None, list[dict]] = {}
    names = {r["name"] for r in rows}
    for r in rows:
        children.setdefault(r["parent"] if r["parent"] in names else None, []).append(r)
    out: list[dict] = []

    def visit(parent: str | None, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda r: r["name"]):
            if any(o["name"] == r["name"] for o in out):  # a cycle in parents: each queue once
                continue
            out.append({**r, "depth": depth})
            visit(r["name"], depth + 1)

    visit(None, 0)
    return out


def gpu_grid(queues: list[dict], nodes: list[dict], pods: list[PodView]) -> dict:
    """Every GPU of every node as a cell (its queue's colour number, shared or whole, the pods on it) and the legend;
    a fleet bigger than :data:`MAX_NODES` as one row per pool."""
    cells = gpus.in_use(pods)
    colours = colour_order(queues, cells)
    if len(nodes) > MAX_NODES:
        return {"pools": pool_rows(nodes), "nodes": [], "legend": list(colours.items())}
    rows = []
    for n in sorted(nodes, key=lambda n: n["name"]):
        used = cells.get(n["name"], [])[: n["gpus"]]
        rows.append(
            {
                **n,
                "cells": [
                    {
                        "queue": g.queue,
                        "colour": colours.get(g.queue, 0),
                        "shared": g.shared,
                        "portion": g.portion,
                        "pods": list(g.pods),
                    }
                    for g in used
                ],
                "free_cells": max(0, n["gpus"] - len(used)),
            }
        )
    return {"pools": [], "nodes": rows, "legend": list(colours.items())}


def waiting_pods(pods: list[PodView]) -> tuple[list[dict], int]:
    """The pods waiting for a node (not being deleted), by namespace and name: the first :data:`MAX_PENDING`, and
    how many in all."""
    waiting = sorted((p for p in pods if not p.node and p.phase == "Pending" and not p.deleting), key=_key)
    return [
        {"pod": f"{p.namespace}/{p.name}", "queue": p.queue or gpus.NO_QUEUE, "gpus": p.gpus, "reason": p.waiting}
        for p in waiting[:MAX_PENDING]
    ], len(waiting)


def _key(p: PodView) -> tuple[str, str]:
    return p.namespace, p.name


def lessons(record_objects: list[dict]) -> tuple[list[dict], list[dict]]:
    """Each lesson record with its details (:func:`kailab.classroom.records.record_row`, which checks it whole), the
    latest started first; and the records that are not kailab's, each with where it is and why."""
    rows, unreadable = [], []
    for cm in record_objects:
        try:
            name, row = records.record_row(cm, details=True)
        except ValueError as e:
            unreadable.append(records.unreadable_row(cm, e))
            continue
        rows.append({**row, "lesson": name, "key": f"{row['namespace']}/{row['record']}"})
    rows.sort(key=lambda r: (r["started"], r["key"]), reverse=True)
    return rows, sorted(unreadable, key=lambda u: u["record"])


class LabModel:
    """The lab's page: its watches and its view. ``view``: what the lab sees (:class:`kailab.view.View`, the one
    ``kailab status``, ``watch`` and ``explain`` read): its queues, nodes, pod namespaces and fair shares; ``whose``:
    the page's name for it; ``record_selector``: its lesson records, across the namespaces it sees."""

    kind = "lab"

    def __init__(self, kube: Kube, view: View, whose: str, record_selector: str = RECORD_LABEL):
        self.kube, self.lab_view, self.whose = kube, view, whose
        self.namespaces = view.pod_namespaces(kube)  # None: every namespace
        self.watches = watches.Watches()
        self.pods = watches.PodViews()
        cond, w = self.watches.cond, self.watches
        for ns in self.namespaces if self.namespaces is not None else [None]:
            w.add("pods", self.pods.listen(watches.pods(kube, cond, ns)))
            w.add("records", watches.config_maps(kube, cond, record_selector, ns))
        w.add("nodes", watches.nodes(kube, cond, view.nodes))
        if serves(kube, QUEUE_API, "Queue"):  # a lab without KAI has no queues
            w.add("queues", watches.custom(kube, cond, QUEUE_API, "queues", view.queues))
        self.shares: dict[str, float] | None = None
        self._shares_at = 0.0
        self._shares_version = 0

    def start(self) -> None:
        self.watches.start()

    def stop(self) -> None:
        self.watches.stop()

    def version(self) -> tuple:
        return (*self.watches.version(), self._shares_version)

    def tick(self, browsing: bool) -> float | None:
        """Read the fair shares when a browser looks and they are due; seconds until the next tick, None: no tick."""
        if not browsing:
            return None
        left = self._shares_at + FAIR_SHARE_SECONDS - time.monotonic()
        if left <= 0:
            self._shares_at = time.monotonic()
            shares = self.lab_view.fair_shares()
            if shares != self.shares:
                self.shares, self._shares_version = shares, self._shares_version + 1
            left = FAIR_SHARE_SECONDS
        return left

    def view(self) -> dict:
        rows, unreadable = lessons(self.watches.objects("records"))
        pods = self.pods.all()
        queues = queue_tree(queue_rows(self.watches.objects("queues"), pods, self.shares))
        nodes = node_rows(self.watches.objects("nodes"), pods)
        pending, waiting = waiting_pods(pods)
        return {
            "whose": self.whose,
            "down": self.watches.failing(),
            "queues": queues,
            "fair_shares": self.shares is not None,
            "grid": gpu_grid(queues, nodes, pods),
            "pending": pending,
            "waiting": waiting,
            "lessons": rows,
            "unreadable": unreadable,
        }

    def explain(self, pod: str) -> list[Explanation] | None:
        """``kailab explain``'s answer for a pod this page shows ("namespace/name"); None for any other."""
        if not self.pods.has(pod):
            return None
        namespace, name = pod.split("/", 1)
        nodes = self.lab_view.nodes  # as :meth:`kailab.lab.Lab.explain` asks: a slice's pods are those it sees
        found = gather(self.kube, name, namespace, Scope(self.shares, self.pods.all() if nodes else None, nodes))
        return [e for e in found if e.pod == pod] or found


class ClassModel:
    """The class's page: ``class status`` kept current from watches of every learner's records, namespaces, pods and
    SchedulingShard."""

    kind = "class"
    EXPLAINED_SECONDS = 10.0  # a stuck pod's reason is asked again at most this often (KAI repeats it every cycle)

    def __init__(self, kube: Kube, learners: Callable[[], list[str]], stuck_after: float = STUCK_SECONDS):
        self.kube, self.learners, self.stuck_after = kube, learners, stuck_after
        self.watches = watches.Watches()
        cond, w = self.watches.cond, self.watches
        w.add("records", watches.config_maps(kube, cond, f"{LEARNER_LABEL},{RECORD_LABEL}"))
        w.add("joins", watches.config_maps(kube, cond, JOINED_LABEL))
        w.add("namespaces", watches.namespaces(kube, cond, NODEPOOL_LABEL))
        w.add("pods", watches.pods(kube, cond))  # every pod: those of learners' namespaces are read
        if serves(kube, SHARD_API, shards.KIND):
            w.add("shards", watches.custom(kube, cond, SHARD_API, "schedulingshards"))
        from kailab.classroom import grading  # the grader (a replay engine): the class page's alone

        w.add("tasks", watches.secrets(kube, cond, grading.TASK_LABEL, grading.NAMESPACE))  # the hidden checks
        self._grades = grading.GradeCache()
        self._explained: dict[tuple, tuple[float, list]] = {}
        self._explain = records.explainer(kube)
        self._deadline: float | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self.watches.start()

    def stop(self) -> None:
        self.watches.stop()

    def version(self) -> tuple:
        return self.watches.version()

    def tick(self, browsing: bool) -> float | None:
        """Seconds until a lesson or a pod becomes stuck with no change in the cluster (the view is made again then)."""
        return None if self._deadline is None else max(0.05, self._deadline - time.monotonic())

    def view(self) -> dict:
        now = datetime.now(UTC)
        learners = self.learners()
        ns_objects = self.watches.objects("namespaces")
        namespaces = {
            learner: sorted(
                n["metadata"]["name"]
                for n in ns_objects
                if partitions.owner(learner).owns((n.get("metadata") or {}).get("labels"))
            )
            for learner in learners
        }
        theirs = {ns for names in namespaces.values() for ns in names}
        pods: dict[str, list[dict]] = {}
        for p in self.watches.objects("pods"):
            ns = (p.get("metadata") or {}).get("namespace") or ""
            if ns in theirs:
                pods.setdefault(ns, []).append(p)
        status = records.class_view(
            learners,
            self.watches.objects("records"),
            namespaces,
            pods,
            self._cached_explain,
            now,
            self.stuck_after,
            timelines=True,
        )
        soon = records.next_stuck(status, pods, now, self.stuck_after)
        self._deadline = None if soon is None else time.monotonic() + soon
        found = {(s.get("metadata") or {}).get("name"): s for s in self.watches.objects("shards")}
        joins = join_states(learners, self.watches.objects("joins"))
        graded = self._grades.grades(learners, self.watches.objects("records"), self.watches.objects("tasks"))
        for learner in learners:
            status[learner]["joined"] = joins[learner]
            status[learner]["tasks"] = graded[learner]
            shard = found.get(shards.shard_name(learner))
            status[learner]["scheduler"] = (
                "missing" if shard is None else "running" if shards.runs(shard, learner) else "stopped"
            )
        names = lesson_names()
        return {
            "down": self.watches.failing(),
            "learners": learners,
            "lessons": names,
            "status": status,
            "summary": report.lesson_summary(status, names),
            "totals": report.learner_totals(status, names),
            "stuck_after": self.stuck_after,
        }

    def _cached_explain(self, learner: str, namespace: str, waiting: list[dict], visible: list) -> list:
        """:func:`kailab.classroom.records.explainer`'s answer, asked again only when the pods changed or
        :data:`EXPLAINED_SECONDS` passed."""
        key = (
            learner,
            namespace,
            tuple((p["metadata"]["name"], p["metadata"].get("resourceVersion")) for p in waiting),
        )
        with self._lock:
            at, said = self._explained.get(key, (0.0, []))
            if time.monotonic() - at < self.EXPLAINED_SECONDS:
                return said
        said = self._explain(learner, namespace, waiting, visible)
        with self._lock:
            self._explained = {k: v for k, v in self._explained.items() if k[:2] != key[:2]}  # the namespace's latest
            self._explained[key] = (time.monotonic(), said)
        return said
