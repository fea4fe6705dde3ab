"""The engine's cluster when it is a recording: a scenario's change stream played back on a virtual clock.

A stream is written by ``kailab demo NAME --record DIR`` (``DIR/NAME/changes.jsonl``, one
:class:`~kailab.scenarios.fold.Change` per line, ``t`` in seconds since the run began).
Replaying it through the same engine gives the verdict again, offline and in a moment:
that is what the golden tests (``tests/golden``) check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kailab.checks import FleetNode, Verdict
from kailab.labels import KAI_SCHEDULER_NAME
from kailab.progress import Progress
from kailab.scenarios.engine import CHANGES_FILE, Engine
from kailab.scenarios.fold import Change
from kailab.scenarios.model import ABILITIES, Scenario, operator_needs
from kailab.userfile import read_text


class ReplayCluster:
    """Applies nothing (it remembers what it was asked to do); its clock moves only with the recording."""

    def __init__(
        self, changes: list[Change], node_gpus: list[float] | None = None, nodes: list[FleetNode] | None = None
    ):
        """``node_gpus`` (GPUs of each node) or ``nodes``: a fleet to decide ``requires:`` on; neither: unknown."""
        self._changes = changes
        self._nodes = nodes if node_gpus is None else [FleetNode(f"node-{i}", g) for i, g in enumerate(node_gpus)]
        self._at = 0
        self.now = 0.0
        self.calls: list[tuple[str, str]] = []  # (verb, "kind/name") in order

    def clock(self) -> float:
        return self.now

    def clear_scenarios(self, namespace: str = "") -> list[str]:
        return []

    def ensure_namespace(self, name: str, labels: dict[str, str]) -> None:
        self.calls.append(("namespace", name))

    def apply(self, obj: dict) -> float | None:
        self.calls.append(("apply", f"{obj['kind']}/{obj['metadata']['name']}"))
        return None  # the recording's STEP marks carry the cluster's time of each step

    def delete(self, obj: dict) -> float | None:
        self.calls.append(("delete", f"{obj['kind']}/{obj['metadata']['name']}"))
        return None

    def delete_pods(self, namespace: str, workload: str) -> None:
        self.calls.append(("delete pods", workload))

    def changes(self, namespace: str, queues: Iterable[str] = (), node_labels: tuple[str, ...] = ()) -> ReplayCluster:
        return self  # the recording holds what the run saw, the nodes' labels too

    def fleet_nodes(self) -> list[FleetNode] | None:
        return self._nodes

    def node_names(self) -> list[str] | None:
        return None

    def scenario_objects(self) -> list[dict]:
        return []

    def foreign(self, objects: list[dict]) -> list[str]:
        return []

    def ensure_operators(self, objects: list[dict], progress) -> None:
        """A recording's operators ran when it was made."""

    def abilities(self) -> frozenset[str]:
        return frozenset(ABILITIES) | operator_needs()

    def stop_scheduler(self) -> None:
        self.calls.append(("stop", KAI_SCHEDULER_NAME))

    def start_scheduler(self, settings) -> None:
        self.calls.append(("start", KAI_SCHEDULER_NAME))

    def stop_gpu_ledger(self) -> None:
        self.calls.append(("stop", "gpu-ledger"))

    def start_gpu_ledger(self) -> None:
        self.calls.append(("start", "gpu-ledger"))

    def pace(self, namespace: str = "default"):
        return None  # the recording's PACE changes say how fast the lab was

    def note(self, change: Change) -> None:
        pass  # the recording holds the engine's marks already

    def next(self, timeout: float) -> Change | None:
        """The next recorded change if it happened within ``timeout`` of now (the clock moves to it); else None."""
        if self._at < len(self._changes) and self._changes[self._at].t <= self.now + timeout:
            change = self._changes[self._at]
            self._at += 1
            self.now = max(self.now, change.t)
            return change
        self.now += max(timeout, 0.0)
        return None

    def close(self) -> None:
        pass


def read_changes(path: Path) -> list[Change]:
    """A recorded stream; a malformed line is an error naming its file and line."""
    out = []
    for n, line in enumerate(read_text(path, limit=64 * 1024 * 1024).splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Change.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}:{n}: not a recorded change: {e}") from e
    return out


def replay(scenario: Scenario, recording: Path) -> Verdict:
    """The verdict the engine reaches on a recorded change stream (``recording``: a folder or the file)."""
    path = recording / CHANGES_FILE if recording.is_dir() else recording
    return Engine(ReplayCluster(read_changes(path)), Progress(quiet=True)).run(scenario)


def golden(verdict: Verdict) -> dict:
    """What a golden file holds of a verdict: every check, the timings, the GPU timeline and the answers to the
    lesson's graded predictions (if it asks any)."""
    return {
        **verdict.to_dict(),
        "timeline": verdict.timeline,
        **({"answers": verdict.answers} if verdict.answers else {}),
    }
