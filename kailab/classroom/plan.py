"""A learner's slice of the class's cluster, as pure data: their owner labels, nodes, scenario names.

Each learner is a KAI partition (docs/operator/scheduling-shards.md in KAI v0.17.0): their nodes, queues,
workloads and PodGroups carry ``kai.scheduler/node-pool=<learner>``, and a scheduler of their own started
with ``--partition-label-value=<learner>`` sees only those (its lister selects by the label; the lab's own
scheduler, started with an empty value, selects what has no such label). Each learner's scheduler is their
SchedulingShard's (``classroom/shards.py``: its name, what runs it, its settings). The pod-grouper copies the label
from the workload's top owner, or else the pod, onto the PodGroup; the scheduler labels a pod it binds.
Everything a learner's lesson applies carries the label because it carries the learner's owner labels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kailab.fleet import Fleet, node_objects
from kailab.labels import DEFAULT_SCHEDULER_NAME, LEARNER_LABEL, NODEPOOL_LABEL, PARTITION_TAINT_KEY
from kailab.ownership import Owner
from kailab.scenarios.model import DeletePods, NodeStep, Scenario, Wait
from kailab.scenarios.prefix import prefixed

LAB_ID_PREFIX = "class-"

# The memory a partition adds to a running lab: its scheduler process, five KWOK nodes and its lesson's objects
# in the API server and KAI's caches. bench/class.py measured the lab (every process it started, RSS) at 1.19 GiB
# with 1 learner and 2.51 GiB with 8: about 0.19 GiB a learner on top of the lab, which runs already.
GIB = 2**30
MEMORY_PER_PARTITION = int(0.2 * GIB)
MEMORY_RESERVE = int(0.5 * GIB)  # left to the machine and the lab's own lessons


def partitions_that_fit(available: int) -> int:
    """How many more partitions this much available memory (bytes) holds, the reserve kept free."""
    return max(0, (available - MEMORY_RESERVE) // MEMORY_PER_PARTITION)


def memory_shortfall(adding: int, available: int) -> str:
    """ "" when ``adding`` partitions fit in ``available`` bytes; else the figures, in words."""
    if adding <= partitions_that_fit(available):
        return ""
    need = adding * MEMORY_PER_PARTITION + MEMORY_RESERVE
    return (
        f"{adding} learner{'s' if adding != 1 else ''} need about {need / GIB:.1f} GiB of memory "
        f"({MEMORY_PER_PARTITION / GIB:.2f} GiB each, measured by bench/class.py, and "
        f"{MEMORY_RESERVE / GIB:.1f} GiB kept free); this machine has {available / GIB:.1f} GiB available, "
        f"enough for {partitions_that_fit(available)}"
    )


@dataclass(frozen=True)
class LearnerOwner(Owner):
    """A learner's objects: the class's owner labels (their own lab id) and their partition's node-pool label."""

    node_pool: str = ""

    @property
    def labels(self) -> dict[str, str]:
        return {**super().labels, NODEPOOL_LABEL: self.node_pool}

    def confine(self, pod_spec: dict) -> None:
        """Every pod of the partition tolerates its nodes' taint (no one else's pod does: :func:`taint`); a pod for
        the default kube-scheduler (no schedulerName), which knows no partitions, may go only to the partition's
        nodes; KAI's pods need nothing more: their scheduler sees no other nodes."""
        tolerations = pod_spec.setdefault("tolerations", [])
        if toleration(self.node_pool) not in tolerations:
            tolerations.append(toleration(self.node_pool))
        if pod_spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) == DEFAULT_SCHEDULER_NAME:
            pod_spec.setdefault("nodeSelector", {})[NODEPOOL_LABEL] = self.node_pool


def taint(partition: str) -> dict:
    """On each node of a partition: pods that do not tolerate it are not placed there, by either scheduler."""
    return {"key": PARTITION_TAINT_KEY, "value": partition, "effect": "NoSchedule"}


def toleration(partition: str) -> dict:
    """What every pod of a partition carries (:meth:`LearnerOwner.confine`): its own partition's taint, no other."""
    return {"key": PARTITION_TAINT_KEY, "operator": "Equal", "value": partition, "effect": "NoSchedule"}


def owner(learner: str) -> LearnerOwner:
    return LearnerOwner(lab_id=LAB_ID_PREFIX + learner, node_pool=learner)


def node_labels(learner: str) -> dict[str, str]:
    return {NODEPOOL_LABEL: learner, LEARNER_LABEL: learner, **owner(learner).labels}


def nodes(fleet: Fleet, learner: str) -> list[dict]:
    """The learner's fleet: the lesson fleet's nodes, named ``<learner>-kwok-…``, in their partition and tainted
    as theirs."""
    tainted = dataclasses.replace(fleet, taints=(*fleet.taints, taint(learner)))
    return node_objects(tainted, prefix=learner, labels=node_labels(learner))


def node_selector(learner: str) -> str:
    return f"{NODEPOOL_LABEL}={learner},{LEARNER_LABEL}={learner}"


def for_learner(scenario: Scenario, learner: str) -> Scenario:
    """The scenario as the learner runs it: their prefix on its queues, classes and namespace, and on the
    names of the nodes it pins pods to, clears or requires (their nodes are ``<learner>-kwok-…``)."""
    out = prefixed(scenario, learner)

    def node(name: str | None) -> str | None:
        return f"{learner}-{name}" if name else name

    def step(s):
        if isinstance(s, (NodeStep, DeletePods)):
            return dataclasses.replace(s, node=node(s.node))
        if isinstance(s, Wait):
            return dataclasses.replace(
                s,
                expectations=tuple(
                    e.mapped(lambda x: dataclasses.replace(x, node=node(x.node))) for e in s.expectations
                ),
            )
        return s

    requires = out.requires
    if requires is not None and requires.nodeNames:
        requires = requires.model_copy(update={"nodeNames": [f"{learner}-{n}" for n in requires.nodeNames]})

    def on_node(e):
        return dataclasses.replace(e, node=node(e.node))

    return dataclasses.replace(
        out,
        workloads=tuple(w.model_copy(update={"node": node(w.node)}) for w in out.workloads),
        steps=tuple(step(s) for s in out.steps),
        requires=requires,
        predictions=tuple(p.renamed(on_node) for p in out.predictions),
    )


def lesson_namespaces(learner: str) -> list[str]:
    """The learner's namespace of each built-in exercise, and the challenges' one (``class up`` makes them; their Role
    is bound there). A lesson's tasks run in the lesson's namespace."""
    from kailab.lesson import lesson_names
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario
    from kailab.tasks import CHALLENGE_NAMESPACE

    challenges = Scenario(name="challenge", title="", path="", namespace=CHALLENGE_NAMESPACE)
    scenarios = [*(load_scenario(EXERCISES / f"{n}.yaml") for n in lesson_names()), challenges]
    return sorted({for_learner(s, learner).namespace for s in scenarios})
