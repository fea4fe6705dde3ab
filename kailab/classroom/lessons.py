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
    engine = Engine(klass.cluster(learner, kube), progress)
    engine.refuse_foreign(scenarios)
    verdicts = []
    for s in scenarios:
        verdicts.append(engine.run(s))
        kube.apply(records.record_object(learner, verdicts[-1]))  # in their namespace: the instructor reads it there
    return verdicts


def slice_line(learner: str) -> str:
    """The first line of every command a learner's run prints: whose slice it is."""
    return (
        f"Learner {learner}: partition {NODEPOOL_LABEL}={learner}, nodes {learner}-kwok-*, "
        f"queues and namespaces {learner}-*"
    )
