"""Lesson records in the cluster: each lesson's verdict, as it goes, where the instructor's kubeconfig and the pages read it.

One ConfigMap per lesson run, in that lesson's namespace (``kailab-record``; a task's or challenge's, which runs in its
lesson's namespace, is ``kailab-record-<its name>``), labelled with the lab's (or learner's) owner labels and
``kailab.io/lesson-record`` (and a learner's ``kailab.io/learner``): written when the lesson starts (outcome
``RUNNING``, with the expectations it will decide), again each time an expect step is decided (the checks so far), and
replaced by its verdict, kept whole (JSON) with its GPU timeline beside the few fields ``class status`` shows.
Nobody collects anything by hand: ``class status``, ``class evidence`` and the pages (``kailab serve``, ``kailab class
serve``) list or watch them by label. This is the one place a lesson's progress is published.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from kailab import partitions
from kailab.checks import Verdict
from kailab.classroom import STUCK_SECONDS
from kailab.explain import explain_pods
from kailab.kube import Kube, as_json
from kailab.labels import LEARNER_LABEL, RECORD_LABEL, SCENARIO_LABEL
from kailab.ownership import Owner
from kailab.pods import api_time, pod_view
from kailab.predictions import tally
from kailab.scenarios import model

NAME = "kailab-record"
RUNNING = "RUNNING"  # a record's outcome from a lesson's start until its verdict


def record_name(scenario: str) -> str:
    """A lesson's record is ``kailab-record``; any other scenario's (a task, a challenge) is named for it, as it may
    run in a lesson's namespace beside that lesson's record."""
    from kailab.lesson import lesson_names

    return NAME if scenario in lesson_names() else f"{NAME}-{scenario}"


def _labels(learner: str | None, lesson: str, owner: Owner | None) -> dict:
    """A record's labels: its owner's (a learner's by default), the learner's name if it is a learner's, the lesson."""
    whose = owner if owner is not None else partitions.owner(learner) if learner else Owner()
    return {**whose.labels, **({LEARNER_LABEL: learner} if learner else {}), RECORD_LABEL: lesson}


def _record(learner: str | None, lesson: str, namespace: str, owner: Owner | None, data: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": record_name(lesson), "namespace": namespace, "labels": _labels(learner, lesson, owner)},
        "data": data,
    }


def expectations(scenario) -> list[str]:
    """The titles of the expectations a scenario's expect steps decide, in order: what a page shows as still to come.
    A task's hidden checks (no line in the learner's file) are not named before they are decided."""
    return [e.title for s in scenario.steps if isinstance(s, model.Expect) for e in s.expectations if e.line]


def started_object(
    learner: str | None, lesson: str, title: str, namespace: str, expected=(), owner: Owner | None = None
) -> dict:
    """The record of a lesson that has started and has no verdict yet: ``class status`` counts the minutes; the
    pages show its ``expected`` expectations as still to come."""
    data = {
        "lesson": lesson,
        "title": title,
        "outcome": RUNNING,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "expectations": json.dumps(list(expected)),
    }
    return _record(learner, lesson, namespace, owner, data)


def progress_object(learner: str | None, verdict: Verdict, expected=(), owner: Owner | None = None) -> dict:
    """The record of a lesson still running, with the expectations decided so far (``verdict.checks``)."""
    data = {
        "lesson": verdict.scenario,
        "title": verdict.title,
        "outcome": RUNNING,
        "started": verdict.started,
        "expectations": json.dumps(list(expected)),
        "checks": json.dumps([c.to_dict() for c in verdict.checks]),
    }
    return _record(learner, verdict.scenario, verdict.namespace, owner, data)


def record_object(
    learner: str | None,
    verdict: Verdict,
    prediction: str = "",
    graded: list[dict] | None = None,
    owner: Owner | None = None,
) -> dict:
    """The record of a lesson's verdict (it replaces the started one): outcome, when, the prediction, the graded
    predictions (kailab/predictions.py's ``Graded.to_dict``: key, ask, given, answer, right, mark) and how many were
    right, the verdict whole and its GPU timeline (the engine's, for ``class evidence`` and the pages).
    ``learner`` None: a lab's own lesson (``owner``: the lab's)."""
    data = {
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
    }
    return _record(learner, verdict.scenario, verdict.namespace, owner, data)


class Recording:
    """An engine whose lessons are kept in the cluster as they go: a record when one starts (``RUNNING``), updated as
    each expect step is decided, replaced by its verdict when it ends. ``learner``: a class's learner's (their owner
    labels); None: the lab's own (``owner``). Everything else is the engine's."""

    def __init__(self, engine, kube: Kube, learner: str | None, owner: Owner | None = None):
        self.engine, self.kube, self.learner, self.owner = engine, kube, learner, owner
        self._expected: list[str] = []
        engine.decided = self._decided

    def __getattr__(self, name: str):
        return getattr(self.engine, name)

    def run(self, scenario) -> Verdict:
        self._expected = expectations(scenario)
        started = started_object(
            self.learner, scenario.name, scenario.title, scenario.namespace, self._expected, self.owner
        )
        try:
            self.kube.apply(started)
        except ApiException as e:
            if e.status != 404:
                raise
            # The instructor's first lesson of a learner who has no credential: their namespace is made here
            self.engine.cluster.ensure_namespace(scenario.namespace, {SCENARIO_LABEL: scenario.name})
            self.kube.apply(started)
        verdict = self.engine.run(scenario)
        self.kube.apply(record_object(self.learner, verdict, owner=self.owner))
        return verdict

    def _decided(self, verdict: Verdict) -> None:
        self.kube.apply(progress_object(self.learner, verdict, self._expected, self.owner))


def _time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def record_row(cm: dict, details: bool = False) -> tuple[str, dict]:
    """A lesson record (a ConfigMap as the API's JSON) as ``class status`` and the pages show it: (its lesson, a row of
    outcome, when, prediction, graded predictions and how many were right, its namespace). ``details``: its title, the
    record's name, its expectations decided so far (all of them once it ended), those still to come, why it did not
    run or stopped, and its GPU timeline (for ``class evidence`` and the pages)."""
    d = cm.get("data") or {}
    meta = cm.get("metadata") or {}
    name = str(d.get("lesson", "?"))
    row: dict = {k: str(d.get(k, "")) for k in ("outcome", "started", "finished", "seconds", "prediction", "right")}
    row["predictions"] = _graded(d.get("predictions"))
    row["namespace"] = meta.get("namespace", "")
    if details:
        verdict = _json(d.get("verdict"), dict) or {}
        row["lesson"] = name
        row["title"] = str(d.get("title") or name)
        row["record"] = meta.get("name", "")
        row["timeline"] = _timeline(d.get("timeline"))
        checks = verdict.get("checks") if verdict else _json(d.get("checks"), list)
        row["checks"] = [c for c in checks or [] if isinstance(c, dict)]
        decided = Counter(str(c.get("title")) for c in row["checks"])
        waiting = []
        for title in map(str, _json(d.get("expectations"), list) or []):  # in order; a title twice is two rows
            if decided[title]:
                decided[title] -= 1
            else:
                waiting.append(title)
        row["waiting"] = waiting if row["outcome"] == RUNNING else []
        row["error"] = str(verdict.get("error") or "")
        row["not_applicable"] = str(verdict.get("not_applicable") or "")
    return name, row


def gather(kube: Kube, learners: list[str]) -> tuple[list[dict], dict[str, list[str]], dict[str, list[dict]]]:
    """What ``class status`` reads, in one list each: the learners' lesson records, each learner's namespaces, and the
    pods of each of those (the API's JSON). The pages keep the same from watches (kailab/web)."""
    records = as_json(kube.core.list_config_map_for_all_namespaces)(label_selector=f"{LEARNER_LABEL},{RECORD_LABEL}")
    namespaces = {
        learner: [
            ns.metadata.name
            for ns in kube.core.list_namespace(label_selector=partitions.owner(learner).selector()).items
        ]
        for learner in learners
    }
    pods = {ns: kube.pods(ns) for names in namespaces.values() for ns in names}
    return records["items"], namespaces, pods


Explainer = Callable[[str, str, list[dict], list], list]  # (learner, namespace, waiting pods, visible) → Explanations


def explainer(kube: Kube) -> Explainer:
    """Why a learner's pods wait, as ``kailab explain`` reads it: from KAI's events, the queues and their nodes."""

    def explain(learner: str, namespace: str, waiting: list[dict], visible: list) -> list:
        return explain_pods(kube, waiting, namespace, visible=visible, node_selector=partitions.node_selector(learner))

    return explain


def class_status(
    kube: Kube,
    learners: list[str],
    now: datetime | None = None,
    stuck_after: float = STUCK_SECONDS,
    timelines: bool = False,
) -> dict:
    """The class now, read from the cluster (:func:`gather`, then :func:`class_view`)."""
    records, namespaces, pods = gather(kube, learners)
    return class_view(learners, records, namespaces, pods, explainer(kube), now, stuck_after, timelines)


def class_view(
    learners: list[str],
    records: list[dict],
    namespaces: dict[str, list[str]],
    pods: dict[str, list[dict]],
    explain: Explainer,
    now: datetime | None = None,
    stuck_after: float = STUCK_SECONDS,
    timelines: bool = False,
) -> dict:
    """Learners × lessons (outcome, when, prediction, graded predictions right or wrong) and who is stuck: a lesson
    running ``stuck_after`` seconds or more without a verdict, and a pod Pending as long, unbound, with KAI's reason
    (``explain``: as ``kailab explain`` reads it). A pod a finished lesson left Pending is that lesson's result, not a
    learner stuck: only pods made after their namespace's lesson finished, or while it runs, count. A record counts
    for a learner only in a namespace of theirs (``namespaces``). ``timelines``: each lesson's details too
    (:func:`record_row`, for ``class evidence`` and the pages). Pure: what the cluster holds comes in."""
    now = now or datetime.now(UTC)
    out = {}
    for learner in learners:
        theirs = set(namespaces.get(learner, []))
        lessons, finished_at, stuck = {}, {}, []
        for cm in records:
            meta = cm.get("metadata") or {}
            if (meta.get("labels") or {}).get(LEARNER_LABEL) != learner or meta.get("namespace") not in theirs:
                continue
            name, row = record_row(cm, timelines)
            lessons[name] = row
            if (running := _running_for(row, now)) is not None:
                if running >= stuck_after:
                    stuck.append(
                        {
                            "kind": "lesson",
                            "lesson": name,
                            "namespace": row["namespace"],
                            "running_seconds": int(running),
                            "reason": f"started {int(running)} s ago and has no verdict yet",
                        }
                    )
            elif done := _time(row["finished"]):
                finished_at[row["namespace"]] = done
        mine = {ns: pods.get(ns, []) for ns in sorted(theirs)}
        stuck += _pending(learner, mine, now, stuck_after, finished_at, explain)
        out[learner] = {"lessons": lessons, "stuck": stuck}
    return out


def next_stuck(report: dict, pods: dict[str, list[dict]], now: datetime, stuck_after: float = STUCK_SECONDS):
    """When the next lesson or pod of this class view becomes stuck with no change in the cluster (seconds from
    ``now``); None when nothing would. A page redraws then, rather than asking again and again."""
    soon = []
    for row in (r for learner in report.values() for r in learner["lessons"].values()):
        if (running := _running_for(row, now)) is not None and running < stuck_after:
            soon.append(stuck_after - running)
    for items in pods.values():
        for p in items:
            if _unbound(p) and (age := (now - _created(p)).total_seconds()) < stuck_after:
                soon.append(stuck_after - age)
    return min(soon, default=None)


def _running_for(row: dict, now: datetime) -> float | None:
    """Seconds a lesson without a verdict has run; None for one that has its verdict."""
    if row["outcome"] != RUNNING:
        return None
    started = _time(row["started"])
    return (now - started).total_seconds() if started else 0


def _json(text, kind: type):
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, kind) else None


