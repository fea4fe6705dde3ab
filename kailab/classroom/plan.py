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
import math
from dataclasses import dataclass

from kailab.fleet import Fleet, node_objects
from kailab.labels import DEFAULT_SCHEDULER_NAME, KAI_SCHEDULER_NAME, LEARNER_LABEL, NODEPOOL_LABEL, PARTITION_TAINT_KEY
from kailab.ownership import Owner
from kailab.scenarios.model import Scenario
from kailab.scenarios.prefix import prefixed
from kailab.scenarios.schema import DeletePods, NodeStep, Wait

LAB_ID_PREFIX = "class-"

# The memory a partition adds to a running lab: its scheduler process, five KWOK nodes and its lesson's objects
# in the API server and KAI's caches. bench/class.py measured the lab (every process it started, RSS, at its peak)
# at 0.90 GiB without a class and 1.55 / 2.05 / 2.94 / 3.96 GiB with 1 / 4 / 8 / 16 learners running quota, gang
# and reclaim at once: 0.55 GiB + 0.16 GiB a learner on top of the lab, which runs already.
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


# The CPU a class needs, from bench/class.py on the local runtime: the costliest learner-lesson for its length
# (fairshare: 11.6 CPU seconds of the whole lab and kailab's client in 6.4 s, one learner alone; it restarts their
# scheduler twice), and how a learner-lesson's CPU grows with the class (measured at 1, 4, 8, 16 learners: 12.1,
# 10.2, 12.9, 12.3 CPU s; a line in the class size, fitted).
LESSON_CPU_SECONDS = 11.6
LESSON_SECONDS = 6.4
CPU_GROWTH = (0.94, 0.006)  # a learner-lesson's CPU at N learners, over one learner's alone: a + b·N


def cores_needed(learners: int) -> float:
    """Cores for every learner's lesson to take at most twice one learner's time (bench/class.py's sizing)."""
    a, b = CPU_GROWTH
    return learners * LESSON_CPU_SECONDS * (a + b * learners) / (2 * LESSON_SECONDS)


def cores_shortfall(learners: int, cores: int) -> str:
    """ "" when ``cores`` hold ``learners`` at that speed; else the figures, in words (a warning: the lessons still
    give their verdicts, later)."""
    need = cores_needed(learners)
    if need <= cores:
        return ""
    a, b = CPU_GROWTH
    slower = learners * LESSON_CPU_SECONDS * (a + b * learners) / (cores * LESSON_SECONDS)
    return (
        f"{learners} learner{'s' if learners != 1 else ''} need about {math.ceil(need)} cores for a lesson to take at "
        f"most twice one learner's time (bench/class.py: the costliest lesson for its length, {LESSON_CPU_SECONDS:.1f} "
        f"CPU s in {LESSON_SECONDS:.1f} s for one learner alone); this machine has {cores}, so such a lesson run by "
        f"everyone at once takes about {max(slower, 2):.0f}× one learner's time"
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
        any scheduler but KAI's — the default kube-scheduler (no schedulerName), which knows no partitions, or one
        misspelled on purpose (a runbook's) — may go only to the partition's nodes, as the class's admission policy
        requires; KAI's pods need nothing more: their scheduler sees no other nodes."""
        tolerations = pod_spec.setdefault("tolerations", [])
        if toleration(self.node_pool) not in tolerations:
            tolerations.append(toleration(self.node_pool))
        if pod_spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) != KAI_SCHEDULER_NAME:
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
