"""Lesson records in the cluster: each learner's verdicts, where the instructor's kubeconfig reads them.

One ConfigMap per lesson a learner ran, in that lesson's namespace of theirs (``kailab-record``; a task's or challenge's,
which runs in its lesson's namespace, is ``kailab-record-<its name>``), labelled with
their owner labels and ``kailab.io/lesson-record``: written when the lesson starts (outcome ``RUNNING``) and
replaced by its verdict, kept whole (JSON) with its GPU timeline beside the few fields ``class status`` shows.
Nobody collects anything by hand: ``class status`` and ``class evidence`` list them by label.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from kubernetes.client.exceptions import ApiException
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from kailab import partitions
from kailab.checks import UNDECIDED, Verdict
from kailab.classroom import STUCK_SECONDS
from kailab.errors import KailabError
from kailab.explain import explain_pods
from kailab.gpus import NO_QUEUE
from kailab.kube import Kube
from kailab.labels import LEARNER_LABEL, RECORD_LABEL, SCENARIO_LABEL
from kailab.pods import api_time, pod_view
from kailab.predictions import tally
from kailab.progress import stderr
from kailab.scheduler_settings import SchedulerSettings

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
        self.restore_scheduler()
        verdict = self.engine.run(scenario)
        self.kube.apply(record_object(self.learner, verdict))
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


# -- reading records: a learner wrote them, so each is checked whole before it is used ----------------------------------

MAX_RECORDS = 100  # a learner's records read by class status (17 lessons, their tasks and the challenges: far fewer)
MAX_TEXT = 2000  # characters of a title or a prediction
MAX_JSON = 512 * 1024  # characters of a record's JSON field (a timeline, the verdict)
MAX_POINTS = 10_000  # points of a GPU timeline
MAX_QUEUES = 64  # queues in a timeline's point
OUTCOMES = (RUNNING, "PASS", "FAIL", UNDECIDED, "NOT APPLICABLE")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a lesson's, a queue's name


def _when(text: str) -> str:
    """A record's time: "" or ISO 8601 with a time zone (what kailab writes); ValueError otherwise."""
    if text == "":
        return text
    if len(text) > 40:
        raise ValueError("is not a time")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise ValueError("has no time zone")
    return text


def _json(kind: str, shape: Callable[[Any], Any]):
    """A record field that holds JSON (text), parsed and checked by ``shape``."""

    def parse(text: str) -> Any:
        if len(text) > MAX_JSON:
            raise ValueError(f"is larger than {MAX_JSON // 1024} KiB")
        try:
            value = json.loads(text) if text else []
        except (ValueError, RecursionError):
            raise ValueError(f"is not JSON ({kind})") from None
        return shape(value)

    return parse


class _Graded(BaseModel):
    """A graded prediction as kailab/predictions.py's ``Graded.to_dict`` writes it."""

    model_config = ConfigDict(extra="ignore", strict=True)
    key: Annotated[str, Field(max_length=100)]
    ask: Annotated[str, Field(max_length=MAX_TEXT)] = ""
    given: Annotated[str, Field(max_length=MAX_TEXT)] | None = ""
    answer: Annotated[str, Field(max_length=MAX_TEXT)] | None = ""
    right: bool | None = None
    mark: Literal["right", "wrong", "not graded"]


_GRADED = TypeAdapter(list[_Graded])


def _graded(value: Any) -> list[dict]:
    if not isinstance(value, list) or len(value) > 100:
        raise ValueError("is not a list of graded predictions")
    return [g.model_dump() for g in _GRADED.validate_python(value)]


def _timeline(value: Any) -> list:
    """[[seconds, {queue: GPUs}], …] as the engine keeps it (kailab/scenarios/engine.py; pods of no queue under
    gpus.NO_QUEUE)."""
    if not isinstance(value, list) or len(value) > MAX_POINTS:
        raise ValueError(f"is not a timeline of at most {MAX_POINTS:,} points")
    for point in value:
        if not (isinstance(point, list) and len(point) == 2 and isinstance(point[1], dict)):
            raise ValueError("is not a timeline: each point is [seconds, {queue: GPUs}]")
        t, gpus = point
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 <= t < 1e7:
            raise ValueError("is not a timeline: a point's time is not a number of seconds")
        if len(gpus) > MAX_QUEUES or not all(
            isinstance(q, str)
            and (DNS_LABEL.match(q) or q == NO_QUEUE)
            and isinstance(g, (int, float))
            and not isinstance(g, bool)
            and math.isfinite(g)
            and 0 <= g <= 1e6
            for q, g in gpus.items()
        ):
            raise ValueError("is not a timeline: a point holds something other than queue names and GPU counts")
    return value


