"""Time in a scenario run, decided so that a verdict is the same on a busy host as on a quiet one.

Pure: no clock, no I/O — the engine (engine.py) passes in what the changes said (fold.py's RunState).

- **How long a wait may take** (:func:`limit`): its timeout on a quiet lab, times how much slower than quiet the lab
  was while it waited (kailab/pace.py: KAI's scheduling cycle, the API server's latency), plus one of KAI's cycles for
  each pod of the scenario still Pending (KAI reclaims and preempts one victim a cycle); while what it waits for keeps
  changing it waits on (:func:`settle`), never past :data:`~kailab.pace.MOST` times its timeout.
- **A window KAI measures** (:func:`window_end`): from the cluster's own timestamps on the PodGroups — KAI's
  ``kai.scheduler/last-start-timestamp`` and ``stale-podgroup-timestamp`` annotations, the PodGroup's creation —
  never from kailab's clock. A claim held "through the window" is decided on the cluster's time of what broke it;
  so is one held for some seconds (``stable``), for at least :data:`LEAST_CYCLES` of KAI's cycles.
- **What the lab could not tell** (:class:`Waited`, :func:`too_late`): UNDECIDED, "the host was too busy — …", never
  PASS or FAIL.

The cluster writes times in whole seconds: :data:`RESOLUTION`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kailab import kai_strings
from kailab.checks import BUSY_PREFIX
from kailab.pace import BUSY, MOST, SCHEDULE_PERIOD, Pace, slowdown, words
from kailab.pods import PodGroupView, api_time
from kailab.scenarios.model import Window

RESOLUTION = 1.0  # seconds: the API server's timestamps are whole seconds
SETTLE = 3.0  # seconds a quiet lab's wait keeps waiting after what it waits for last changed
SETTLE_CYCLES = 8  # …or this many of KAI's cycles, when they are slower
LEAST_SEEN = 2.0  # seconds of a window the lab must see before it ends to say KAI kept it
LEAST_CYCLES = 3  # a hold ("stable") lasts at least this many of KAI's cycles: on a slow host, more than its seconds

# KAI's annotations on a PodGroup (kailab/kai_strings.yaml)
LAST_START = kai_strings.get("annotation.last-start-timestamp")
STALE_SINCE = kai_strings.get("annotation.stale-podgroup-timestamp")
LAST_EVICTION = kai_strings.get("annotation.last-eviction-timestamp")


def slowest(paces: Sequence[tuple[float, Pace]], since: float) -> tuple[float, Pace | None]:
    """The most slowdown among the readings taken at ``since`` or later (and the last one before it), with that
    reading; (1, None) without any."""
    before = [p for t, p in paces if t < since][-1:]
    during = before + [p for t, p in paces if t >= since]
    if not during:
        return 1.0, None
    worst = max(during, key=slowdown)
    return slowdown(worst), worst


def typical(paces: Sequence[tuple[float, Pace]], since: float) -> float:
    """The median slowdown of the readings taken at ``since`` or later (1 without any): how slow the lab was for most
    of a wait, not in its slowest second — what decides UNDECIDED (the most decides how long to wait)."""
    during = sorted(slowdown(p) for t, p in paces if t >= since)
    return during[len(during) // 2] if during else 1.0


def cycle(p: Pace | None) -> float:
    """Seconds between the starts of two of KAI's cycles by this reading (the period, plus the cycle's work)."""
    return SCHEDULE_PERIOD + (p.cycle if p is not None and p.cycle is not None else 0.0)


def limit(timeout: float, slow: float, pending: int, p: Pace | None) -> float:
    """Seconds a wait may take: its ``timeout`` times ``slow`` (how much slower than quiet the lab is), and a cycle of
    KAI's for each of the ``pending`` pods when KAI's cycle was read."""
    extra = pending * cycle(p) if p is not None and p.cycle is not None else 0.0
    return min(timeout * slow + extra, timeout * MOST)


def settle(p: Pace | None) -> float:
    """Seconds a wait waits on after what it waits for last changed."""
    return max(SETTLE, SETTLE_CYCLES * cycle(p)) if p is not None and p.cycle is not None else SETTLE


def drain(p: Pace | None) -> float:
    """Seconds to keep folding once the cluster's clock has passed a hold's end: the watches hand changes over a
    little after the API server answers the reading that showed that time — about two of its round trips."""
    return max(0.5, 2 * p.api) if p is not None and p.api is not None else 0.5


def clock_time(at: float) -> str:
    """The cluster's time ``at`` (seconds since the epoch) as a learner reads it: 10:04:12 UTC."""
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S UTC")


