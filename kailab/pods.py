"""What kailab reads from pods and events — one shape each, one place that reads the API objects.

:func:`pod_view`, :func:`event_view`, :func:`node_view` and :func:`podgroup_view` read the objects as the API
gives them (its JSON, as dicts: a watch's changes are read that way, several times cheaper than the client's
typed objects, and a lesson sees thousands); the checks, the engine, status, watch, explain and evidence work on
:class:`PodView`, :class:`EventView` and :class:`PodGroupView`, which are plain data and serialize to JSON (golden
change streams are files of them). ``kailab bench`` reads its own pods' timestamps itself.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import lru_cache

from kailab import gpus, kai_strings
from kailab.labels import (
    DEFAULT_SCHEDULER_NAME,
    GPU,
    GPU_GROUP_LABEL,
    NODEPOOL_LABEL,
    OLD_QUEUE_LABEL,
    POD_GROUP_ANNOTATION,
    QUEUE_LABEL,
    SUBGROUP_LABEL,
    WORKLOAD_LABEL,
)

# Events that report a pod losing its place: KAI on the victim's PodGroup, kube-scheduler on the pod.
EVICTION_REASONS = {kai_strings.get("event.evict"), "Evicted", "Preempted", "Preempting", "Killing"}
EVICTION_WORDS = ("preempted", "evict", "reclaim")
VICTIM = re.compile(
    r"Pod ([\w.-]+)/([\w.-]+) was (?:preempted|evicted|reclaimed)"
    # a stale gang's (pkg/scheduler/api/unschedule_info.go, getGangEvictionForDefaultSubgroupMessage)
    r"|evicting remaining pod: ([\w.-]+)/([\w.-]+)"
)
# Events in which a scheduler says why something waits.
# FailedCreate: the Job controller on its Job, when the API server refuses its pods (a misspelt priority class).
# BindingError: KAI's binder on a pod it could not bind (pkg/binder/controllers/bindrequest_controller.go).
WAITING_REASONS = {
    "Unschedulable",
    "FailedScheduling",
    kai_strings.get("event.not-ready"),
    kai_strings.get("event.failed-binding"),
    kai_strings.get("reason.binding-error"),
    kai_strings.get("event.stale-job"),
    kai_strings.get("event.podgrouper-warning"),
    "FailedCreate",
}
# Events a lesson never reads: neither a victim nor a reason for waiting (a pod placed, bound, made). The API server
# leaves them out of a lesson's watch (a field selector); they were 2,485 of the 17,072 changes the golden recordings
# hold, each read and decoded for nothing. Who says them: KAI's scheduler "Scheduled"
# (pkg/scheduler/cache/status_updater/default_status_updater.go), its binder "Bound"
# (pkg/binder/controllers/bindrequest_controller.go), a Job's or a ReplicaSet's controller "SuccessfulCreate".
UNREAD_EVENT_REASONS = ("Scheduled", "Bound", "SuccessfulCreate")
UNREAD_EVENTS = ",".join(f"reason!={r}" for r in UNREAD_EVENT_REASONS)  # the field selector


@dataclass(frozen=True)
class PodView:
    """What kailab needs to know about one pod."""

    name: str
    workload: str = ""
    queue: str = ""  # the kai.scheduler/queue label; "" when it has none
    phase: str = "Pending"
    node: str = ""
    gpus: float = 0  # whole GPUs, or the fraction of one it asked for (gpu-fraction)
    deleting: bool = False
    bound_at: float | None = None
    unschedulable: bool = False
    namespace: str = ""
    scheduler: str = DEFAULT_SCHEDULER_NAME
    pod_group: str = ""  # KAI's pod-group-name annotation
    waiting: str = ""  # the PodScheduled=False message: why a scheduler says it waits
    subgroup: str = ""  # KAI's kai.scheduler/subgroup-name label
    gpu_group: str = ""  # the GPU a fraction pod shares (the binder's runai-gpu-group label)
    node_pool: str = ""  # KAI's kai.scheduler/node-pool label: which KAI scheduler (shard) sees it
    old_queue: str = ""  # the runai/queue label, which KAI v0.17.0 does not read
    gates: tuple[str, ...] = ()  # spec.schedulingGates: no scheduler places it while any is left
    priority_class: str = ""  # spec.priorityClassName

    @property
    def holds_gpus(self) -> bool:
        """Bound and not finished: its GPUs are taken (also while it is being deleted); see :mod:`kailab.gpus`."""
        return gpus.holds(self)

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in ("", None, False, 0, ()) or k == "name"}


@dataclass(frozen=True)
class EventView:
    """One event: about which object, why, in whose words, when (seconds since the epoch)."""

    kind: str
    name: str
    reason: str = ""
    message: str = ""
    time: float = 0.0
    namespace: str = ""

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in ("", None, 0.0)}

    @property
    def victim(self) -> str | None:
        """The pod this event reports evicted or preempted, or None.

        KAI reports it on the victim's PodGroup: "Pod <ns>/<pod> was preempted by ...", "… evicting remaining
        pod: <ns>/<pod>" (a stale gang);
        kube-scheduler and the kubelet on the pod itself (reason Preempted, Killing …).
        """
        if self.reason not in EVICTION_REASONS:
            return None
        m = VICTIM.search(self.message)
        if m:
            return m.group(2) or m.group(4)
        if self.kind == "Pod" and any(w in self.message.lower() for w in EVICTION_WORDS):
            return self.name
        return None

    @property
    def says_why_waiting(self) -> bool:
        return self.reason in WAITING_REASONS and bool(self.message)


def api_time(text: str | None) -> float | None:
    """Seconds since the epoch of an API timestamp (RFC 3339: ``2026-11-24T10:00:00Z``); None for none."""
    if not text:
        return None
    return _seconds(text if isinstance(text, str) else str(text))


@lru_cache(maxsize=4096)
def _seconds(text: str) -> float | None:
    """(A pod's changes carry the same few timestamps again and again: each is parsed once.)"""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def object_time(obj: dict) -> float | None:
    """The cluster's time of this version of an object (seconds since the epoch, whole seconds as the API writes
    them): its newest write (``managedFields``), its creation, its deletion (a graceful deletion's timestamp is when
    the grace ends: less its grace period), a condition's transition, a pod's start; None if it has none of them.

    Changes carry it into the scenario engine (scenarios/fold.py), which times what KAI did by it, never by its own
    clock."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    times = [api_time(meta.get("creationTimestamp")), api_time(status.get("startTime"))]
    times += [api_time(m.get("time")) for m in meta.get("managedFields") or () if isinstance(m, dict)]
    times += [api_time(c.get("lastTransitionTime")) for c in status.get("conditions") or () if isinstance(c, dict)]
    deleted = api_time(meta.get("deletionTimestamp"))
    if deleted is not None:
        times.append(deleted - float(meta.get("deletionGracePeriodSeconds") or 0))
    known = [t for t in times if t is not None]
    return max(known) if known else None


def container_resources(spec: dict) -> list[tuple[dict | None, dict | None]]:
    """(limits, requests) of each of a pod spec's containers (the API's JSON)."""
    out = []
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        out.append((res.get("limits"), res.get("requests")))
    return out


def pod_gpus(pod: dict) -> float:
    """GPUs a pod (the API's JSON) asks for: whole GPUs in its containers, or KAI's gpu-fraction annotation."""
    whole = gpus.whole_asked(container_resources(pod.get("spec") or {}))
    return gpus.asked(whole, gpus.fraction_asked((pod.get("metadata") or {}).get("annotations")))


def pod_view(pod: dict) -> PodView:
    """A pod as the API gives it → PodView."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    labels = meta.get("labels") or {}
    bound_at, unschedulable, waiting = None, False, ""
    for cond in status.get("conditions") or []:
        if cond.get("type") != "PodScheduled":
            continue
        if cond.get("status") == "True" and cond.get("lastTransitionTime"):
            bound_at = api_time(cond["lastTransitionTime"])
        elif cond.get("status") == "False":
            unschedulable = cond.get("reason") == "Unschedulable"
            waiting = cond.get("message") or ""
    if spec.get("nodeName") and bound_at is None:
        bound_at = api_time(meta.get("creationTimestamp")) or time.time()
    return PodView(
        name=meta.get("name") or "",
        workload=labels.get(WORKLOAD_LABEL, ""),
        queue=labels.get(QUEUE_LABEL, ""),
        phase=status.get("phase") or "Pending",
        node=spec.get("nodeName") or "",
        gpus=pod_gpus(pod),
        deleting=meta.get("deletionTimestamp") is not None,
        bound_at=bound_at,
        unschedulable=unschedulable,
        namespace=meta.get("namespace") or "",
        scheduler=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
        pod_group=(meta.get("annotations") or {}).get(POD_GROUP_ANNOTATION, ""),
        waiting=waiting,
        subgroup=labels.get(SUBGROUP_LABEL, ""),
        gpu_group=labels.get(GPU_GROUP_LABEL, ""),
        node_pool=labels.get(NODEPOOL_LABEL, ""),
        old_queue=labels.get(OLD_QUEUE_LABEL, ""),
        gates=tuple(g.get("name", "") for g in spec.get("schedulingGates") or ()),
        priority_class=spec.get("priorityClassName") or "",
    )


ANNOTATION_KEPT = 200  # a PodGroup annotation's value longer than this (an owner's JSON) is not kept


@dataclass(frozen=True)
class PodGroupView:
    """A KAI PodGroup: its scalar fields by path (``spec.preemptibility``) and its scheduling conditions."""

    name: str
    workload: str = ""  # kailab's workload label, when the PodGroup carries it (hand-made ones do)
    fields: dict = field(default_factory=dict)
    conditions: tuple[str, ...] = ()  # status.schedulingConditions types
    reasons: tuple[tuple[str, str], ...] = ()  # (reason, message) KAI gives in status.schedulingConditions
    annotations: dict = field(default_factory=dict)  # metadata.annotations (KAI's stale and eviction timestamps …)
    created: float | None = None  # metadata.creationTimestamp, seconds since the epoch (KAI's preemption delay's start)

    def to_json(self) -> dict:
        out: dict = {
            "name": self.name,
            "workload": self.workload,
            "fields": self.fields,
            "conditions": list(self.conditions),
        }
        if self.reasons:
            out["reasons"] = [list(r) for r in self.reasons]
        if self.annotations:
            out["annotations"] = self.annotations
        if self.created is not None:
            out["created"] = self.created
        return out

    @classmethod
    def from_json(cls, d: dict) -> PodGroupView:
        return cls(
            d["name"],
            d.get("workload", ""),
            dict(d.get("fields") or {}),
            tuple(d.get("conditions") or ()),
            tuple((r[0], r[1]) for r in d.get("reasons") or ()),
            dict(d.get("annotations") or {}),
            d.get("created"),
        )


def podgroup_view(obj: dict) -> PodGroupView:
    """A PodGroup as the API returns it (a dict) → PodGroupView."""
    meta = obj.get("metadata") or {}
    fields: dict = {}

    def flatten(prefix: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                flatten(f"{prefix}.{k}", v)
        elif not isinstance(value, list):
            fields[prefix] = value

    flatten("spec", obj.get("spec") or {})
    status = obj.get("status") or {}
    scheduling = status.get("schedulingConditions") or []
    conditions = tuple(sorted({c.get("type", "") for c in scheduling}))
    reasons: dict[tuple[str, str], None] = {}  # in order, once each
    for c in scheduling:
        for r in c.get("reasons") or []:
            reasons[(r.get("reason") or "", " ".join((r.get("message") or "").split()))] = None
        if c.get("reason"):
            reasons[(c["reason"], " ".join((c.get("message") or "").split()))] = None
    return PodGroupView(
        meta.get("name", ""),
        (meta.get("labels") or {}).get(WORKLOAD_LABEL, ""),
        fields,
        conditions,
        tuple(reasons),
        {k: v for k, v in (meta.get("annotations") or {}).items() if len(str(v)) <= ANNOTATION_KEPT},
        api_time(meta.get("creationTimestamp")),
    )


@dataclass(frozen=True)
class QueueView:
    """A KAI Queue object as a scenario sees it: its name and the GPUs its status says are allocated."""

    name: str
    allocated: float = 0.0  # status.allocated's nvidia.com/gpu, as KAI's queue controller last wrote it

    def to_json(self) -> dict:
        return {"name": self.name, "allocated": self.allocated}

    @classmethod
    def from_json(cls, d: dict) -> QueueView:
        return cls(d["name"], float(d.get("allocated") or 0.0))


def queue_view(obj: dict) -> QueueView:
    allocated = str(((obj.get("status") or {}).get("allocated") or {}).get(GPU, 0))  # "3", or "1500m" with fractions
    gpus_allocated = float(allocated[:-1]) / 1000 if allocated.endswith("m") else float(allocated)
    return QueueView((obj.get("metadata") or {}).get("name", ""), gpus_allocated)


def event_view(ev: dict) -> EventView:
    """An event as the API gives it → EventView (when: its last time, else its event time, first time, creation)."""
    ref = ev.get("involvedObject") or {}
    meta = ev.get("metadata") or {}
    when = 0.0
    for t in (ev.get("lastTimestamp"), ev.get("eventTime"), ev.get("firstTimestamp"), meta.get("creationTimestamp")):
        seconds = api_time(t)
        if seconds is not None:
            when = seconds
            break
    return EventView(
        kind=ref.get("kind") or "",
        name=ref.get("name") or "",
        reason=ev.get("reason") or "",
        message=" ".join((ev.get("message") or "").split()),
        time=when,
        namespace=meta.get("namespace") or "",
    )


@dataclass(frozen=True)
class NodeView:
    """One node of the fleet, with the labels a scenario's conditions ask about (a rack, a zone)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, **({"labels": dict(self.labels)} if self.labels else {})}


def node_view(node: dict, keys: tuple[str, ...]) -> NodeView:
    """A node as the API gives it → its name and the values of the label ``keys`` it has."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    return NodeView(meta.get("name") or "", {k: labels[k] for k in keys if k in labels})
