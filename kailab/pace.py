"""How busy the lab is: KAI's scheduling cycle and the API server's latency, against a quiet lab's.

A verdict must not depend on how busy the host is (README "Verdicts on a busy host"). kailab reads two numbers:

- KAI's **scheduling cycle**: the scheduler's gauge ``<namespace>_e2e_scheduling_latency_milliseconds`` — the last
  cycle's work, "scheduling algorithm + binding" (KAI v0.17.0 ``pkg/scheduler/metrics/metrics.go``, set by
  ``UpdateE2eDuration`` in ``pkg/scheduler/scheduler.go``'s ``runOnce``). The scheduler starts its next cycle one
  ``--schedule-period`` after a cycle ends (``wait.Until``), so a cycle takes the period plus that work; KAI reclaims and
  preempts one victim per cycle, so a lesson's wait grows with it.
- The **API server's latency**: during a lesson, the round trip of one small request (a list of one pod) every
  second; for ``kailab status``, also the API server's own ``apiserver_request_duration_seconds`` between two
  readings of its ``/metrics`` (every request the cluster served in between, watches excepted).

:func:`slowdown` turns a reading into "how many times slower than a quiet lab": a wait's limit is its timeout times
that (kailab/scenarios/timing.py), and at :data:`BUSY` or more kailab says the host is too busy (``kailab status``,
the start of each lesson) and a check that ran out of time while it was says UNDECIDED, not FAIL.

The pure part (parsing, :func:`slowdown`, :func:`busy_words`) is here with what reads the numbers (:func:`sample`,
:func:`measure`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from kailab.api_paths import api_request

# Measured on this project's 2-core machine (the PACE lines of recorded lessons, tests/golden/*/changes.jsonl): a lab
# running one lesson at a time, KAI's cycle's work 0-1 ms between binds and a one-pod list 3-45 ms; all 17 lessons side
# by side beside stress-ng --cpu 4, the list took 0.1-0.4 s (median per lesson; up to 0.8 s) and KAI's cycles that
# bind pods 1-3.5 s (one API round trip per BindRequest). A cycle starts 250 ms after the last ends
# (scheduler_settings.LAB_SCHEDULER_ARGS).
SCHEDULE_PERIOD = 0.25  # seconds between KAI's cycles in a lab kailab made
QUIET_CYCLE_WORK = 0.05  # seconds of work in one of KAI's cycles on a quiet lab
QUIET_API = 0.015  # seconds for one small API request on a quiet lab
API_FLOOR = 0.05  # seconds added to both sides of the API ratio: 5 ms against 15 ms is noise, not a busy host
BUSY = 3.0  # this many times slower than quiet: "far above normal"
MOST = 10.0  # a wait's limit grows to at most this many times its timeout

_E2E = re.compile(r"^(?:\w+_)?e2e_scheduling_latency_milliseconds(?:\{[^}]*\})?\s+(\S+)", re.MULTILINE)
# A line's start as "\n", not "^" with re.MULTILINE: a pattern that begins with text is searched for as text, 3× faster
# through the API server's megabytes of metrics (read at the start of every lesson)
_API = re.compile(r"\napiserver_request_duration_seconds_(?P<kind>sum|count)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_VERB = re.compile(r'verb="([^"]*)"')
LONG_RUNNING = {"WATCH", "WATCHLIST", "CONNECT"}  # open for minutes by design: not latency


@dataclass(frozen=True)
class Pace:
    """One reading of how fast the lab answers: KAI's last cycle's work and one API request, in seconds (None: not
    read — a cluster whose scheduler metrics kailab cannot read)."""

    cycle: float | None = None
    api: float | None = None

    def to_json(self) -> dict:
        return {k: round(v, 4) for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, d: dict) -> Pace:
        return cls(d.get("cycle"), d.get("api"))


def cycle_work(metrics: str | None) -> float | None:
    """Seconds of work in KAI's last scheduling cycle, from its scheduler's metrics text; None if absent.

    KAI v0.17.0 registers the gauge twice: unprefixed when its package loads, then under ``--metrics-namespace``
    (``kai_``), which alone it sets — the other stays 0. So the largest is the one."""
    values = []
    for m in _E2E.finditer(metrics or ""):
        try:
            values.append(float(m.group(1)) / 1000)
        except ValueError:
            continue
    return max(values) if values else None


def request_totals(metrics: str | None) -> tuple[float, float]:
    """(seconds, requests) the API server has served so far, watches excepted, from its ``/metrics`` text."""
    total, count = 0.0, 0.0
    for m in _API.finditer("\n" + (metrics or "")):
        verb = _VERB.search(m["labels"])
        if verb is None or verb.group(1) in LONG_RUNNING:
            continue
        try:
            value = float(m["value"])
        except ValueError:
            continue
        if m["kind"] == "sum":
            total += value
        else:
            count += value
    return total, count


def api_latency(before: str | None, after: str | None) -> float | None:
    """The API server's mean request latency (seconds) between two readings of its metrics; None if it served none."""
    (s0, c0), (s1, c1) = request_totals(before), request_totals(after)
    return (s1 - s0) / (c1 - c0) if c1 > c0 else None


