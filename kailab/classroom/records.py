"""Lesson records in the cluster: each lesson's verdict, as it goes, where the instructor's kubeconfig and the pages read it.

One ConfigMap per lesson run, in that lesson's namespace (``kailab-record``; a task's or challenge's, which runs in its
lesson's namespace, is ``kailab-record-<its name>``), labelled with the lab's (or learner's) owner labels and
``kailab.io/lesson-record`` (and a learner's ``kailab.io/learner``): written when the lesson starts (outcome
``RUNNING``, with the expectations it will decide), again each time an expect step is decided (the checks so far), and
replaced by its verdict, kept whole (JSON) with its GPU timeline beside the few fields ``class status`` shows.
Each new run of the same lesson keeps the earlier attempts' outcomes and times in ``attempts`` (a FAIL, then a PASS),
so the instructor sees every try, not only the last.
Nobody collects anything by hand: ``class status``, ``class evidence`` and the pages (``kailab serve``, ``kailab class
serve``) list or watch them by label. This is the one place a lesson's progress is published.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from kailab import partitions
from kailab.checks import Verdict
from kailab.classroom import STUCK_SECONDS
from kailab.classroom.record_data import MAX_ATTEMPTS, MAX_RECORDS, MAX_TEXT, RUNNING, RecordData
from kailab.errors import KailabError
from kailab.explain import Scope, explain_pods
from kailab.kube import Kube
from kailab.labels import LAB_ID_LABEL, LEARNER_LABEL, RECORD_LABEL, SCENARIO_LABEL
from kailab.ownership import Owner
from kailab.pods import api_time, pod_view
from kailab.predictions import tally
from kailab.progress import stderr
from kailab.scenarios import model
from kailab.scheduler_settings import SchedulerSettings

NAME = "kailab-record"


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


def earlier_attempts(existing: dict | None) -> list[dict]:
    """The attempts a new run of a lesson keeps from its record so far (the API's JSON; None: no record yet): the
    record's own earlier attempts and the record's run itself (outcome and when; RUNNING: one cut short), oldest
    first, at most MAX_ATTEMPTS. A record that is not kailab's (a learner can write their own) keeps nothing."""
    if not existing:
        return []
    try:
        data = RecordData.model_validate(existing.get("data") or {})
    except ValidationError:
        return []
    this = data.model_dump(include={"outcome", "started", "finished", "seconds"})
    return [*data.attempts, this][-MAX_ATTEMPTS:]  # parsed and checked: _attempts


def kept_attempts(kube: Kube, lesson: str, namespace: str) -> list[dict]:
    """The earlier attempts the lesson's record holds now (its verdict written again, as ``kailab lesson`` does with
    the predictions, keeps them)."""
    try:
        data = RecordData.model_validate(
            (kube.get("v1", "ConfigMap", record_name(lesson), namespace) or {}).get("data")
        )
    except ValidationError:
        return []
    return data.attempts  # type: ignore[return-value]  # parsed and checked: _attempts


def with_attempts(obj: dict, attempts: list[dict]) -> dict:
    """A record object (:func:`started_object`, :func:`progress_object`, :func:`record_object`) with the earlier
    attempts it keeps."""
    if attempts:
        obj["data"]["attempts"] = json.dumps(attempts)
    return obj


class Recording:
    """An engine whose lessons are kept in the cluster as they go: a record when one starts (``RUNNING``), updated as
    each expect step is decided, replaced by its verdict when it ends. ``learner``: a class's learner's (their owner
    labels); None: the lab's own (``owner``). Everything else is the engine's."""

    def __init__(self, engine, kube: Kube, learner: str | None, owner: Owner | None = None):
        self.engine, self.kube, self.learner, self.owner = engine, kube, learner, owner
        self._expected: list[str] = []
        self._attempts: list[dict] = []
        engine.decided = self._decided

    def __getattr__(self, name: str):
        return getattr(self.engine, name)

    def run(self, scenario) -> Verdict:
        if self.learner is None and self.engine.not_applicable(scenario):
            return self.engine.run(scenario)  # the lab's own lesson that cannot run here leaves nothing in the cluster
        self._expected = expectations(scenario)
        self._attempts = earlier_attempts(
            self.kube.get("v1", "ConfigMap", record_name(scenario.name), scenario.namespace)
        )
        started = with_attempts(
            started_object(self.learner, scenario.name, scenario.title, scenario.namespace, self._expected, self.owner),
            self._attempts,
        )
        try:
            self.kube.apply(started)
        except ApiException as e:
            if e.status != 404:
                raise
            # The instructor's first lesson of a learner who has no credential: their namespace is made here
            self.engine.cluster.ensure_namespace(scenario.namespace, {SCENARIO_LABEL: scenario.name})
            self.kube.apply(started)
        self.restore_scheduler()
        verdict = self.engine.run(scenario)
        self.kube.apply(with_attempts(record_object(self.learner, verdict, owner=self.owner), self._attempts))
        return verdict

    def restore_scheduler(self) -> None:
        """Their scheduler as every lesson starts from it: running, with the lab's defaults. One that a lesson cut
        short left stopped or reconfigured (the placement, consolidation and fair-share lessons change it) is said
        plainly and restored, so the lesson is not played against a scheduler that never comes."""
        control = getattr(self.engine.cluster, "scheduler", None)
        if control is None:
            return
        try:
            running, settings = control.running(), control.settings
        except KailabError:  # no shard at all: the lesson's own steps say so
            return
        if running and settings == SchedulerSettings():
            return
        found = "stopped" if not running else f"running with {settings.describe()}"
        # said even with --quiet or --json (on stderr): the lesson's times and the instructor's view depend on it
        stderr.print(
            f"! {self.learner}'s scheduler was {found} (a lesson cut short left it so): restarting it with the lab's "
            "defaults before this lesson.",
            style="yellow",
            markup=False,
            highlight=False,
        )
        with self.engine.progress.step(f"Restarting {self.learner}'s scheduler with the lab's defaults"):
            control.start(SchedulerSettings())

    def _decided(self, verdict: Verdict) -> None:
        self.kube.apply(
            with_attempts(progress_object(self.learner, verdict, self._expected, self.owner), self._attempts)
        )


# -- reading records: a learner wrote them, so each is checked whole before it is used ----------------------------------


def _parts(cm) -> tuple[str, str, dict, Any]:
    """A ConfigMap's namespace, name, labels and data, as the API's JSON (the pages' watches) or the client's object
    (``class status``)."""
    if isinstance(cm, dict):
        meta = cm.get("metadata") or {}
        return meta.get("namespace") or "", meta.get("name") or "", meta.get("labels") or {}, cm.get("data") or {}
    return cm.metadata.namespace or "", cm.metadata.name or "", cm.metadata.labels or {}, cm.data or {}


def _checked(cm, learner: str | None) -> tuple[str, str, RecordData]:
    """A record's namespace, name and data checked whole; ValueError saying why it is not a record: in a namespace not
    ``learner``'s, not named as its lesson's record, or data that is not kailab's. ``learner`` None: a lab's own record
    (in any namespace the lab sees)."""
    namespace, name, labels, raw = _parts(cm)
    if learner is not None and not namespace.startswith(f"{learner}-"):
        raise ValueError(f"it is in namespace {namespace[:63]!r}, not one of {learner}'s")
    try:
        data = RecordData.model_validate(raw)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"][:2]) or "its data"
        more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise ValueError(f"{where}: {first['msg'].removeprefix('Value error, ')}{more}") from None
    if labels.get(RECORD_LABEL) != data.lesson or name != record_name(data.lesson):
        raise ValueError(f"it is named {name[:63]!r}, not as the record of {data.lesson}")
    if data.outcome == RUNNING and not data.started:
        raise ValueError("a running lesson's record says no start time")
    return namespace, name, data


def read_record(cm, learner: str) -> dict:
    """A record (a ConfigMap: the client's object or the API's JSON) of ``learner``'s as a row of ``class status``;
    ValueError saying why it is not one (:func:`_checked`)."""
    namespace, _, data = _checked(cm, learner)
    return {
        **data.model_dump(include={"outcome", "started", "finished", "seconds", "prediction", "right", "title"}),
        "predictions": data.predictions,
        "timeline": data.timeline,
        "namespace": namespace,
        "lesson": data.lesson,
        "attempts": data.attempts,
    }


def unreadable_row(cm, why: ValueError) -> dict:
    """A record that could not be read: where it is (namespace/name) and why."""
    namespace, name = _parts(cm)[:2]
    return {"record": f"{str(namespace)[:63]}/{str(name)[:253]}", "why": str(why)}


def _records(kube: Kube, learner: str) -> tuple[list, bool]:
    """The learner's records (at most MAX_RECORDS), and whether there were more."""
    listed = kube.core.list_config_map_for_all_namespaces(
        label_selector=f"{LEARNER_LABEL}={learner},{RECORD_LABEL}", limit=MAX_RECORDS + 1
    )
    items = list(listed.items or [])
    more = len(items) > MAX_RECORDS or bool(getattr(listed.metadata, "_continue", None))
    return items[:MAX_RECORDS], more


def record_row(cm, details: bool = False, learner: str | None = None) -> tuple[str, dict]:
    """A lesson record (the client's object or the API's JSON), checked whole (:func:`_checked`: ValueError for one
    that is not a record of ``learner``'s, or, ``learner`` None, of the lab's), as ``class status`` and the pages show
    it: (its lesson, a row of outcome, when, prediction, graded predictions and how many were right, its namespace).
    ``details``: its title, the record's name, its expectations decided so far (all of them once it ended), those
    still to come, why it did not run or stopped, and its GPU timeline (for ``class evidence`` and the pages)."""
    namespace, record, d = _checked(cm, learner)
    name = d.lesson
    row: dict = {
        **d.model_dump(include={"outcome", "started", "finished", "seconds", "prediction", "right"}),
        "predictions": d.predictions,
        "namespace": namespace,
        "attempts": d.attempts,  # the earlier ones, oldest first
    }
    if details:
        verdict: dict = d.verdict  # type: ignore[assignment]  # parsed and checked: _verdict
        row["lesson"] = name
        row["title"] = d.title or name
        row["record"] = record
        row["timeline"] = d.timeline
        row["checks"] = verdict["checks"] if "checks" in verdict else d.checks
        decided = Counter(c["title"] for c in row["checks"])
        waiting = []
        for title in d.expectations:  # in order; a title twice is two rows
            if decided[title]:
                decided[title] -= 1
            else:
                waiting.append(title)
        row["waiting"] = waiting if row["outcome"] == RUNNING else []
        row["error"] = verdict.get("error") or ""
        row["not_applicable"] = verdict.get("not_applicable") or ""
    return name, row


def gather(kube: Kube, learners: list[str]) -> tuple[list, dict[str, list[str]], dict[str, list[dict]], set[str]]:
    """What ``class status`` reads: the learners' lesson records (at most MAX_RECORDS each), each learner's
    namespaces, the pods of each of those (the API's JSON), and the learners who have more records than were read.
    The pages keep the same from watches (kailab/web)."""
    records: list = []
    more: set[str] = set()
    for learner in learners:
        theirs, too_many = _records(kube, learner)
        records += theirs
        if too_many:
            more.add(learner)
    # One list of the learners' namespaces and one of every pod, whatever the class's size (not a list per learner and
    # one per namespace: 10 a learner, each a round trip to a busy API server).
    ids = ",".join(partitions.owner(learner).lab_id for learner in learners)
    listed = kube.core.list_namespace(label_selector=f"{LAB_ID_LABEL} in ({ids})").items if learners else []
    namespaces = {
        learner: [ns.metadata.name for ns in listed if partitions.owner(learner).owns(ns.metadata.labels)]
        for learner in learners
    }
    pods: dict[str, list[dict]] = {ns: [] for names in namespaces.values() for ns in names}
    for p in kube.pods() if pods else []:
        if (ns := p["metadata"].get("namespace")) in pods:
            pods[ns].append(p)
    return records, namespaces, pods, more


Explainer = Callable[[str, str, list[dict], list], list]  # (learner, namespace, waiting pods, visible) → Explanations


def explainer(kube: Kube) -> Explainer:
    """Why a learner's pods wait, as ``kailab explain`` reads it: from KAI's events, the queues and their nodes."""

    def explain(learner: str, namespace: str, waiting: list[dict], visible: list) -> list:
        scope = Scope(visible=visible, node_selector=partitions.node_selector(learner))
        return explain_pods(kube, waiting, namespace, scope)

    return explain


def class_status(
    kube: Kube,
    learners: list[str],
    now: datetime | None = None,
    stuck_after: float = STUCK_SECONDS,
    timelines: bool = False,
) -> dict:
    """The class now, read from the cluster (:func:`gather`, then :func:`class_view`)."""
    records, namespaces, pods, more = gather(kube, learners)
    return class_view(learners, records, namespaces, pods, explainer(kube), now, stuck_after, timelines, more)


def class_view(
    learners: list[str],
    records: list,
    namespaces: dict[str, list[str]],
    pods: dict[str, list[dict]],
    explain: Explainer,
    now: datetime | None = None,
    stuck_after: float = STUCK_SECONDS,
    timelines: bool = False,
    more: set[str] | frozenset[str] = frozenset(),
) -> dict:
    """Learners × lessons (outcome, when, prediction, graded predictions right or wrong) and who is stuck: a lesson
    running ``stuck_after`` seconds or more without a verdict, and a pod Pending as long, unbound, with KAI's reason
    (``explain``: as ``kailab explain`` reads it). A pod a finished lesson left Pending is that lesson's result, not a
    learner stuck: only pods made after the latest finish in their namespace (a lesson and its tasks share one), or
    while a lesson runs there, count; and a pod a finished lesson's workload made again after its verdict (a Job
    replacing a preempted pod: it carries the lesson's ``kailab.io/scenario``) is that lesson's too. ``timelines``:
    each lesson's details too (:func:`record_row`, for ``class evidence`` and the pages). A record is a learner's to
    write: one that is not one (:func:`record_row`), or that is in no namespace of theirs (``namespaces``), is left
    out and said, per learner, in ``unreadable``, as are records past MAX_RECORDS (``more``: learners with more than
    were read); everyone else's, and the learner's other records, are shown. Pure: what the cluster holds comes in."""
    now = now or datetime.now(UTC)
    out = {}
    for learner in learners:
        theirs = set(namespaces.get(learner, []))
        lessons: dict[str, dict] = {}
        finished_at: dict[str, datetime] = {}
        finished: dict[str, set[str]] = {}  # namespace → the lessons with a verdict there
        stuck: list[dict] = []
        unreadable: list[dict] = []
        mine = [cm for cm in records if _parts(cm)[2].get(LEARNER_LABEL) == learner]
        if learner in more or len(mine) > MAX_RECORDS:
            unreadable.append({"record": "", "why": f"more than {MAX_RECORDS} records: only {MAX_RECORDS} were read"})
        for cm in mine[:MAX_RECORDS]:
            try:
                name, row = record_row(cm, timelines, learner)
                if row["namespace"] not in theirs:
                    raise ValueError(f"it is in namespace {row['namespace'][:63]!r}, not one of {learner}'s")
            except ValueError as e:
                unreadable.append(unreadable_row(cm, e))
                continue
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
                ns = row["namespace"]
                finished_at[ns] = max(done, finished_at.get(ns, done))  # the latest: a lesson's and its tasks'
                finished.setdefault(ns, set()).add(name)
        mine_pods = {ns: pods.get(ns, []) for ns in sorted(theirs)}
        stuck += _pending(learner, mine_pods, now, stuck_after, finished_at, explain, finished)
        out[learner] = {"lessons": lessons, "stuck": stuck, "unreadable": unreadable}
    return out


def unreadable_line(learner: str, u: dict) -> str:
    """A record that could not be read, in words: ``ann: record unreadable (ns/name: why)``."""
    return f"{learner}: record unreadable ({u['record'] + ': ' if u.get('record') else ''}{u['why']})"


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


def _time(text: str | None) -> datetime | None:
    """A time kailab wrote (the record is checked: :func:`_checked`)."""
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


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
    results: dict[str, set[str]] | None = None,
) -> list[dict]:
    """The learner's pods waiting for a scheduler ``stuck_after`` seconds or more, each with KAI's reason; a pod of a
    lesson that has its verdict (``results``: namespace → those lessons) is its result, whenever it was made."""
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
            and ((p.get("metadata") or {}).get("labels") or {}).get(SCENARIO_LABEL) not in (results or {}).get(ns, ())
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
                    "reason": why.reported[:MAX_TEXT],  # KAI's (or kube-scheduler's) own words; "" before it reported
                    "explanation": why.summary[:MAX_TEXT],
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
