"""A learner's slice of the class's cluster, as pure data: their owner labels, nodes, scenario names.

Each learner is a KAI partition (docs/operator/scheduling-shards.md in KAI v0.17.0): their nodes, queues,
workloads and PodGroups carry ``kai.scheduler/node-pool=<learner>``, and a scheduler of their own started
with ``--partition-label-value=<learner>`` sees only those (its lister selects by the label; the lab's own
scheduler, started with an empty value, selects what has no such label). The pod-grouper copies the label
from the workload's top owner, or else the pod, onto the PodGroup; the scheduler labels a pod it binds.
Everything a learner's lesson applies carries the label because it carries the learner's owner labels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kailab.fleet import Fleet, node_objects
from kailab.labels import KAI_SCHEDULER_PROCESS, LEARNER_LABEL, NODEPOOL_LABEL
from kailab.ownership import Owner
from kailab.scenarios.model import Scenario
from kailab.scenarios.prefix import prefixed
from kailab.scenarios.schema import NodeStep, Wait

LAB_ID_PREFIX = "class-"


@dataclass(frozen=True)
class LearnerOwner(Owner):
    """A learner's objects: the class's owner labels (their own lab id) and their partition's node-pool label."""

    node_pool: str = ""

    @property
    def labels(self) -> dict[str, str]:
        return {**super().labels, NODEPOOL_LABEL: self.node_pool}


def owner(learner: str) -> LearnerOwner:
    return LearnerOwner(lab_id=LAB_ID_PREFIX + learner, node_pool=learner)


def scheduler_process(learner: str) -> str:
    """The learner's scheduler's process name (pids/ and logs/ of the lab's KAI folder)."""
    return f"{KAI_SCHEDULER_PROCESS}-{learner}"


def node_labels(learner: str) -> dict[str, str]:
    return {NODEPOOL_LABEL: learner, LEARNER_LABEL: learner, **owner(learner).labels}


def nodes(fleet: Fleet, learner: str) -> list[dict]:
    """The learner's fleet: the lesson fleet's nodes, named ``<learner>-kwok-…`` and in their partition."""
    return node_objects(fleet, prefix=learner, labels=node_labels(learner))


def node_selector(learner: str) -> str:
    return f"{NODEPOOL_LABEL}={learner},{LEARNER_LABEL}={learner}"


def for_learner(scenario: Scenario, learner: str) -> Scenario:
    """The scenario as the learner runs it: their prefix on its queues, classes and namespace, and on the
    names of the nodes it pins pods to or clears (their nodes are ``<learner>-kwok-…``)."""
    out = prefixed(scenario, learner)

    def node(name: str | None) -> str | None:
        return f"{learner}-{name}" if name else name

    def step(s):
        if isinstance(s, NodeStep):
            return dataclasses.replace(s, node=node(s.node))
        if isinstance(s, Wait):
            return dataclasses.replace(
                s, expectations=tuple(dataclasses.replace(e, node=node(e.node)) for e in s.expectations)
            )
        return s

    return dataclasses.replace(
        out,
        workloads=tuple(w.model_copy(update={"node": node(w.node)}) for w in out.workloads),
        steps=tuple(step(s) for s in out.steps),
    )


def lesson_namespaces(learner: str) -> list[str]:
    """The learner's namespace of each built-in exercise (``class up`` makes them; their Role is bound there)."""
    from kailab.lesson import lesson_names
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario

    return sorted({for_learner(load_scenario(EXERCISES / f"{n}.yaml"), learner).namespace for n in lesson_names()})
