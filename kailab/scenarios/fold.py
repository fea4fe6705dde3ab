"""The pure core of a scenario run: fold each change the cluster reports into a RunState, observe it.

No I/O and no clock: ``fold(state, change)`` takes one change (of a pod, an event, a PodGroup, a Queue, or a
queue's fair share; a reading of how busy the lab is; a step the engine took) and returns the state;
``observe(state)`` gives the :class:`~kailab.checks.Observation` the checks decide on. The engine feeds it live
changes; the golden tests feed it recorded ones.

Time comes in with the changes: ``t`` is when kailab received one (its own clock, for how long it waits), ``at`` the
cluster's time of what it reports (the API server's timestamps: :func:`kailab.pods.object_time`, an event's time, the
Date of an answer). What KAI measures — a protection window, a preemption delay — is timed by ``at`` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from kailab.checks import Observation
from kailab.fairshare import FairShare
from kailab.gpus import queue_share
from kailab.pace import Pace
from kailab.pods import EventView, NodeView, PodGroupView, PodView, QueueView

T = TypeVar("T")


@dataclass(frozen=True)
class Change:
    """One change the cluster reported, ``t`` seconds in: a pod, an event, a PodGroup or a Queue ADDED, MODIFIED or DELETED,
    or a queue's fair share as the scheduler published it; a reading of the lab's pace (type PACE); the engine's
    mark that step number ``step`` changed the cluster (type STEP). ``at``: the cluster's time of it (seconds since
    the epoch), None where unknown (streams recorded before kailab kept it)."""

    type: str
    pod: PodView | None = None
    event: EventView | None = None
    group: PodGroupView | None = None
    share: FairShare | None = None  # a queue's fair share, as the scheduler last published it
    node: NodeView | None = None  # a node of the fleet and the labels the conditions ask about
    queue: QueueView | None = None  # one of the scenario's KAI Queue objects
    t: float = 0.0
    at: float | None = None  # the cluster's time of it
    pace: Pace | None = None  # how fast the lab answered (type PACE)
    step: int | None = None  # the number of the step that changed the cluster (type STEP)

    def to_json(self) -> dict:
        when = {"t": round(self.t, 3), "type": self.type, **({} if self.at is None else {"at": self.at})}
        if self.pace is not None:
            return {**when, "pace": self.pace.to_json()}
        if self.step is not None:
            return {**when, "step": self.step}
        if self.pod:
            body = {"pod": self.pod.to_json()}
        elif self.group:
            body = {"podGroup": self.group.to_json()}
        elif self.share:
            body = {"fairShare": asdict(self.share)}
        elif self.node:
            body = {"node": self.node.to_json()}
        elif self.queue:
            body = {"queue": self.queue.to_json()}
        else:
            body = {"event": self.event.to_json() if self.event else {}}
        return {**when, **body}

    @classmethod
    def from_json(cls, d: dict) -> Change:
        at = None if d.get("at") is None else float(d["at"])
        if "pace" in d:
            return cls(d["type"], pace=Pace.from_json(d["pace"]), t=float(d.get("t", 0.0)), at=at)
        if "step" in d:
            return cls(d["type"], step=int(d["step"]), t=float(d.get("t", 0.0)), at=at)
        body = {name: read(d[key]) for name, key, read in _BODIES if key in d}
        if not body:
            raise KeyError("a change holds a pod, an event, a podGroup, a fairShare, a queue or a node")
        return cls(d["type"], **body, t=float(d.get("t", 0.0)), at=at)


# What a change's body may be: its field, its key in a change's JSON, and how that JSON is read back.
_BODIES: tuple[tuple[str, str, Callable[[dict], Any]], ...] = (
    ("pod", "pod", lambda j: PodView(**j)),
    ("event", "event", lambda j: EventView(**j)),
    ("group", "podGroup", PodGroupView.from_json),
    ("share", "fairShare", lambda j: FairShare(**j)),
    ("queue", "queue", QueueView.from_json),
    ("node", "node", lambda j: NodeView(**j)),
)


@dataclass
class RunState:
    """Everything a scenario run has seen: live pods and PodGroups, each pod's workload and queue, evictions,
    the scheduler's reasons for waiting, fair shares."""

    pods: dict[str, PodView] = field(default_factory=dict)  # live pods by name
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)  # every pod ever seen → (workload, queue)
    pod_groups: dict[str, str] = field(default_factory=dict)  # PodGroup name → workload (of its pods)
    # PodGroup name → the workload its own label names (a hand-made one's: pods of other workloads may join it)
    group_workloads: dict[str, str] = field(default_factory=dict)
    evicted: set[str] = field(default_factory=set)  # pods evicted or preempted (an event said so, or see fold)
    released: set[str] = field(
        default_factory=set
    )  # workloads the lab deleted or scaled down: their pods go by its hand
    removed: set[str] = field(default_factory=set)  # pods the lab deleted itself (a deletePods step)
    waiting: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (kind, name) → {message: time}
    sizes: dict[str, int] = field(default_factory=dict)  # workload → pods it asks for (set by the engine's steps)
    groups: dict[str, PodGroupView] = field(default_factory=dict)  # live PodGroups by name
    shares: dict[str, FairShare] = field(default_factory=dict)  # queue → its fair share
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # node → labels the conditions ask about
    queues: dict[str, QueueView] = field(default_factory=dict)  # the scenario's Queue objects that exist, by name
    # Time, as the cluster tells it (seconds since the epoch; None until a change says):
    server_now: float | None = None  # the latest time any change carried (a pace reading's Date included)
    seen_at: float | None = None  # the latest time of a change to an object (when what is observed became so)
    steps: dict[int, float | None] = field(default_factory=dict)  # step number → the cluster's time it happened
    paces: list[tuple[float, Pace]] = field(default_factory=list)  # (t, reading): how fast the lab answered
    # Counters that grow when what observe shows may have changed (``version``: fold's changes to what it reads, and
    # the engine's to ``sizes``), when ``pods`` changed, when what they hold per queue did (gpus.queue_share), and
    # when ``waiting`` or whose it is (``seen``, ``pod_groups``, ``group_workloads``) changed: a reader may keep what
    # it made of the state while its counter stays. Hence only fold changes the state, but for the engine's ``sizes``
    # (it bumps ``version``), ``released`` and ``removed``.
    version: int = field(default=0, compare=False)
    pods_version: int = field(default=0, compare=False)
    held_version: int = field(default=0, compare=False)
    reasons_version: int = field(default=0, compare=False)
    kept: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)  # see _kept


