"""Settings of KAI's scheduler that a scenario may change, and the lab's defaults.

One type for all: a scenario's ``schedulerConfig:`` step is read into it (its file keys are the
fields in camelCase; a key left out keeps the default), the engine hands it to the cluster, and
each runtime turns it into its own form (local: flags and a config file; kind: the SchedulingShard).
Imports nothing of kailab but its errors, so scenarios and runtimes both may use it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, Literal, get_args

from kailab.errors import KailabError

Placement = Literal["binpack", "spread"]
PLACEMENTS: tuple[str, ...] = get_args(Placement)

# The one scheduler flag the lab sets apart from KAI's defaults, on every runtime (local: a flag; kind: the
# SchedulingShard's args). KAI reclaims and preempts one victim per scheduling cycle, and a cycle starts every
# second by default: a lesson's reclaim of 8 GPUs took 9.5 s. Every 250 ms it takes 3 s (measured; see bench/).
LAB_SCHEDULER_ARGS = {"schedule-period": "250ms"}


@dataclass(frozen=True)
class SchedulerSettings:
    """What a scenario may set in KAI's scheduler. ``SchedulerSettings()`` is the lab's default: KAI v0.17.0's own,
    with the lab's cycle period (``LAB_SCHEDULER_ARGS``).

    Placement is the SchedulingShard's ``placementStrategy`` (what KAI's operator turns into the config
    file's plugins and actions); full-hierarchy fairness is the scheduler's flag ``--full-hierarchy-fairness``.
    """

    gpu_placement: Placement = "binpack"
    cpu_placement: Placement = "binpack"
    full_hierarchy_fairness: bool = True

    ARGS: ClassVar[tuple[str, ...]] = ("full-hierarchy-fairness", *LAB_SCHEDULER_ARGS)  # every flag args() may set

    def __post_init__(self):
        for name in ("gpu_placement", "cpu_placement"):
            if getattr(self, name) not in PLACEMENTS:
                raise KailabError(f"{name} must be binpack or spread, not {getattr(self, name)!r}.")
        if not isinstance(self.full_hierarchy_fairness, bool):
            raise KailabError(f"full_hierarchy_fairness must be true or false, not {self.full_hierarchy_fairness!r}.")

    @classmethod
    def of(cls, settings: SchedulerSettings | None) -> SchedulerSettings:
        """These settings; None → the lab's defaults."""
        return settings or cls()

    def args(self) -> dict[str, str]:
        """The scheduler's command-line flags these settings need beyond KAI's defaults (SchedulingShard ``spec.args``)."""
        return {**LAB_SCHEDULER_ARGS, **({} if self.full_hierarchy_fairness else {"full-hierarchy-fairness": "false"})}

    def describe(self) -> str:
        return (
            f"GPU {self.gpu_placement}, CPU {self.cpu_placement}, "
            f"full-hierarchy fairness {'on' if self.full_hierarchy_fairness else 'off'}"
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
        return ", ".join(parts) or "the lab's defaults"
