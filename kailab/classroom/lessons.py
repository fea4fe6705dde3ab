"""A learner's lessons: the built-in exercises, named for their slice, played on their partition."""

from __future__ import annotations

from kailab.checks import Verdict
from kailab.classroom import plan, records
from kailab.classroom.partitions import ShardClass
from kailab.kube import Kube
from kailab.labels import NODEPOOL_LABEL
from kailab.paths import EXERCISES
from kailab.progress import Progress
from kailab.scenarios.engine import Engine
from kailab.scenarios.loader import load_scenario


def run_lessons(klass: ShardClass, kube: Kube, learner: str, names: list[str], progress: Progress) -> list[Verdict]:
    """Play these exercises, one after another, as ``learner``: their names, nodes and scheduler."""
    scenarios = [plan.for_learner(load_scenario(EXERCISES / f"{n}.yaml"), learner) for n in names]
    engine = records.Recording(Engine(klass.cluster(learner, kube), progress), kube, learner)
    engine.refuse_foreign(scenarios)
    return [engine.run(s) for s in scenarios]  # recorded in their namespaces: the instructor reads them there


def slice_line(learner: str) -> str:
    """The first line of every command a learner's run prints: whose slice it is."""
    return (
        f"Learner {learner}: partition {NODEPOOL_LABEL}={learner}, nodes {learner}-kwok-*, "
        f"queues and namespaces {learner}-*"
    )