def _graded(text: str | None) -> list[dict]:
    """A record's graded predictions; [] for a record without them (or not kailab's JSON)."""
    return [g for g in _json(text, list) or [] if isinstance(g, dict)]


def _timeline(text: str | None) -> list:
    return _json(text, list) or []


def _created(pod: dict) -> datetime:
    """When a pod (the API's JSON) was created."""
    return datetime.fromtimestamp(api_time(pod["metadata"].get("creationTimestamp")) or 0, UTC)


def _unbound(pod: dict) -> bool:
    """Pending and on no node, read as :func:`kailab.pods.pod_view` reads them (from the JSON alone: a class's
    every pod is asked this on each look, and a view of each costs more)."""
    return ((pod.get("status") or {}).get("phase") or "Pending") == "Pending" and not (pod.get("spec") or {}).get(
        "nodeName"
    )


def _pending(
    learner: str,
    pods: dict[str, list[dict]],
    now: datetime,
    stuck_after: float,
    finished_at: dict,
    explain: Explainer,
) -> list[dict]:
    """The learner's pods waiting for a scheduler ``stuck_after`` seconds or more, each with KAI's reason."""
    visible: list = []  # what the learner's nodes hold, read once one of their pods is stuck
    stuck = []
    for ns, items in pods.items():
        done = finished_at.get(ns)
        waiting = [
            p
            for p in items
            if _unbound(p)
            and (now - _created(p)).total_seconds() >= stuck_after
            and (done is None or _created(p) > done)
        ]
        if not waiting:
            continue
        visible = visible or [pod_view(p) for items in pods.values() for p in items]
        for p, why in zip(waiting, explain(learner, ns, waiting, visible), strict=True):
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
