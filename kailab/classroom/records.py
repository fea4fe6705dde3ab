"""Lesson records in the cluster: each learner's verdicts, where the instructor's kubeconfig reads them.

One ConfigMap per lesson a learner ran, in that lesson's namespace of theirs (``kailab-record``; a task's or challenge's,
which runs in its lesson's namespace, is ``kailab-record-<its name>``), labelled with
their owner labels and ``kailab.io/lesson-record``: written when the lesson starts (outcome ``RUNNING``) and
replaced by its verdict, kept whole (JSON) with its GPU timeline beside the few fields ``class status`` shows.
Nobody collects anything by hand: ``class status`` and ``class evidence`` list them by label.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from kailab import partitions
from kailab.checks import Verdict
from kailab.classroom import STUCK_SECONDS
from kailab.explain import explain_pods
from kailab.kube import Kube
from kailab.labels import LEARNER_LABEL, RECORD_LABEL, SCENARIO_LABEL
from kailab.pods import api_time, pod_view
from kailab.predictions import tally

NAME = "kailab-record"
RUNNING = "RUNNING"  # a record's outcome from a lesson's start until its verdict


def record_name(scenario: str) -> str:
    """A lesson's record is ``kailab-record``; any other scenario's (a task, a challenge) is named for it, as it may
    run in a lesson's namespace beside that lesson's record."""
    from kailab.lesson import lesson_names

    return NAME if scenario in lesson_names() else f"{NAME}-{scenario}"


def _labels(learner: str, lesson: str) -> dict:
    return {**partitions.owner(learner).labels, LEARNER_LABEL: learner, RECORD_LABEL: lesson}


def started_object(learner: str, lesson: str, title: str, namespace: str) -> dict:
    """The record of a lesson that has started and has no verdict yet: ``class status`` counts the minutes."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": record_name(lesson), "namespace": namespace, "labels": _labels(learner, lesson)},
        "data": {
            "lesson": lesson,
            "title": title,
            "outcome": RUNNING,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }


def record_object(learner: str, verdict: Verdict, prediction: str = "", graded: list[dict] | None = None) -> dict:
    """The record of a lesson's verdict (it replaces the started one): outcome, when, the prediction, the graded
    predictions (kailab/predictions.py's ``Graded.to_dict``: key, ask, given, answer, right, mark) and how many were
    right, the verdict whole and its GPU timeline (the engine's, for ``class evidence``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": record_name(verdict.scenario),
            "namespace": verdict.namespace,
            "labels": _labels(learner, verdict.scenario),
        },
        "data": {
            "lesson": verdict.scenario,
            "title": verdict.title,
            "outcome": verdict.outcome,
            "started": verdict.started,
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": f"{verdict.seconds:.1f}",
            "prediction": prediction,
            "predictions": json.dumps(graded or []),
            "right": tally(graded or []),
            "verdict": json.dumps(verdict.to_dict()),
            "timeline": json.dumps(verdict.timeline),
        },
    }


class Recording:
    """An engine whose lessons a class's learner keeps in the cluster as they go: a record when one starts
    (``RUNNING``), replaced by its verdict when it ends. Everything else is the engine's."""

    def __init__(self, engine, kube: Kube, learner: str):
        self.engine, self.kube, self.learner = engine, kube, learner

    def __getattr__(self, name: str):
        return getattr(self.engine, name)

    def run(self, scenario) -> Verdict:
        started = started_object(self.learner, scenario.name, scenario.title, scenario.namespace)
        try:
            self.kube.apply(started)
        except ApiException as e:
            if e.status != 404:
                raise
            # The instructor's first lesson of a learner who has no credential: their namespace is made here
            self.engine.cluster.ensure_namespace(scenario.namespace, {SCENARIO_LABEL: scenario.name})
            self.kube.apply(started)
        verdict = self.engine.run(scenario)
        self.kube.apply(record_object(self.learner, verdict))
        return verdict