def fold(state: RunState, change: Change) -> RunState:
    """Take one change into the state (in place: the state has one owner) and return it. Its counters grow only
    when what they count changed: a change that repeats what the state holds leaves them as they were."""
    if change.at is not None:
        state.server_now = max(state.server_now or change.at, change.at)
        if change.pace is None and change.step is None:
            state.seen_at = max(state.seen_at or change.at, change.at)
    if change.pace is not None:
        state.paces.append((change.t, change.pace))
    elif change.step is not None:
        state.steps[change.step] = change.at
    elif change.pod is not None:
        _fold_pod(state, change.type, change.pod)
    elif change.share is not None:
        state.version += state.shares.get(change.share.queue) != change.share
        state.shares[change.share.queue] = change.share
    elif change.node is not None:
        labels = dict(change.node.labels)
        state.version += state.node_labels.get(change.node.name) != labels
        state.node_labels[change.node.name] = labels
    elif change.queue is not None:
        state.version += 1
        if change.type == "DELETED":
            state.queues.pop(change.queue.name, None)
        else:
            state.queues[change.queue.name] = change.queue
    elif change.group is not None:
        _fold_group(state, change.type, change.group)
    elif change.event is not None and change.type != "DELETED":  # an expired event still happened
        ev = change.event
        victim = ev.victim
        if victim:
            _evict(state, victim)
        elif ev.says_why_waiting and ev.kind in ("Pod", "PodGroup", "Job"):
            said = state.waiting.setdefault((ev.kind, ev.name), {})
            latest = max(said.get(ev.message, 0.0), ev.time)
            if said.get(ev.message) != latest:
                said[ev.message] = latest
                _whose_changed(state)
    return state


def _fold_pod(state: RunState, kind: str, pod: PodView) -> None:
    if pod.name not in state.seen:
        state.seen[pod.name] = (pod.workload, pod.queue)
        _whose_changed(state)
    if pod.pod_group and state.pod_groups.get(pod.pod_group) != pod.workload:
        state.pod_groups[pod.pod_group] = pod.workload
        _whose_changed(state)
    before = state.pods.get(pod.name)
    after = None if kind == "DELETED" else pod
    if before != after:
        if after is None:
            del state.pods[pod.name]
        else:
            state.pods[pod.name] = after
        state.pods_version += 1
        state.version += 1
        state.held_version += (before and queue_share(before)) != (after and queue_share(after))
    if pod.deleting and pod.node and pod.workload not in state.released and pod.name not in state.removed:
        # A bound pod being deleted, not by the lab: the scheduler took it. Its Evict event says so too, but
        # events are lossy: client-go drops an object's events past 25 in a burst (KAI reports evictions
        # on the victim's PodGroup, which a fast scheduler also fills with Unschedulable reports).
        _evict(state, pod.name)


