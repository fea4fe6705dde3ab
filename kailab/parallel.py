"""``kailab demo`` side by side: the lessons at the same time, each in a temporary partition of its own.

Where the runtime's partitions host says lessons fit side by side (the local runtime, which starts KAI's scheduler
processes itself), each lesson gets what a class's learner gets (``kailab/partitions.py``): the lesson fleet's nodes
labelled ``kai.scheduler/node-pool=demo-<lesson>`` and a SchedulingShard ``demo-<lesson>-shard``, which the lab's
supervisor runs as a scheduler started with ``--partition-label-value=demo-<lesson>``; the lesson's names carry that
prefix (``partitions.for_partition``). The partitions are made for the run and removed after it, on a failure,
Ctrl-C or SIGTERM too (cli.main turns SIGTERM into Ctrl-C). Their names are written to ``demo-partitions.json`` in
the host's folder (the local lab's ``kai/``) before any is made, so what a run killed outright left is removed by the
next run, or with the lab by ``kailab down``.

A lesson without KAI (baseline: the default kube-scheduler, which knows no partitions) runs last, in the lab's own
partition, once the partitions' nodes are gone: the scheduler's words then count the lab's fleet alone, as on a lab
of one's own; what an earlier run of it left Pending is deleted first, or the default scheduler would place it on
a partition's nodes.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from kailab import partitions
from kailab.checks import Verdict
from kailab.classroom.roster import Roster
from kailab.errors import KailabError
from kailab.fleet import Fleet
from kailab.kube import Kube
from kailab.labels import DEFAULT_SCHEDULER_NAME, LAB_ID_LABEL, NODEPOOL_LABEL
from kailab.ownership import Owner
from kailab.partitions import CLASS_STATE, Partitions, wait_until_gone
from kailab.paths import EXERCISES
from kailab.progress import Progress
from kailab.runtimes.base import PartitionHost
from kailab.scenarios.engine import Engine
from kailab.scenarios.live import LiveCluster
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.model import Scenario, Sleep
from kailab.scenarios.objects import OPERATED_KINDS

PREFIX = "demo-"
STATE = "demo-partitions.json"
DEFAULT_PARALLEL = 6  # bench/exercises.py --parallel N measured it on 2 cores (README "Performance")
GRACE = 15.0  # seconds a lesson still running after Ctrl-C has to notice its partition is gone


def at_once(
    names: list[str], parallel: int | None, sequential_only: bool, side_by_side: Callable[[], tuple[int, str]]
) -> tuple[int, str]:
    """How many of these lessons to run at once (``--parallel``; by default side by side for several where the lab
    can: ``side_by_side`` is the lab's :meth:`~kailab.lab.Lab.side_by_side`), and why one after another when it was
    asked for or is the default being given up ("" else)."""
    wanted = parallel if parallel is not None else (DEFAULT_PARALLEL if len(names) > 1 else 1)
    if wanted <= 1 or len(names) <= 1:
        return 1, ""
    if sequential_only:
        return 1, "--evidence and the golden recordings need the lab's own names"
    fit, why = side_by_side()
    return (1, why) if why else (min(wanted, fit, len(names)), "")


def partition(lesson: str) -> str:
    """The partition (node-pool label value, name prefix) a lesson runs in side by side."""
    return PREFIX + lesson


class SideBySide:
    """A run of lessons, ``at_once`` at a time, each in a partition made for it and removed after it."""

    def __init__(
        self,
        host: PartitionHost,
        fleet: Fleet,
        connect: Callable[[], Kube],
        progress: Progress,
        at_once: int,
        own: Callable[[Kube], LiveCluster] | None = None,
    ):
        self.own = (
            own  # the lab's own partition, for the lessons that run in the lab itself (parallel.in_the_lab_itself)
        )
        self.parts = Partitions(host, STATE)
        self.klass = Partitions(host, CLASS_STATE)  # a class's learners' partitions, whose names are taken
        self.fleet = fleet
        self.connect = connect  # a client per lesson: each thread its own connection pool
        self.progress = progress
        self.at_once = max(1, at_once)
        self.stopping = threading.Event()
        self.locks: dict[str, threading.Lock] = {}  # a partition's: made or removed by one thread at a time
        self.state_lock = threading.Lock()
        self.workers: list[threading.Thread] = []
        self.phases: dict[str, dict[str, float]] = {}  # per lesson: started at, seconds to make its partition, …
        self.began = time.monotonic()

    def check(self, kube: Kube, names: list[str]) -> None:
        """Refuse, before anything is made, partition names a class learner or someone else's nodes already use;
        remove the partitions a killed run left (the state file says kailab made them)."""
        wanted = [partition(n) for n in names]
        Roster(tuple(wanted))  # names a partition can have
        if clash := sorted(set(wanted) & set(self.klass.names())):
            raise KailabError(
                f"This lab's class has learners named {', '.join(clash)}; running lessons side by side "
                "needs those partition names. Nothing was applied.",
                hint="Run one after another: kailab demo all --parallel 1",
            )
        if left := self.parts.names():
            with self.progress.step(f"Removing the partitions a stopped demo left: {', '.join(left)}"):
                for p in left:
                    self.parts.remove(kube, p)
                self.parts.write([])
        selector = f"{LAB_ID_LABEL} in ({','.join(partitions.owner(p).lab_id for p in wanted)})"
        if not wait_until_gone(lambda: kube.core.list_namespace(label_selector=selector).items, 120):
            raise KailabError(
                "The namespaces of the last run's partitions were not deleted within 120s.",
                hint=f"See what is left: kubectl get namespaces -l '{selector}'",
            )
        taken = sorted(
            n.metadata.name
            for n in kube.core.list_node(label_selector=f"{NODEPOOL_LABEL} in ({','.join(wanted)})").items
        )
        if taken:
            raise KailabError(
                f"Nodes kailab did not make for this run are in its partitions already: "
                f"{', '.join(taken[:5])}{' …' if len(taken) > 5 else ''}. Nothing was applied.",
                hint="Run one after another: kailab demo all --parallel 1",
            )

    def run(self, names: list[str]) -> list[Verdict]:
        """Every lesson's verdict, in the order given; every partition removed before returning or raising."""
        self.began = time.monotonic()
        kube = self.connect()
        self.check(kube, names)
        results: dict[str, Verdict] = {}
        lessons = {n: load_scenario(EXERCISES / f"{n}.yaml") for n in names}  # each file read once (YAML: 10 ms)
        alone = [n for n in names if self.own is not None and runs_in_the_lab_itself(lessons[n])]
        for n in alone:
            ns = lessons[n].namespace
            found = kube.get("v1", "Namespace", ns)
            if found is not None and Owner().owns(found["metadata"].get("labels")):  # the lab's own, made by kailab
                kube.empty_namespace(ns)
        rest = [n for n in names if n not in alone]
        scenarios = {n: partitions.for_partition(lessons[n], partition(n)) for n in rest}
        self.parts.write([partition(n) for n in rest])  # first: a run killed half-way is still removed
        self.locks = {partition(n): threading.Lock() for n in rest}
        errors: list[BaseException] = []
        try:
            for n in rest:  # another's queue of the same name: refused before anything is made
                Engine(self.parts.cluster(partition(n), kube), Progress(quiet=True)).refuse_foreign([scenarios[n]])
            self.progress.info(
                f"Running {len(rest)} lessons side by side, {min(self.at_once, len(rest))} at a time, "
                f"each in a partition of its own ({NODEPOOL_LABEL}={PREFIX}<lesson>: "
                f"{self.fleet.node_count} nodes, a KAI scheduler), removed after it."
            )
            todo: queue.Queue[str] = queue.Queue()
            for n in sorted(rest, key=lambda n: -asleep(scenarios[n])):  # stable: else in the order given
                todo.put(n)
            self.workers = [
                threading.Thread(target=self._work, args=(todo, scenarios, results, errors), daemon=True)
                for _ in range(min(self.at_once, len(rest)))
            ]
            for w in self.workers:
                w.start()
            for w in self.workers:
                while w.is_alive():
                    w.join(0.2)  # short joins: Ctrl-C reaches the main thread
        finally:
            self.stopping.set()
            self._remove_all(kube)
        if errors:
            raise errors[0]
        for n in alone:
            assert self.own is not None  # alone is empty without it
            start = time.monotonic()
            results[n] = Engine(self.own(kube), Progress(quiet=True)).run(lessons[n])
            self.phases[n] = {"at": start - self.began, "lesson": time.monotonic() - start}
            self._line(results[n], "the lab's own", time.monotonic() - start)
        return [results[n] for n in names]

    def _work(self, todo: queue.Queue, scenarios: dict, results: dict, errors: list) -> None:
        kube = self.connect()
        while not self.stopping.is_set():
            try:
                name = todo.get_nowait()
            except queue.Empty:
                return
            part = partition(name)
            start = time.monotonic()
            try:
                with self.locks[part]:
                    if self.stopping.is_set():
                        return
                    self.parts.make(kube, self.fleet, part)
                made = time.monotonic()
                verdict = Engine(self.parts.cluster(part, kube), Progress(quiet=True)).run(scenarios[name])
                results[name] = verdict
                ended = time.monotonic()
                # Removed before the worker's next lesson: removed in the background instead, the removal's burst
                # of deletions (10-40 s on a busy machine) met the next lesson's own start, and lessons failed
                # their 30 s waits more often (bench/side_by_side.py; README "Performance").
                with self.locks[part]:
                    self.parts.remove(kube, part, wait=False)  # its namespaces end while others run
                self._forget(part)
                self.phases[name] = {
                    "at": start - self.began,
                    "partition": made - start,
                    "lesson": ended - made,
                    "removal": time.monotonic() - ended,
                }
            except BaseException as e:  # noqa: BLE001 (raised in the main thread, after every partition is removed)
                if not self.stopping.is_set():
                    errors.append(e)
                    self.stopping.set()
                return
            self._line(verdict, part, ended - start)

    def _forget(self, part: str) -> None:
        with self.state_lock:
            self.parts.write([p for p in self.parts.names() if p != part])

    def _line(self, verdict: Verdict, part: str, seconds: float) -> None:
        mark, colour = ("✓", "green") if verdict.ok else ("?", "yellow") if verdict.undecided else ("✗", "red")
        where = part if part.startswith(PREFIX) else part + " partition"
        with self.state_lock:  # one line at a time
            self.progress.info(
                f"{mark} {verdict.scenario} {verdict.outcome} ({seconds:.1f}s, in {where})", style=colour
            )

    def _remove_all(self, kube: Kube) -> None:
        """Remove every partition of the run that is left (after Ctrl-C or a failure): schedulers first, so
        nothing more is bound; then objects and nodes, so a lesson still running fails at its next call; once
        more after those lessons have ended, for what they applied in between."""
        left = self.parts.names()
        if not left:
            return
        with self.progress.step(f"Removing this run's partitions: {', '.join(left)}"):
            for p in left:
                self.parts.stop_scheduler(kube, p)
            for p in left:
                with self.locks.get(p) or threading.Lock():
                    self.parts.remove(kube, p, wait=False)
            deadline = time.monotonic() + GRACE
            while any(w.is_alive() for w in self.workers) and time.monotonic() < deadline:
                time.sleep(0.2)
            for p in left:
                self.parts.remove(kube, p)
            with self.state_lock:
                self.parts.write([])


def asleep(scenario) -> float:
    """Seconds a scenario spends in ``sleep:`` steps. Side by side the longest sleeper starts first, so that its
    sleep overlaps the others' work (measured, 17 lessons on a quiet machine: 154 s with time-fairshare's minute of
    usage started last, 116 s started first)."""
    return sum(step.seconds for step in scenario.steps if isinstance(step, Sleep))


def in_the_lab_itself(lesson: str) -> bool:
    """True for a lesson that runs in the lab's own partition, after the others: its pods all go to the default
    kube-scheduler, or one of its KAI workloads has no queue — KAI puts it in ``default-queue``, which is the lab's
    own (a partition's scheduler sees only the queues of its node pool) — or an operator makes its pods (the lab's
    cluster offers the operators; a partition's does not)."""
    return runs_in_the_lab_itself(load_scenario(EXERCISES / f"{lesson}.yaml"))


def runs_in_the_lab_itself(scenario: Scenario) -> bool:
    """:func:`in_the_lab_itself`, of a scenario already read."""
    workloads = scenario.workloads
    if all(w.scheduler == DEFAULT_SCHEDULER_NAME for w in workloads):
        return True
    if any(w.kind in OPERATED_KINDS for w in workloads):
        return True
    return any(w.scheduler != DEFAULT_SCHEDULER_NAME and w.queue is None for w in workloads)