def _time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def class_status(
    kube: Kube,
    learners: list[str],
    now: datetime | None = None,
    stuck_after: float = STUCK_SECONDS,
    timelines: bool = False,
) -> dict:
    """Learners × lessons (outcome, when, prediction, graded predictions right or wrong) and who is stuck: a lesson running ``stuck_after`` seconds
    or more without a verdict, and a pod Pending as long, unbound, with KAI's reason (read as ``kailab explain``
    reads it). A pod a finished lesson left Pending is that lesson's result, not a learner stuck: only pods made
    after their namespace's lesson finished, or while it runs, count. ``timelines``: each lesson's GPU timeline
    and title too (for ``class evidence``)."""
    now = now or datetime.now(UTC)
    out = {}
    for learner in learners:
        lessons, finished_at, stuck = {}, {}, []
        for cm in kube.core.list_config_map_for_all_namespaces(
            label_selector=f"{LEARNER_LABEL}={learner},{RECORD_LABEL}"
        ).items:
            d = cm.data or {}
            name = d.get("lesson", "?")
            row = {k: d.get(k, "") for k in ("outcome", "started", "finished", "seconds", "prediction", "right")}
            row["predictions"] = _graded(d.get("predictions"))
            row["namespace"] = cm.metadata.namespace
            if timelines:
                row["title"] = d.get("title", name)
                row["timeline"] = _timeline(d.get("timeline"))
            lessons[name] = row
            started = _time(row["started"])
            if row["outcome"] == RUNNING:
                running = (now - started).total_seconds() if started else 0
                if running >= stuck_after:
                    stuck.append(
                        {
                            "kind": "lesson",
                            "lesson": name,
                            "namespace": cm.metadata.namespace,
                            "running_seconds": int(running),
                            "reason": f"started {int(running)} s ago and has no verdict yet",
                        }
                    )
            elif done := _time(row["finished"]):
                finished_at[cm.metadata.namespace] = done
        stuck += _pending(kube, learner, now, stuck_after, finished_at)
        out[learner] = {"lessons": lessons, "stuck": stuck}
    return out


def _graded(text: str | None) -> list[dict]:
    """A record's graded predictions; [] for a record without them (or not kailab's JSON)."""
    try:
        graded = json.loads(text or "[]")
    except ValueError:
        return []
    return [g for g in graded if isinstance(g, dict)] if isinstance(graded, list) else []


def _timeline(text: str | None) -> list:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _created(pod: dict) -> datetime:
    """When a pod (the API's JSON) was created."""
    return datetime.fromtimestamp(api_time(pod["metadata"].get("creationTimestamp")) or 0, UTC)


def _pending(kube: Kube, learner: str, now: datetime, stuck_after: float, finished_at: dict) -> list[dict]:
    """The learner's pods waiting for a scheduler ``stuck_after`` seconds or more, each with KAI's reason."""
    namespaces = [
        ns.metadata.name for ns in kube.core.list_namespace(label_selector=partitions.owner(learner).selector()).items
    ]
    pods = {ns: kube.pods(ns) for ns in namespaces}
    visible = [pod_view(p) for items in pods.values() for p in items]  # what the learner's nodes hold
    stuck = []
    for ns, items in pods.items():
        done = finished_at.get(ns)
        waiting = [
            p
            for p in items
            if (view := pod_view(p)).phase == "Pending"
            and not view.node
            and (now - _created(p)).total_seconds() >= stuck_after
            and (done is None or _created(p) > done)
        ]
        for p, why in zip(
            waiting,
            explain_pods(kube, waiting, ns, visible=visible, node_selector=partitions.node_selector(learner)),
            strict=True,
        ):
            stuck.append(
                {
                    "kind": "pod",
                    "pod": f"{ns}/{p['metadata']['name']}",
                    "pending_seconds": int((now - _created(p)).total_seconds()),
                    "reason": why.reported,  # KAI's (or kube-scheduler's) own words; "" before it reported
                    "explanation": why.summary,
                    "runbook": why.runbook,
                }
            )
    return stuck


def stuck_line(learner: str, s: dict) -> str:
    """One stuck thing in words (plain text: a caller escapes it for its page)."""
    if s.get("kind") == "lesson":
        return f"{learner}: lesson {s['lesson']} ({s['namespace']}) {s['reason']}"
    said = f"the scheduler says: {s['reason']}" if s.get("reason") else s.get("explanation", "")
    return f"{learner}: {s['pod']} Pending {s['pending_seconds']} s — {said}"