def _fold_group(state: RunState, kind: str, group: PodGroupView) -> None:
    if group.workload and state.group_workloads.get(group.name) != group.workload:
        state.group_workloads[group.name] = group.workload
        _whose_changed(state)
    if kind == "DELETED":
        state.version += state.groups.pop(group.name, None) is not None
    elif state.groups.get(group.name) != group:
        state.groups[group.name] = group
        state.version += 1


def _whose_changed(state: RunState) -> None:
    """The reasons waited for, or the workloads they are of, changed."""
    state.version += 1
    state.reasons_version += 1


def _evict(state: RunState, pod: str) -> None:
    if pod not in state.evicted:
        state.evicted.add(pod)
        state.version += 1


def observe(state: RunState) -> Observation:
    """The snapshot the checks decide on: made of fresh containers (what it is made from is kept on the state, by
    :func:`_kept`, while the counters say it is unchanged)."""
    first_bound, pods_say = _kept(state, "pods", state.pods_version, _from_pods)
    evicted, evicted_queue = _kept(state, "evicted", (len(state.evicted), len(state.seen)), _evictions)
    reasons = {workload: list(said) for workload, said in pods_say.items()}
    for workload, said in _kept(state, "said", (state.reasons_version, tuple(state.sizes.items())), _said).items():
        reasons.setdefault(workload, []).extend(said)
    obs = Observation(
        pods=list(state.pods.values()),
        sizes=dict(state.sizes),
        fair_share={q: s.gpu for q, s in state.shares.items()},
        node_labels=state.node_labels,
        queues=dict(state.queues),
        first_bound=dict(first_bound),
        reasons=reasons,
        evicted={workload: set(names) for workload, names in evicted.items()},
        evicted_queue={queue: set(names) for queue, names in evicted_queue.items()},
    )
    for name, group in sorted(state.groups.items()):
        workload = group.workload or state.pod_groups.get(name, "")
        if workload:
            obs.groups.setdefault(workload, []).append(group)
    return obs


def _kept(state: RunState, part: str, key, make: Callable[[RunState], T]) -> T:
    """``make(state)``, kept on the state under ``part`` and made again only when ``key`` (the counters or sizes it
    reads) changed."""
    kept = state.kept.get(part)
    if kept is None or kept[0] != key:
        kept = state.kept[part] = (key, make(state))
    return kept[1]


def _from_pods(state: RunState) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Each workload's first pod's binding time, and what its pods' own status says of why they wait."""
    first_bound: dict[str, float] = {}
    said: dict[str, list[str]] = {}
    for p in state.pods.values():
        if p.bound_at is not None:
            first = first_bound.get(p.workload)
            first_bound[p.workload] = p.bound_at if first is None else min(first, p.bound_at)
        if p.waiting:
            said.setdefault(p.workload, []).append(p.waiting)
    return first_bound, said


def _evictions(state: RunState) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The pods evicted, by workload and by queue."""
    by_workload: dict[str, set[str]] = {}
    by_queue: dict[str, set[str]] = {}
    for name in sorted(state.evicted):
        workload, queue = state.seen.get(name, ("", ""))
        by_workload.setdefault(workload, set()).add(name)
        if queue:
            by_queue.setdefault(queue, set()).add(name)
    return by_workload, by_queue


def _said(state: RunState) -> dict[str, list[str]]:
    """What the events said of why each workload waits, in the order of their times."""
    said: list[tuple[float, str, str]] = []  # (time, workload, message)
    for (kind, name), messages in state.waiting.items():
        if kind == "Job":  # a Job is named for its workload (<name>-<i> with jobs:)
            workload = next((w for w in (name, name.rpartition("-")[0]) if w in state.sizes), "")
        else:
            workload = (
                state.seen.get(name, ("", ""))[0]
                if kind == "Pod"
                else state.group_workloads.get(name) or state.pod_groups.get(name, "")
            )
        if workload:
            said.extend((t, workload, m) for m, t in messages.items())
    by_workload: dict[str, list[str]] = {}
    for _, workload, message in sorted(said):
        by_workload.setdefault(workload, []).append(message)
    return by_workload
