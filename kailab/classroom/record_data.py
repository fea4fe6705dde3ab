"""What a lesson record may hold: a learner wrote it, so every field is checked whole (bounds, types, times) before use."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

from kailab.checks import UNDECIDED
from kailab.gpus import NO_QUEUE

RUNNING = "RUNNING"  # a record's outcome from a lesson's start until its verdict

MAX_RECORDS = 100  # a learner's records read by class status (17 lessons, their tasks and the challenges: far fewer)
MAX_TEXT = 2000  # characters of a title or a prediction
MAX_JSON = 512 * 1024  # characters of a record's JSON field (a timeline, the verdict)
MAX_POINTS = 10_000  # points of a GPU timeline
MAX_QUEUES = 64  # queues in a timeline's point
MAX_CHECKS = 500  # expectations of a lesson (decided or still to come) and lines of one's detail
MAX_ATTEMPTS = 50  # earlier attempts a record keeps (the oldest are dropped first)
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


class _CheckRow(BaseModel):
    """A decided expectation as :meth:`kailab.checks.Check.to_dict` writes it (a row the pages show)."""

    model_config = ConfigDict(extra="ignore", strict=True)
    title: str
    expected: str = ""
    observed: str = ""
    passed: bool = False
    scope: str = ""
    measure: str = ""
    detail: Annotated[list[str], Field(max_length=MAX_CHECKS)] = []
    undecided: str = ""


_CHECKS = TypeAdapter(Annotated[list[_CheckRow], Field(max_length=MAX_CHECKS)])


def _checks(value: Any) -> list[dict]:
    """The expectations decided so far (a running lesson's record: :func:`progress_object`)."""
    if not isinstance(value, list):
        raise ValueError("is not a list of decided expectations")
    return [c.model_dump() for c in _CHECKS.validate_python(value)]


def _titles(value: Any) -> list[str]:
    """The titles of the expectations a lesson will decide (:func:`started_object`)."""
    if not (
        isinstance(value, list)
        and len(value) <= MAX_CHECKS
        and all(isinstance(t, str) and len(t) <= MAX_TEXT for t in value)
    ):
        raise ValueError(f"is not a list of at most {MAX_CHECKS} expectations' titles")
    return value


def _verdict(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError("is not a verdict (a JSON object)")
    if not all(isinstance(value.get(k) or "", str) for k in ("error", "not_applicable")):
        raise ValueError("is not a verdict: its error or why it did not apply is not text")
    if "checks" in value:
        value["checks"] = _checks(value["checks"])
    return value


class _Attempt(BaseModel):
    """An earlier attempt at a lesson, as :func:`kailab.classroom.records.earlier_attempts` keeps it."""

    model_config = ConfigDict(extra="ignore", strict=True)
    outcome: Literal[OUTCOMES]  # type: ignore[valid-type]  # RUNNING: cut short, it never had a verdict
    started: Annotated[str, AfterValidator(_when)] = ""
    finished: Annotated[str, AfterValidator(_when)] = ""
    seconds: Annotated[str, Field(max_length=20, pattern=r"^(\d{1,9}(\.\d{1,3})?)?$")] = ""


_ATTEMPTS = TypeAdapter(Annotated[list[_Attempt], Field(max_length=MAX_ATTEMPTS)])


def _attempts(value: Any) -> list[dict]:
    """The earlier attempts at a lesson, oldest first."""
    if not isinstance(value, list):
        raise ValueError("is not a list of earlier attempts")
    return [a.model_dump() for a in _ATTEMPTS.validate_python(value)]


class RecordData(BaseModel):
    """A lesson record's ``data`` (:func:`record_object`, :func:`started_object`), checked whole: a learner can write
    their own records, so any of it may be wrong, too large, or made to look like something else. A field that holds
    JSON holds its parsed value once checked (absent: [] or {}); ``expectations`` and ``checks`` are a running
    lesson's (:func:`started_object`, :func:`progress_object`), for the pages; ``attempts`` the learner's earlier
    attempts at the same lesson (outcome and when), oldest first."""

    model_config = ConfigDict(extra="ignore", strict=True, validate_default=True)
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
    expectations: Annotated[str, AfterValidator(_json("expectations' titles", _titles))] = ""
    checks: Annotated[str, AfterValidator(_json("decided expectations", _checks))] = ""
    attempts: Annotated[str, AfterValidator(_json("earlier attempts", _attempts))] = ""