@dataclass
class Waited:
    """How a wait went: whether it held, how long it waited against its timeout and why, how busy the lab was."""

    reached: bool
    seconds: float  # kailab's clock: how long it waited
    timeout: float  # the step's
    slow: float = 1.0  # the most slowdown read while it waited
    pace: Pace | None = None  # that reading
    moved: float | None = None  # seconds before the end that what it waited for last changed (None: never)
    capped: bool = False  # it waited as long as a wait ever may
    usual: float = 1.0  # the median slowdown read while it waited

    @property
    def busy(self) -> bool:
        """It ran out while the lab was measurably slow for most of it, or while what it waited for was still
        changing when no wait may wait longer: the host was too busy to tell, not KAI that did something else."""
        if self.reached:
            return False
        still = self.moved is not None and self.moved < settle(self.pace)
        return self.usual >= BUSY or (self.capped and still)

    def late(self, held: float, bound: float) -> bool:
        """Could a slow lab explain a condition that first held ``held`` seconds in, past its ``within`` bound? It
        was slow for most of the wait, and no more than that many times the bound."""
        return self.usual >= BUSY and held <= bound * self.usual

    def why(self, seen: str) -> str:
        """The UNDECIDED reason: what was seen, with times."""
        grew = f", the step's {self.timeout:g}s × {self.slow:.1f}" if self.slow > 1 else ""
        pace = f"; {words(self.pace)}" if self.pace is not None else ""
        moved = f"; the last change {self.moved:.1f}s before the end" if self.moved is not None else "; nothing changed"
        return f"{BUSY_PREFIX} — waited {self.seconds:.0f}s{grew}{pace}; seen {seen}{moved}"


def window_end(w: Window, groups: Sequence[PodGroupView]) -> tuple[float, str] | None:
    """When the first of the workload's PodGroups leaves the window, by the cluster's timestamps, and how that was
    read ("pg-x started 10:00:01 + 15s"); None while no PodGroup shows the window's start."""
    ends = []
    for g in groups:
        start = window_start(w, g)
        if start is not None:
            ends.append((start[0] + w.seconds, f"{g.name} {start[1]} {clock_time(start[0])} + {w.seconds:g}s"))
    return min(ends) if ends else None


def window_start(w: Window, g: PodGroupView) -> tuple[float, str] | None:
    """Where KAI v0.17.0 starts a PodGroup's window, as the cluster shows it: the last start for a min-runtime
    (``pkg/scheduler/plugins/minruntime/minruntime.go``: LastStartTimestamp + min runtime), the creation or the last
    eviction, whichever is later, for a preemption delay (``pkg/scheduler/api/podgroup_info/job_info.go``,
    PreemptionDelayEnd), when it was marked stale for a staleness grace period
    (``pkg/scheduler/actions/stalegangeviction``)."""
    if w.kind in ("reclaimMinRuntime", "preemptMinRuntime"):
        at = api_time(g.annotations.get(LAST_START))
        return (at, "started") if at is not None else None
    if w.kind == "stalenessGracePeriod":
        at = api_time(g.annotations.get(STALE_SINCE))
        return (at, "was marked stale") if at is not None else None
    evicted = api_time(g.annotations.get(LAST_EVICTION))
    if evicted is not None and (g.created is None or evicted > g.created):
        return evicted, "last evicted"
    return (g.created, "was created") if g.created is not None else None


def too_late(end: float, began: float | None, how: str) -> str:
    """The UNDECIDED reason when the window ended (nearly) before the step it is about began; "" when the lab saw
    at least :data:`LEAST_SEEN` seconds of it. ``began``: the cluster's time of that step."""
    if began is None or end - began >= LEAST_SEEN:
        return ""
    return (
        f"{BUSY_PREFIX} — the window ended at {clock_time(end)} ({how}), and the step it is about came at "
        f"{clock_time(began)}: {'after it' if began >= end else f'only {end - began:.0f}s before'}, "
        "too late to see KAI keep it"
    )


def broke_inside(at: float | None, end: float) -> bool:
    """Did a change the cluster timed ``at`` come before ``end``, beyond doubt (whole seconds)? One within the
    last second may have come after it: it does not count."""
    return at is not None and at + RESOLUTION <= end


def passed(end: float, now: float | None) -> bool:
    """Has the cluster's clock (``now``, the latest time a change carried) come far enough for every change that
    :func:`broke_inside` would count to have been seen? (Its last second's do not count.)"""
    return now is not None and now >= end - RESOLUTION
