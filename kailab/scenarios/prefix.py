"""A lab's prefix (``kailab up --runtime existing --prefix NAME``): its own names on a shared cluster.

Every queue, priority class, topology and namespace a scenario declares gets ``NAME-`` in front, and so does
every reference to them (a queue's parent, a workload's queue, priority class and topology, a condition's
(or a prediction's) queue, the queue names in the scheduler's words a condition looks for). Names the scenario does not
declare — ``default-queue``, KAI's priority classes, a cluster's own queues — are left as they are.
A pure transformation of the loaded scenario: the engine runs the result like any other.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from kailab.errors import KailabError

if TYPE_CHECKING:  # imported where used: check_prefix (every command of a joined learner) needs none of them
    from kailab.scenarios.model import Expectation, Scenario
    from kailab.scenarios.objects import QueueFile, WorkloadFile

MAX_PREFIX = 20  # leaves room for the lessons' names: namespaces and queues are at most 63 characters
MAX_NAME = 63
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Conditions whose text may name a queue (KAI's messages and PodGroup fields say the queue's name).
_TEXT_MEASURES = ("reason", "not_reason", "pod_group_field", "pod_group_reason")


def check_prefix(text: str) -> str:
    """The prefix as given, or ValueError saying what a prefix may be."""
    if not _PREFIX.match(text) or len(text) > MAX_PREFIX:
        raise ValueError(
            f"{text!r} is not a prefix: use 1 to {MAX_PREFIX} lower-case letters, digits and '-', "
            "starting and ending with a letter or digit (for example alice or team-3)"
        )
    return text


def prefixed(scenario: Scenario, prefix: str) -> Scenario:
    """The scenario with the prefix on its own queues, priority classes and namespace (see the module)."""
    from kailab.scenarios.model import SetQueue

    queues = (
        {q.name for q in scenario.queues}
        | set(scenario.missing_queues)
        | {s.queue.name for s in scenario.steps if isinstance(s, SetQueue)}
    )
    classes = {p.name for p in scenario.priority_classes}
    rename = _Renamer(prefix, queues, classes)
    topologies = {t.name for t in scenario.topologies}
    out = dataclasses.replace(
        scenario,
        namespace=rename.name(scenario.namespace),
        queues=tuple(rename.queue(q) for q in scenario.queues),
        priority_classes=tuple(p.model_copy(update={"name": rename.name(p.name)}) for p in scenario.priority_classes),
        workloads=tuple(_topology_renamed(rename.workload(w), rename, topologies) for w in scenario.workloads),
        topologies=tuple(t.model_copy(update={"name": rename.name(t.name)}) for t in scenario.topologies),
        steps=tuple(rename.step(s) for s in scenario.steps),
        missing_queues=tuple(rename.name(q) for q in scenario.missing_queues),
        predictions=tuple(p.renamed(rename.expectation) for p in scenario.predictions),
    )
    too_long = sorted(
        {
            n
            for n in [
                out.namespace,
                *(q.name for q in out.queues),
                *(p.name for p in out.priority_classes),
                *(t.name for t in out.topologies),
            ]
            if len(n) > MAX_NAME
        }
    )
    if too_long:
        raise KailabError(
            f"With the prefix {prefix!r}, scenario {scenario.name} would use names longer than "
            f"{MAX_NAME} characters: {', '.join(too_long)}.",
            hint="Choose a shorter prefix.",
        )
    return out


def _topology_renamed(w: WorkloadFile, rename: _Renamer, topologies: set[str]) -> WorkloadFile:
    """The workload with the prefix on the topology it names (when the scenario declares it)."""
    if w.topology is None or w.topology.name not in topologies:
        return w
    return w.model_copy(update={"topology": w.topology.model_copy(update={"name": rename.name(w.topology.name)})})


def prefixed_queues(queues: tuple[QueueFile, ...], prefix: str) -> tuple[QueueFile, ...]:
    """Queues (``kailab queues``) with the prefix on their names and parents."""
    rename = _Renamer(prefix, {q.name for q in queues}, set())
    return tuple(rename.queue(q) for q in queues)


class _Renamer:
    """Puts the prefix on the names it was given, wherever they appear."""

    def __init__(self, prefix: str, queues: set[str], classes: set[str]):
        self.prefix, self.queues, self.classes = prefix, queues, classes
        names = sorted(queues, key=len, reverse=True)
        self._words = (
            re.compile(r"(?<![a-z0-9-])(" + "|".join(map(re.escape, names)) + r")(?![a-z0-9-])") if names else None
        )

    def name(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def _queue_ref(self, name: str | None) -> str | None:
        return self.name(name) if name in self.queues else name

    def queue(self, q: QueueFile) -> QueueFile:
        return q.model_copy(update={"name": self.name(q.name), "parent": self._queue_ref(q.parent)})

    def workload(self, w: WorkloadFile) -> WorkloadFile:
        pc = self.name(w.priority_class) if w.priority_class in self.classes else w.priority_class
        key = "priorityClassName" if w.priorityClassName else "priorityClass"
        return w.model_copy(update={"queue": self._queue_ref(w.queue), key: pc})

    def expectation(self, e: Expectation) -> Expectation:
        want = e.want
        if e.measure in _TEXT_MEASURES and self._words is not None:
            want = self._words.sub(lambda m: self.name(m.group(1)), want)
        return dataclasses.replace(e, queue=self._queue_ref(e.queue), want=want)

    def step(self, step):
        from kailab.scenarios.model import SetQueue, Wait

        if isinstance(step, SetQueue):
            return dataclasses.replace(step, queue=self.queue(step.queue))
        if isinstance(step, Wait):
            return dataclasses.replace(step, expectations=tuple(e.mapped(self.expectation) for e in step.expectations))
        return step
