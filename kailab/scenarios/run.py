"""One scenario being played: the state folded from its changes, its clock, its waits and holds, its timeline.

The engine (``engine.py``) makes a :class:`Run` for each scenario and plays the steps on it; a :class:`Recorder` writes
the change stream beside it (``kailab demo --record``, the golden tests' recordings).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kailab import pace, predictions
from kailab.checks import Observation, Verdict
from kailab.errors import KailabError
from kailab.gpus import per_queue
from kailab.scenarios import timing
from kailab.scenarios.fold import Change, RunState, fold, observe
from kailab.scenarios.model import Scenario, Window

if TYPE_CHECKING:
    from kailab.scenarios.engine import Changes, Cluster

T = TypeVar("T")


@dataclasses.dataclass
class Held:
    """How a hold went: the observation where it broke (None: it held), the last one where it held, a failure of the
    window's own (its start never shown), why it is undecided, and the words for the row's observed text."""

    broke: Observation | None = None
    last: Observation | None = None
    failed: str = ""
    undecided: str = ""
    words: str = ""


class Run:
    """One scenario being played: its state (owned by the engine's thread), its changes, its verdict."""

    def __init__(self, cluster: Cluster, scenario: Scenario, verdict: Verdict, start: float, changes: Changes):
        self.cluster, self.scenario, self.verdict, self.changes = cluster, scenario, verdict, changes
        self.state = RunState()
        self.start = self.mark = start
        self.expects = 0  # expect steps decided so far
        self.step_no = 0  # steps that changed the cluster so far
        self.mark_at: float | None = None  # the cluster's time last seen when the last such step began
        self.wrote_at: float | None = None  # the cluster's time of the latest write of the step being played
        # What was made of the state, kept while the state's counters (fold.RunState) say what it reads is the same:
        self._observed: tuple[int, Observation] | None = None  # (state.version, the observation)
        self._sampled = -1  # state.held_version when the timeline's last point was worked out
        self._pending = (-1, 0)  # (state.pods_version, the pods pending then)
        self._paces: dict[Callable, tuple[tuple[int, float], Any]] = {}  # slowest/typical → ((readings, since), it)
        self.sample()

    def measure_predictions(self, obs) -> None:
        """An expect step was decided on ``obs``: measure the answers of the predictions made for it."""
        self.expects += 1
        for p in self.scenario.predictions:
            if p.at == self.expects and (answer := predictions.measure(p, obs)) is not None:
                self.verdict.answers[p.key] = answer.to_dict()

    def clock(self) -> float:
        return self.cluster.clock()

    def apply(self, obj: dict) -> None:
        self.wrote(self.cluster.apply(obj))
        self.verdict.applied.append(obj)

    def wrote(self, at: float | None) -> None:
        """A write of this step's, done at the cluster's time ``at`` (None: not known)."""
        if at is not None:
            self.wrote_at = max(self.wrote_at or at, at)

    def stepped(self) -> None:
        """A step changed the cluster: the next wait is timed from now — by kailab's clock, and by the cluster's
        (the time of the step's writes, put among the changes as a STEP mark so a recording keeps it)."""
        self.mark, self.mark_at, self.step_no = self.clock(), self.state.server_now, self.step_no + 1
        self.changes.note(Change("STEP", step=self.step_no, at=self.wrote_at, t=self.mark))
        self.wrote_at = None

    def step_at(self) -> float | None:
        """The cluster's time of the last step that changed it: its writes' (as the STEP mark says), else the
        latest time seen when it began; None when no change carried a time (a stream recorded before kailab kept
        them)."""
        if self.step_no and self.step_no not in self.state.steps:
            self.take(0)  # its STEP mark is queued (or, in a recording, due): fold it, and what came before it
        said = self.state.steps.get(self.step_no)
        known = [t for t in (said, self.mark_at) if t is not None]
        return max(known) if known else None

    def resized(self, workload: str, pods: int | None) -> None:
        """A step changed what a workload asks for (None: it is gone). When it asks for fewer, the pods that go
        are the lab's doing, not evictions."""
        before = self.state.sizes.get(workload)
        if pods is None or (before is not None and pods < before):
            self.state.released.add(workload)
        if pods is None:
            self.state.sizes.pop(workload, None)
        else:
            self.state.sizes[workload] = pods
        self.state.version += 1  # the sizes are observed
        self.stepped()

    def take(self, timeout: float) -> bool:
        """Fold the next change (waiting up to ``timeout``) and every one already here; False if none came."""
        change = self.changes.next(timeout)
        if change is None:
            return False
        while change is not None:
            fold(self.state, change)
            change = self.changes.next(0)
        self.sample()
        return True

    def observe(self) -> Observation:
        """What the checks decide on now (fold.observe), made again only when the state changed since the last
        time: the same object until then, which no one changes."""
        if self._observed is None or self._observed[0] != self.state.version:
            self._observed = (self.state.version, observe(self.state))
        return self._observed[1]

    def slowest(self, since: float) -> tuple[float, pace.Pace | None]:
        return self._of_paces(timing.slowest, since)

    def typical(self, since: float) -> float:
        return self._of_paces(timing.typical, since)

    def _of_paces(self, how: Callable[[list[tuple[float, pace.Pace]], float], T], since: float) -> T:
        """``how(paces, since)``, worked out again only when a reading came or ``since`` moved."""
        key = (len(self.state.paces), since)
        kept = self._paces.get(how)
        if kept is None or kept[0] != key:
            kept = self._paces[how] = (key, how(self.state.paces, since))
        return kept[1]

    def pending(self) -> int:
        """The pods no node was given."""
        if self._pending[0] != self.state.pods_version:
            pending = sum(1 for p in self.state.pods.values() if not p.node and not p.deleting)
            self._pending = (self.state.pods_version, pending)
        return self._pending[1]

    def until(self, predicate, timeout: float, signature) -> timing.Waited:
        """Fold changes until ``predicate(observation)`` holds, within a limit that grows with how busy the lab is
        and while ``signature(observation)`` (what is awaited) keeps changing (timing.limit, timing.settle)."""
        begin = self.clock()
        last, moved = None, None
        while True:
            obs = self.observe()
            now = self.clock()
            slow, reading = self.slowest(begin)
            usual = self.typical(begin)
            if predicate(obs):
                return timing.Waited(True, now - begin, timeout, slow, reading, usual=usual)
            sig = signature(obs)
            if last is not None and sig != last:
                moved = now
            last = sig
            deadline = begin + timing.limit(timeout, slow, self.pending(), reading)
            if moved is not None:
                deadline = max(deadline, moved + timing.settle(reading))
            most = begin + timeout * pace.MOST
            left = min(deadline, most) - now
            if left <= 0:
                moved_ago = None if moved is None else now - moved
                return timing.Waited(False, now - begin, timeout, slow, reading, moved_ago, deadline >= most, usual)
            self.take(left)

    def hold(self, predicate, seconds: float, windows: list[Window], timeout: float) -> Held:
        """Keep folding changes while ``predicate`` holds: until the end of the first of ``windows`` to end, or for
        ``seconds`` (and at least three of KAI's cycles) from when it first held — both by the cluster's clock: a
        change breaks the hold only if the cluster timed it before that end. Undecided when a window ended before
        the step it is about, or the cluster's clock could not be seen to pass the end. A recording without the
        cluster's times holds ``seconds`` by kailab's clock, as kailab did before it kept them."""
        begin = self.clock()
        began = self.step_at()
        # When it first held, by the cluster's clock: the change that made it hold, or the step if it held before.
        known = [t for t in (self.state.seen_at, began) if t is not None]
        first = max(known) if known else self.state.server_now
        if first is None and not windows:
            return self._hold_by_kailab(predicate, seconds)
        last = self.observe()
        checked = False  # a window's end checked against the step's time
        drained: float | None = None  # kailab's clock: when the changes in flight at the end are in

        def end_of(obs) -> tuple[float, str] | None:
            if windows:
                return self.window_end(windows, obs)
            if first is None:
                return None
            length = max(seconds, timing.LEAST_CYCLES * timing.cycle(self.slowest(begin)[1]))
            return first + length, f"it held from {timing.clock_time(first)}, for {length:.0f}s"

        while True:
            end = end_of(last)
            if end is not None:
                if windows and not checked:
                    checked = True
                    if why := timing.too_late(end[0], began, end[1]):
                        return Held(last=last, undecided=why)
                if timing.passed(end[0], self.state.server_now):
                    if drained is None:  # changes the watches have yet to hand over: a moment to come in
                        drained = self.clock() + timing.drain(self.slowest(begin)[1])
                    elif self.clock() >= drained:
                        return Held(last=last)
            slow = self.slowest(begin)[0]
            length = max(w.seconds for w in windows) if windows else seconds
            left = begin + min((length + timeout) * max(slow, 2.0), (length + timeout) * pace.MOST) - self.clock()
            if left <= 0:
                return self._unended(windows, end, self.typical(begin), last)
            if drained is not None:
                left = min(left, max(drained - self.clock(), 0.0))
            change = self.changes.next(left)
            if change is None:
                continue
            fold(self.state, change)
            self.sample()
            if change.pace is not None or change.step is not None:
                continue
            obs = self.observe()
            if predicate(obs):
                last = obs
                continue
            at = change.at if change.at is not None else self.state.server_now
            end = end_of(obs) or end
            if end is not None and at is not None and not timing.broke_inside(at, end[0]):
                return Held(last=last)  # it was over when this came: it held through it
            when = f"at {timing.clock_time(at)}" if at is not None else "at a time the cluster did not give"
            if end is None or at is None:
                inside = f"{when}, before KAI showed the window's start" if windows else when
            elif windows:
                inside = f"{when}, {end[0] - at:.0f}s before the window ended at {timing.clock_time(end[0])}: {end[1]}"
            else:
                inside = f"{when}, {at - (first or at):.0f}s after it first held, by the cluster's clock"
            return Held(broke=obs, words=f"changed {inside}")

    def sleep(self, seconds: float) -> None:
        """Fold changes for ``seconds`` of kailab's clock (a ``sleep:`` step: the cluster goes on meanwhile)."""
        self._hold_by_kailab(lambda obs: True, seconds)

    def _hold_by_kailab(self, predicate, seconds: float) -> Held:
        """Fold changes for ``seconds`` of kailab's clock; how it broke (the first observation where ``predicate``
        fails), if it did."""
        deadline = self.clock() + seconds
        last = self.observe()
        while (left := deadline - self.clock()) > 0:
            if not self.take(left):
                break
            obs = self.observe()
            if not predicate(obs):
                return Held(broke=obs, words=f"changed within {seconds:.0f}s")
            last = obs
        return Held(last=last)

    def window_end(self, windows: list[Window], obs) -> tuple[float, str] | None:
        """The first end among ``windows``, by the cluster's timestamps on the PodGroups; None while unknown."""
        ends = [e for w in windows if (e := timing.window_end(w, obs.groups.get(w.workload, []))) is not None]
        return min(ends) if ends else None

    def _unended(self, windows: list[Window], end, usual: float, last) -> Held:
        names = ", ".join(map(str, windows)) or "the hold"
        if end is None and windows:
            words = f"no PodGroup showed the start of {names}"
            if usual >= pace.BUSY:
                return Held(last=last, undecided=f"{timing.BUSY_PREFIX} — {words} in {self.clock() - self.mark:.0f}s")
            return Held(last=last, failed=f"KAI showed no start of {names}", words=words)
        seen = self.state.server_now
        latest = f"the cluster's latest time seen was {timing.clock_time(seen)}" if seen else "no time came from it"
        ends = f" ended at {timing.clock_time(end[0])}" if end is not None else " ended"
        return Held(last=last, undecided=f"{timing.BUSY_PREFIX} — {latest}, before {names}{ends}")

    def sample(self, final: bool = False) -> None:
        """Add a timeline point (GPUs per queue) when the allocation changed, and at the end."""
        timeline = self.verdict.timeline
        if self._sampled == self.state.held_version and timeline and not final:
            return  # what pods hold per queue is as it was when the last point was worked out: it is the timeline's last
        point = per_queue(self.state.pods.values())
        self._sampled = self.state.held_version
        if final or not timeline or timeline[-1][1] != point:
            timeline.append([round(self.clock() - self.start, 2), point])


class Recorder:
    """Passes changes through and writes each one, with its time since ``start``, as a line of JSON: into a file
    beside ``path`` that becomes it when the run ends (:meth:`close`), complete. What is at ``path`` is replaced only
    when it is a recording too (kailab's; the golden files are refreshed this way)."""

    def __init__(self, changes: Changes, path: Path, start: float):
        from kailab import outfile, userfile

        self.changes, self.start, self.path = changes, start, path
        if os.path.lexists(path):
            try:
                outfile.check_own(path, None, None)  # a regular file, not a link or a FIFO
                for line in userfile.read_text(path, limit=64 * 1024 * 1024).splitlines():
                    if line.strip():
                        Change.from_json(json.loads(line))
            except (KailabError, ValueError, KeyError, TypeError):
                raise outfile.WriteRefused(
                    f"kailab will not record into {path}: it is there and is not a recording kailab made.",
                    hint="Record into a new folder: --record DIR",
                ) from None
        outfile.check_folder(path.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = tempfile.NamedTemporaryFile(
            "w", dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False, encoding="utf-8"
        )

    def next(self, timeout: float) -> Change | None:
        change = self.changes.next(timeout)
        if change is not None:
            rel = dataclasses.replace(change, t=change.t - self.start)
            self.file.write(json.dumps(rel.to_json(), ensure_ascii=False) + "\n")
        return change

    def note(self, change: Change) -> None:
        self.changes.note(change)

    def close(self) -> None:
        self.file.close()
        os.replace(self.file.name, self.path)  # the whole recording, or the one that was there
        self.changes.close()