def slowdown(p: Pace | None) -> float:
    """How many times slower than a quiet lab this reading is (1 at least, :data:`MOST` at most)."""
    if p is None:
        return 1.0
    ratios = [1.0]
    if p.cycle is not None:
        ratios.append((SCHEDULE_PERIOD + p.cycle) / (SCHEDULE_PERIOD + QUIET_CYCLE_WORK))
    if p.api is not None:
        ratios.append((API_FLOOR + p.api) / (API_FLOOR + QUIET_API))
    return min(MOST, max(ratios))


def words(p: Pace) -> str:
    """The reading in words: "KAI's last cycle 1.8 s of work (quiet: under 0.05 s), API requests 0.4 s (…)"."""
    said = []
    if p.cycle is not None:
        said.append(f"KAI's last scheduling cycle {_s(p.cycle)} of work (quiet: about {_s(QUIET_CYCLE_WORK)})")
    if p.api is not None:
        said.append(f"API requests {_s(p.api)} (quiet: about {_s(QUIET_API)})")
    return ", ".join(said) or "nothing could be read"


def busy_words(p: Pace | None) -> str:
    """A warning when the reading is :data:`BUSY` times slower than quiet or more; "" when it is not."""
    if p is None or slowdown(p) < BUSY:
        return ""
    return (
        f"The lab is busy: {words(p)} — {slowdown(p):.0f}× slower than quiet. Waits grow with it; a check that still "
        "cannot tell says UNDECIDED. Run fewer lessons or learners at once (kailab demo all --parallel N) if you can."
    )


def _s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


# -- reading it ----------------------------------------------------------------------------------------------------


def sample(kube, namespace: str, metrics: Callable[[], str | None] | None) -> tuple[Pace, float | None]:
    """One reading now: KAI's cycle (from ``metrics``, a reader of its scheduler's metrics) and the round trip of a
    list of one pod in ``namespace``; with the API server's time of that answer (its Date header, whole seconds)."""
    cycle = None
    if metrics is not None:
        try:
            cycle = cycle_work(metrics())
        except Exception:  # a scheduler being restarted has no metrics for a moment
            cycle = None
    api, server = None, None
    began = time.monotonic()
    try:
        # by its path, not the typed client's call, whose argument checks (pydantic) cost CPU on each (once a second)
        answer = api_request(
            kube.api, "GET", f"/api/v1/namespaces/{quote(namespace, safe='')}/pods", [("limit", 1)], timeout=30
        )
        answer.read()  # read to its end, the connection goes back to the pool: unread, the next reading made a new one
        api, server = time.monotonic() - began, http_date(answer.headers.get("Date"))
    except ApiException as e:  # refused (a learner's namespace it may not list): an answer all the same
        api, server = time.monotonic() - began, http_date((e.headers or {}).get("Date"))
    except Exception:  # no answer in 30 s is said by the watches; this reading has no API part
        pass
    return Pace(cycle, api), server


def http_date(text: str | None) -> float | None:
    """Seconds since the epoch of an HTTP Date header (``Wed, 27 Nov 2026 02:30:00 GMT``); None for none."""
    if not text:
        return None
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return None


def apiserver_metrics(kube) -> str | None:
    """The API server's own ``/metrics`` text; None when these credentials may not read it."""
    try:
        method, url, headers, body, post = kube.api.param_serialize("GET", "/metrics", auth_settings=["BearerToken"])
        answer = kube.api.call_api(method, url, header_params=headers, _request_timeout=10)
        answer.read()
        if not 200 <= answer.status <= 299:
            return None
        return answer.data.decode("utf-8", "replace")
    except Exception:
        return None


def measure(kube, metrics: Callable[[], str | None] | None, namespace: str = "default", gap: float = 1.0) -> Pace:
    """A reading for ``kailab status`` and the start of a lesson: KAI's cycle, and the API server's mean latency over
    ``gap`` seconds from its own metrics (the round trip of one request where those cannot be read)."""
    before = apiserver_metrics(kube)
    quick, _ = sample(kube, namespace, metrics)
    if before is None:
        return quick
    time.sleep(gap)
    served = api_latency(before, apiserver_metrics(kube))
    return Pace(quick.cycle, served if served is not None else quick.api)