def _verdict(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError("is not a verdict (a JSON object)")
    return value


class RecordData(BaseModel):
    """A lesson record's ``data`` (:func:`record_object`, :func:`started_object`), checked whole: a learner can write
    their own records, so any of it may be wrong, too large, or made to look like something else."""

    model_config = ConfigDict(extra="ignore", strict=True)
    lesson: Annotated[str, Field(pattern=DNS_LABEL.pattern)]
    title: Annotated[str, Field(max_length=MAX_TEXT)] = ""
    outcome: Literal[OUTCOMES]  # type: ignore[valid-type]
    started: Annotated[str, AfterValidator(_when)] = ""
    finished: Annotated[str, AfterValidator(_when)] = ""
    seconds: Annotated[str, Field(max_length=20, pattern=r"^(\d{1,9}(\.\d{1,3})?)?$")] = ""
    prediction: Annotated[str, Field(max_length=MAX_TEXT)] = ""
    predictions: Annotated[str, AfterValidator(_json("graded predictions", _graded))] = ""
    right: Annotated[str, Field(max_length=40)] = ""
    verdict: Annotated[str, AfterValidator(_json("a verdict", _verdict))] = "{}"
    timeline: Annotated[str, AfterValidator(_json("a GPU timeline", _timeline))] = ""


def read_record(cm, learner: str) -> dict:
    """A record (a ConfigMap, as the client gives it) of ``learner``'s as a row of ``class status``; ValueError saying
    why it is not one: in another's namespace, not named as its lesson's record, or data that is not kailab's."""
    namespace, name = cm.metadata.namespace or "", cm.metadata.name or ""
    if not namespace.startswith(f"{learner}-"):
        raise ValueError(f"it is in namespace {namespace[:63]!r}, not one of {learner}'s")
    try:
        data = RecordData.model_validate(cm.data or {})
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"][:2]) or "its data"
        more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise ValueError(f"{where}: {first['msg'].removeprefix('Value error, ')}{more}") from None
    if (cm.metadata.labels or {}).get(RECORD_LABEL) != data.lesson or name != record_name(data.lesson):
        raise ValueError(f"it is named {name[:63]!r}, not as the record of {data.lesson}")
    if data.outcome == RUNNING and not data.started:
        raise ValueError("a running lesson's record says no start time")
    return {
        **data.model_dump(include={"outcome", "started", "finished", "seconds", "prediction", "right", "title"}),
        "predictions": data.predictions,
        "timeline": data.timeline,
        "namespace": namespace,
        "lesson": data.lesson,
    }


def _records(kube: Kube, learner: str) -> tuple[list, bool]:
    """The learner's records (at most MAX_RECORDS), and whether there were more."""
    listed = kube.core.list_config_map_for_all_namespaces(
        label_selector=f"{LEARNER_LABEL}={learner},{RECORD_LABEL}", limit=MAX_RECORDS + 1
    )
    items = list(listed.items or [])
    more = len(items) > MAX_RECORDS or bool(getattr(listed.metadata, "_continue", None))
    return items[:MAX_RECORDS], more


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
    and title too (for ``class evidence``). A record that is not one (:func:`read_record`) is left out and said,
    per learner, in ``unreadable``: everyone else's, and the learner's other records, are shown."""
    now = now or datetime.now(UTC)
    out = {}
    for learner in learners:
        lessons: dict[str, dict] = {}
        finished_at: dict[str, datetime] = {}
        stuck: list[dict] = []
        unreadable: list[dict] = []
        records, more = _records(kube, learner)
        if more:
            unreadable.append({"record": "", "why": f"more than {MAX_RECORDS} records: only {MAX_RECORDS} were read"})
        for cm in records:
            try:
                row = read_record(cm, learner)
            except ValueError as e:
                where = f"{(cm.metadata.namespace or '')[:63]}/{(cm.metadata.name or '')[:253]}"
                unreadable.append({"record": where, "why": str(e)})
                continue
            name = row.pop("lesson")
            if not timelines:
                row.pop("title"), row.pop("timeline")
            elif not row["title"]:
                row["title"] = name
            lessons[name] = row
            started = _time(row["started"])
            if row["outcome"] == RUNNING:
                running = (now - started).total_seconds() if started else 0
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
        stuck += _pending(kube, learner, now, stuck_after, finished_at)
        out[learner] = {"lessons": lessons, "stuck": stuck, "unreadable": unreadable}
    return out


def unreadable_line(learner: str, u: dict) -> str:
    """A record that could not be read, in words: ``ann: record unreadable (ns/name: why)``."""
    return f"{learner}: record unreadable ({u['record'] + ': ' if u.get('record') else ''}{u['why']})"


def _time(text: str | None) -> datetime | None:
    """A time kailab wrote (read_record has checked it)."""
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


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
