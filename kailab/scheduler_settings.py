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
_PROM_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")  # Prometheus' duration (windowSize: monitoringv1.Duration)
# KAI's usageParams that a scenario may set (pkg/scheduler/cache/usagedb/api/interface.go, UsageParams), each with
# the form KAI parses it in. windowType: only sliding (tumbling needs a start time, cron a cron string).
USAGE_PARAMS: dict[str, re.Pattern] = {
    "windowSize": _PROM_DURATION,
    "halfLifePeriod": _DURATION,
    "fetchInterval": _DURATION,
    "windowType": re.compile(r"^sliding$"),
}
USAGE_DB_CLIENT = "prometheus"  # the one usage database KAI v0.17.0 queries (pkg/scheduler/cache/usagedb/hub.go)


def _scenario_usage_params(params: dict) -> dict:
    """A shard's usageParams without ``extraParams``: those are the lab's (its capacity queries and resolution,
    kailab/runtimes/usage_db.py), never a scenario's."""
    if not isinstance(params, dict):
        raise KailabError(f"usageDBConfig.usageParams must be a mapping, not {params!r}.")
    return {k: v for k, v in params.items() if k != "extraParams"}


@dataclass(frozen=True)
class SchedulerSettings:
    """What a scenario may set in KAI's scheduler. ``SchedulerSettings()`` is the lab's default: KAI v0.17.0's own,
    with the lab's cycle period (``LAB_SCHEDULER_ARGS``).

    Placement is the SchedulingShard's ``placementStrategy`` (what KAI's operator turns into the config
    file's plugins and actions); full-hierarchy fairness is the scheduler's flag ``--full-hierarchy-fairness``;
    ``k_value`` (the proportion plugin's kValue), the minimum runtimes (the minruntime plugin's defaults) and
    ``queue_depth_per_action`` (jobs tried per queue by an action) are the shard's fields of those names; None
    leaves KAI's default. ``usage_params`` turns on time-based fair share: the shard's ``usageDBConfig`` with
    clientType prometheus and these ``usageParams`` (windowSize, halfLifePeriod, fetchInterval, windowType); None:
    no usage database, so past usage counts for nothing.
    """

    gpu_placement: Placement = "binpack"
    cpu_placement: Placement = "binpack"
    full_hierarchy_fairness: bool = True
    k_value: float | None = None
    preempt_min_runtime: str | None = None
    reclaim_min_runtime: str | None = None
    queue_depth_per_action: dict[str, int] | None = None
    usage_params: dict[str, str] | None = None

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
        usage = self.usage_params
        if usage is not None:
            if not isinstance(usage, dict):
                raise KailabError(f"usage_params must be a mapping such as {{windowSize: 1m}}, not {usage!r}.")
            for key, value in usage.items():
                if key not in USAGE_PARAMS:
                    raise KailabError(
                        f"usage_params has {key!r}, which kailab does not set; it sets {', '.join(USAGE_PARAMS)}."
                    )
                if not (isinstance(value, str) and USAGE_PARAMS[key].match(value)):
                    form = "sliding" if key == "windowType" else "a duration such as 1m or 30s"
                    raise KailabError(f"usage_params {key} must be {form}, not {value!r}.")

    @classmethod
    def of(cls, settings: SchedulerSettings | None) -> SchedulerSettings:
        """These settings; None → the lab's defaults."""
        return settings or cls()

    def args(self) -> dict[str, str]:
        """The scheduler's command-line flags these settings need beyond KAI's defaults (SchedulingShard ``spec.args``)."""
        return {**LAB_SCHEDULER_ARGS, **({} if self.full_hierarchy_fairness else {"full-hierarchy-fairness": "false"})}

    def shard_spec(self, usage_db: dict | None = None) -> dict:
        """These settings as a SchedulingShard's spec (without ``partitionLabelValue``): placementStrategy and args
        always, kValue, minRuntime, queueDepthPerAction and usageDBConfig when set.

        ``usage_db``: the usageDBConfig a runtime gives KAI's operator, with the connection string and extraParams
        it needs (kind: kailab/runtimes/kind_usage_db.py); None: clientType and the usage params alone (the local
        runtime's supervisor adds the rest)."""
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
        if self.usage_params is not None:
            spec["usageDBConfig"] = usage_db or {"clientType": USAGE_DB_CLIENT, "usageParams": dict(self.usage_params)}
        return spec

    def shard_patch(self, usage_db: dict | None = None) -> dict:
        """A merge patch of a SchedulingShard's spec to these settings (``usage_db``: see :meth:`shard_spec`): what
        :meth:`shard_spec` leaves out, every flag :meth:`args` may set but does not, and every usage param it may
        set but does not, is set to None (removed)."""
        spec = {
            "kValue": None,
            "minRuntime": None,
            "queueDepthPerAction": None,
            "usageDBConfig": None,
            **self.shard_spec(usage_db),
        }
        spec["args"] = {**{a: None for a in self.ARGS}, **spec["args"]}
        if spec["usageDBConfig"] is not None:
            usage = spec["usageDBConfig"]
            spec["usageDBConfig"] = {**usage, "usageParams": {**dict.fromkeys(USAGE_PARAMS), **usage["usageParams"]}}
        return spec

    @classmethod
    def from_shard(cls, spec: dict) -> SchedulerSettings:
        """The settings a SchedulingShard's spec gives (KAI's defaults for what it leaves out); a value of the
        wrong kind is a :class:`KailabError` saying which."""
        placement = spec.get("placementStrategy") or {}
        runtimes = spec.get("minRuntime") or {}
        args = spec.get("args") or {}
        usage_db = spec.get("usageDBConfig")
        if not all(isinstance(v, dict) for v in (placement, runtimes, args, usage_db or {})):
            raise KailabError("placementStrategy, minRuntime, args and usageDBConfig must each be a mapping.")
        if usage_db is not None and usage_db.get("clientType") != USAGE_DB_CLIENT:
            raise KailabError(
                f"usageDBConfig.clientType must be {USAGE_DB_CLIENT}, not {usage_db.get('clientType')!r}: "
                f"the one usage database KAI queries."
            )
        return cls(
            gpu_placement=placement.get("gpu") or "binpack",
            cpu_placement=placement.get("cpu") or "binpack",
            full_hierarchy_fairness=str(args.get("full-hierarchy-fairness", "true")).lower() != "false",
            k_value=spec.get("kValue"),
            preempt_min_runtime=runtimes.get("preemptMinRuntime"),
            reclaim_min_runtime=runtimes.get("reclaimMinRuntime"),
            queue_depth_per_action=spec.get("queueDepthPerAction") or None,
            usage_params=None if usage_db is None else _scenario_usage_params(usage_db.get("usageParams") or {}),
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
        if self.usage_params is not None:
            params = ", ".join(f"{k} {v}" for k, v in self.usage_params.items())
            out.append(f"usage database ({params})" if params else "usage database")
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
