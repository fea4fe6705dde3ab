"""Settings of KAI's scheduler that a scenario may change, and the lab's defaults.

One type for all: a scenario's ``schedulerConfig:`` step is read into it (its file keys are the
fields in camelCase; a key left out keeps the default), the engine hands it to the cluster, and
each runtime turns it into its own form (local: flags and a config file; kind: the SchedulingShard).
Imports nothing of kailab but its errors, so scenarios and runtimes both may use it.

A SchedulingShard (``kai.scheduler/v1``, KAI v0.17.0's pkg/apis/kai/v1/schedulingshard_types.go) holds the same
settings: :meth:`SchedulerSettings.shard_spec` writes them as a shard's spec, :meth:`SchedulerSettings.from_shard`
reads them back (a field the shard leaves out is KAI's default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import ClassVar, Literal, get_args

from kailab.errors import KailabError

Placement = Literal["binpack", "spread"]
PLACEMENTS: tuple[str, ...] = get_args(Placement)

# The one scheduler flag the lab sets apart from KAI's defaults, on every runtime (local: a flag; kind: the
# SchedulingShard's args). KAI reclaims and preempts one victim per scheduling cycle, and a cycle starts every
# second by default: a lesson's reclaim of 8 GPUs took 9.5 s. Every 250 ms it takes 3 s (measured; see bench/).
LAB_SCHEDULER_ARGS = {"schedule-period": "250ms"}
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")  # Go's time.ParseDuration, as minruntime reads it


@dataclass(frozen=True)
class SchedulerSettings:
    """What a scenario may set in KAI's scheduler. ``SchedulerSettings()`` is the lab's default: KAI v0.17.0's own,
    with the lab's cycle period (``LAB_SCHEDULER_ARGS``).

    Placement is the SchedulingShard's ``placementStrategy`` (what KAI's operator turns into the config
    file's plugins and actions); full-hierarchy fairness is the scheduler's flag ``--full-hierarchy-fairness``;
    ``k_value`` (the proportion plugin's kValue), the minimum runtimes (the minruntime plugin's defaults) and
    ``queue_depth_per_action`` (jobs tried per queue by an action) are the shard's fields of those names; None
    leaves KAI's default.
    """

    gpu_placement: Placement = "binpack"
    cpu_placement: Placement = "binpack"
    full_hierarchy_fairness: bool = True
    k_value: float | None = None
    preempt_min_runtime: str | None = None
    reclaim_min_runtime: str | None = None
    queue_depth_per_action: dict[str, int] | None = None

    ARGS: ClassVar[tuple[str, ...]] = ("full-hierarchy-fairness", *LAB_SCHEDULER_ARGS)  # every flag args() may set

    def __post_init__(self):
        for name in ("gpu_placement", "cpu_placement"):
            if getattr(self, name) not in PLACEMENTS:
                raise KailabError(f"{name} must be binpack or spread, not {getattr(self, name)!r}.")
        if not isinstance(self.full_hierarchy_fairness, bool):
            raise KailabError(f"full_hierarchy_fairness must be true or false, not {self.full_hierarchy_fairness!r}.")
        if self.k_value is not None and (isinstance(self.k_value, bool) or not isinstance(self.k_value, int | float)):
            raise KailabError(f"k_value must be a number, not {self.k_value!r}.")
        for name in ("preempt_min_runtime", "reclaim_min_runtime"):
            if getattr(self, name) is not None and not _DURATION.match(str(getattr(self, name))):
                raise KailabError(f"{name} must be a duration such as 30s or 5m, not {getattr(self, name)!r}.")
        depth = self.queue_depth_per_action
        if depth is not None and not (
            isinstance(depth, dict)
            and all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in depth.items())
        ):
            raise KailabError(f"queue_depth_per_action must map action names to numbers, not {depth!r}.")

    @classmethod
    def of(cls, settings: SchedulerSettings | None) -> SchedulerSettings:
        """These settings; None → the lab's defaults."""
        return settings or cls()

    def args(self) -> dict[str, str]:
        """The scheduler's command-line flags these settings need beyond KAI's defaults (SchedulingShard ``spec.args``)."""
        return {**LAB_SCHEDULER_ARGS, **({} if self.full_hierarchy_fairness else {"full-hierarchy-fairness": "false"})}

    def shard_spec(self) -> dict:
        """These settings as a SchedulingShard's spec (without ``partitionLabelValue``): placementStrategy and args
        always, kValue, minRuntime and queueDepthPerAction when set."""
        spec: dict = {
            "placementStrategy": {"gpu": self.gpu_placement, "cpu": self.cpu_placement},
            "args": self.args(),
        }
        if self.k_value is not None:
            spec["kValue"] = self.k_value
        runtimes = {
            key: value
            for key, value in (
                ("preemptMinRuntime", self.preempt_min_runtime),
                ("reclaimMinRuntime", self.reclaim_min_runtime),
            )
            if value is not None
        }
        if runtimes:
            spec["minRuntime"] = runtimes
        if self.queue_depth_per_action:
            spec["queueDepthPerAction"] = dict(self.queue_depth_per_action)
        return spec

    def shard_patch(self) -> dict:
        """A merge patch of a SchedulingShard's spec to these settings: what :meth:`shard_spec` leaves out, and
        every flag :meth:`args` may set but does not, is set to None (removed)."""
        spec = {"kValue": None, "minRuntime": None, "queueDepthPerAction": None, **self.shard_spec()}
        spec["args"] = {**{a: None for a in self.ARGS}, **spec["args"]}
        return spec

    @classmethod
    def from_shard(cls, spec: dict) -> SchedulerSettings:
        """The settings a SchedulingShard's spec gives (KAI's defaults for what it leaves out); a value of the
        wrong kind is a :class:`KailabError` saying which."""
        placement = spec.get("placementStrategy") or {}
        runtimes = spec.get("minRuntime") or {}
        args = spec.get("args") or {}
        if not isinstance(placement, dict) or not isinstance(runtimes, dict) or not isinstance(args, dict):
            raise KailabError("placementStrategy, minRuntime and args must each be a mapping.")
        return cls(
            gpu_placement=placement.get("gpu") or "binpack",
            cpu_placement=placement.get("cpu") or "binpack",
            full_hierarchy_fairness=str(args.get("full-hierarchy-fairness", "true")).lower() != "false",
            k_value=spec.get("kValue"),
            preempt_min_runtime=runtimes.get("preemptMinRuntime"),
            reclaim_min_runtime=runtimes.get("reclaimMinRuntime"),
            queue_depth_per_action=spec.get("queueDepthPerAction") or None,
        )

    def _extras(self) -> list[str]:
        """The fields beyond placement and fairness that are set, in words."""
        out = [f"kValue {self.k_value:g}"] if self.k_value is not None else []
        out += [
            f"{what} min runtime {value}"
            for what, value in (("preempt", self.preempt_min_runtime), ("reclaim", self.reclaim_min_runtime))
            if value is not None
        ]
        if self.queue_depth_per_action:
            out.append("queue depth " + ", ".join(f"{a} {n}" for a, n in sorted(self.queue_depth_per_action.items())))
        return out

    def describe(self) -> str:
        return ", ".join(
            [
                f"GPU {self.gpu_placement}",
                f"CPU {self.cpu_placement}",
                f"full-hierarchy fairness {'on' if self.full_hierarchy_fairness else 'off'}",
                *self._extras(),
            ]
        )

    def changes(self) -> str:
        """What differs from the lab's defaults ("gpu spread, full-hierarchy fairness off"), or "the lab's defaults"."""
        default = SchedulerSettings()
        parts = [
            f"{f.name.split('_')[0]} {getattr(self, f.name)}"
            for f in fields(self)
            if f.name.endswith("_placement") and getattr(self, f.name) != getattr(default, f.name)
        ]
        if self.full_hierarchy_fairness != default.full_hierarchy_fairness:
            parts.append(f"full-hierarchy fairness {'on' if self.full_hierarchy_fairness else 'off'}")
        parts += self._extras()
        return ", ".join(parts) or "the lab's defaults"
