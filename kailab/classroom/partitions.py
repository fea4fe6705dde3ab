"""A class on one cluster: per learner a lesson fleet and a KAI partition of their own, on every runtime.

Each learner's partition is KAI's own object, a SchedulingShard (``classroom/shards.py``): ``class up`` makes their
KWOK nodes (labelled with their node pool) and their shard, then waits until a scheduler runs it. On kind and
existing clusters KAI's operator turns the shard into a scheduler Deployment; on the local runtime, which runs
KAI's components as processes and no operator, kailab's supervisor (``runtimes/shard_supervisor.py``, a process the lab
starts and ``kailab down`` stops) turns it into a ``kai-scheduler`` process started with
``--partition-label-value=<learner>``. Either way a learner's scheduler settings — what the placement,
consolidation and fair-share lessons change — live in their shard, so the engine changes them through the API
server (:class:`~kailab.classroom.shards.ShardSchedulerControl`), from the instructor's machine or, with only
their kubeconfig, from the learner's.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from kailab.classroom import access, plan, shards
from kailab.classroom.roster import MAX_LEARNERS, Roster, RosterError
from kailab.classroom.shards import ShardSchedulerControl
from kailab.errors import KailabError
from kailab.fleet import Fleet, create_fleet
from kailab.kube import Kube
from kailab.labels import (
    KAI_NAMESPACE,
    KAI_SCHEDULER_NAME,
    KAI_SCHEDULER_PROCESS,
    LAB_ID_LABEL,
    LEARNER_LABEL,
    NODEPOOL_LABEL,
    SHARD_API,
    SHARD_SUPERVISOR,
)
from kailab.labstate import DamagedState
from kailab.outfile import write_own
from kailab.ownership import CLUSTER_KINDS
from kailab.progress import Progress
from kailab.runtimes import shard_supervisor
from kailab.runtimes.base import Runtime
from kailab.runtimes.kind import KindRuntime
from kailab.runtimes.local import LocalRuntime, LocalSchedulerControl
from kailab.runtimes.local_kai import wait_healthy
from kailab.scenarios.live import LiveCluster
from kailab.scenarios.prefix import check_prefix
from kailab.userfile import read_own_json

STATE = "class.json"  # local: in the lab's KAI folder, which `kailab down` removes; else in the lab folder


class ShardClass:
    """The class of a running lab: its learners, their partitions (SchedulingShards), their clusters as the engine
    sees them. The runtime's part: where the class's state file is and what must run before a shard is served
    (:meth:`ready`)."""

    def __init__(self, runtime: Runtime, folder: Path, state: str = STATE):
        self.rt = runtime
        self.folder = folder
        self.state_file = folder / state  # the partitions this lab made (a class's; demo all's own in another)

    def learners(self) -> list[str]:
        """The class's learners, from its state file; [] without one; DamagedState (naming the file and
        ``kailab down``) when it cannot be read."""
        data = read_own_json(self.state_file, self._damaged)
        if data is None:
            return []
        names = data.get("learners") if isinstance(data, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise self._damaged("it holds no list of learners' names")
        for name in names:  # a name goes into paths and label selectors: only a learner's name will do
            try:
                check_prefix(name)
            except ValueError:
                raise self._damaged(f"{name[:80]!r} is not a learner's name") from None
        return names

    def _damaged(self, why: str) -> DamagedState:
        return DamagedState(
            f"The class's state file {self.state_file} is damaged: {why}.",
            hint="Remove the lab, its class with it, and start again: kailab down && kailab up",
        )

    def _write(self, learners: list[str]) -> None:
        if not learners:  # no class: no file (the lab's down then finds only what it wrote)
            self.forget()
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        write_own(self.state_file, json.dumps({"learners": learners}, indent=1), root=self.rt.home)

    def forget(self) -> None:
        """The class's state file gone: for a class whose cluster goes with it (kind, local), or that is empty."""
        self.state_file.unlink(missing_ok=True)

    def control(self, learner: str, kube: Kube) -> ShardSchedulerControl:
        """The learner's scheduler: their SchedulingShard (on kind, with the lab's Prometheus for time-based fair
        share: kailab/runtimes/kind_usage_db.py)."""
        usage_db = self.rt.scheduler_control().usage_db if isinstance(self.rt, KindRuntime) else None
        return ShardSchedulerControl(kube, learner, runs_usage_db=isinstance(self.rt, LocalRuntime), usage_db=usage_db)

    def cluster(self, learner: str, kube: Kube) -> LiveCluster:
        """The engine's view of the learner's slice: their owner labels, nodes and scheduler."""
        self.known(learner)
        control = self.control(learner, kube)
        return LiveCluster(
            kube, control, owner=plan.owner(learner), metrics=control.metrics, node_selector=plan.node_selector(learner)
        )

    def known(self, learner: str) -> None:
        """Refuse a name that is not one of the class's learners."""
        if learner not in self.learners():
            names = ", ".join(self.learners()) or "none"
            raise KailabError(
                f"No learner named {learner!r} in this lab's class (learners: {names}).",
                hint="Add them: kailab class up --learner NAME",
            )

    # -- the runtime's part ----------------------------------------------------------------------

    def check_runtime(self, kube: Kube, adding: int, available: int | None) -> None:
        """Refuse, before anything is applied, a cluster that cannot hold ``adding`` more partitions."""
        raise NotImplementedError

    def ready(self, kube: Kube) -> None:
        """Make sure something runs the shards (the local runtime's supervisor; KAI's operator elsewhere)."""

    def stop_scheduler(self, kube: Kube, learner: str) -> None:
        """The learner's scheduler gone at once: their shard deleted (what ran it stops it)."""
        kube.delete(SHARD_API, shards.KIND, shards.shard_name(learner))

    # -- up and down -------------------------------------------------------------------------

    def check(self, kube: Kube, roster: Roster, available: int | None = None) -> list[str]:
        """The learners to add (those not in the class yet); refuses, before anything is applied, a class too
        big for one lab, a cluster without what runs SchedulingShards (or, on the local runtime, a machine without
        the memory: ``available`` bytes, None psutil's figure now), or a partition whose label value is on nodes
        this class did not make."""
        have = self.learners()
        new = [n for n in roster.names if n not in have]
        if len(have) + len(new) > MAX_LEARNERS:
            raise RosterError(
                f"The class would have {len(have) + len(new)} learners; one lab holds at most {MAX_LEARNERS}.",
                hint="Remove some first: kailab class down --learner NAME",
            )
        self.check_runtime(kube, len(new), available)
        if new:
            selector = f"{NODEPOOL_LABEL} in ({','.join(new)})"
            taken = sorted(
                {
                    f"{n.metadata.name} ({NODEPOOL_LABEL}={n.metadata.labels.get(NODEPOOL_LABEL)})"
                    for n in kube.core.list_node(label_selector=selector).items
                    if (n.metadata.labels or {}).get(LEARNER_LABEL) != n.metadata.labels.get(NODEPOOL_LABEL)
                }
            )
            if taken:
                raise RosterError(
                    f"Nodes kailab did not make for this class are already in these partitions: "
                    f"{', '.join(taken)}. Nothing was applied.",
                    hint="Give those learners other names.",
                )
            theirs = [
                shards.shard_name(n)
                for n in new
                if (got := kube.get(SHARD_API, shards.KIND, shards.shard_name(n))) is not None
                and not plan.owner(n).owns(got["metadata"].get("labels"))
            ]
            if theirs:
                raise RosterError(
                    f"SchedulingShards kailab did not make for this class already exist: {', '.join(theirs)}. "
                    "Nothing was applied.",
                    hint="Give those learners other names.",
                )
        return new

    def up(
        self,
        kube: Kube,
        roster: Roster,
        fleet: Fleet,
        progress: Progress,
        out: Path | None = None,
        available: int | None = None,
        force: bool = False,
    ) -> list[str]:
        """Add the roster's new learners: their fleet, then their SchedulingShard; with ``out``, write every
        learner's kubeconfig there (classroom.access). Returns the learners added."""
        new = self.check(kube, roster, available)
        done = self.learners()
        if new:
            with progress.step(
                f"{'Learner' if len(new) == 1 else 'Learners'} {', '.join(new)}: {fleet.node_count} nodes "
                f"({fleet.total_gpus} GPUs) and a SchedulingShard <learner>-shard for partition "
                f"{NODEPOOL_LABEL}=<learner> each"
            ):
                self._write(done + new)  # first: a failure half-way is still removed by class down
                # At once: each partition mostly waits (nodes Ready, its scheduler's first cycle), 8 one after
                # another took 8 s on 2 busy cores. A client per thread (each its own connection pool).
                each(new, lambda learner: self.make(Kube(kube.kubeconfig, kube.context), fleet, learner))
                done += new
        if out is not None:
            with progress.step(f"Credentials: a kubeconfig per learner in {out}"):
                access.grant(kube, done, out, force)
        return new

    def make(self, kube: Kube, fleet: Fleet, learner: str) -> None:
        """A partition: the learner's fleet (labelled with their node pool), then their shard, until it runs."""
        create_fleet(
            kube,
            fleet,
            timeout=60,
            nodes=plan.nodes(fleet, learner),
            logs_hint="Is the KWOK controller running? See: kailab status",
        )
        self.ready(kube)
        kube.apply(shards.shard_object(learner, plan.owner(learner).labels))
        self.control(learner, kube).start()

    def remove(self, kube: Kube, learner: str, wait: bool = True) -> None:
        """A partition gone: the learner's objects and nodes, and their shard (so their scheduler); ``wait=False``
        leaves their namespaces terminating."""
        self.stop_scheduler(kube, learner)
        remove_learner(kube, learner, wait=wait)

    def down(self, kube: Kube, learners: list[str] | None, progress: Progress) -> list[str]:
        """Remove these learners (None: all): their scheduler, namespaces, queues, priority classes and nodes."""
        have = self.learners()
        if learners is None:
            learners = have
        unknown = [n for n in learners if n not in have]
        if unknown:
            raise KailabError(
                f"No learner named {', '.join(unknown)} in this lab's class.",
                hint=f"Learners: {', '.join(have) or 'none'}.",
            )
        if learners:
            with progress.step(
                f"Removing {'learner' if len(learners) == 1 else 'learners'} {', '.join(learners)}: credentials, "
                "schedulers, namespaces, queues and nodes"
            ):

                def remove(learner: str) -> None:
                    mine = Kube(kube.kubeconfig, kube.context)
                    access.revoke(mine, learner)
                    self.remove(mine, learner, wait=False)

                # All at once, then one wait for every namespace (one after another, 8 learners took 90 s).
                each(learners, remove)
                selector = f"{LAB_ID_LABEL} in ({','.join(plan.owner(n).lab_id for n in learners)})"
                if not wait_until_gone(lambda: kube.core.list_namespace(label_selector=selector).items, 120):
                    raise KailabError(
                        "These learners' namespaces were not deleted within 120s.",
                        hint=f"See what is left: kubectl get namespaces -l '{selector}'",
                    )
                self._write([n for n in self.learners() if n not in learners])
        if not self.learners():
            access.revoke_class(kube)
        return learners


class LocalClass(ShardClass):
    """A class on the local runtime: kailab's supervisor runs the shards as scheduler processes."""

    def __init__(self, runtime: LocalRuntime, state: str = STATE):
        super().__init__(runtime, runtime.home / "kai", state)  # the lab's KAI folder: `kailab down` removes it
        self.rt: LocalRuntime = runtime

    def check_runtime(self, kube: Kube, adding: int, available: int | None) -> None:
        if available is None:
            available = psutil.virtual_memory().available
        if short := plan.memory_shortfall(adding, available):
            fit = plan.partitions_that_fit(available)
            raise RosterError(
                f"This machine cannot hold the class: {short}. Nothing was applied.",
                hint=(
                    f"Add at most {fit} learner{'s' if fit != 1 else ''} now"
                    if fit
                    else "Free memory first (stop other programs or labs)"
                )
                + ", or hold the class on a machine with more memory.",
            )
        state = self.rt.state()
        if state is None or KAI_SCHEDULER_PROCESS not in state.kai_components:
            raise KailabError(
                "A class needs the local lab with KAI's scheduler; this lab runs without KAI.",
                hint="kailab down && kailab up, then kailab class up",
            )

    def ready(self, kube: Kube) -> None:
        """The supervisor running: started once per lab (by pid and start time like KAI's processes), under a file
        lock, since partitions are made in several threads (demo all) or by two kailab commands at once."""
        group = self.rt.kai_processes
        group.pids.mkdir(parents=True, exist_ok=True)
        with open(group.pids / f"{SHARD_SUPERVISOR}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if group.identity(SHARD_SUPERVISOR) is None:
                spec = shard_supervisor.process_spec(self.rt.home)
                group.start(spec)
                wait_healthy([spec], group, timeout=30)

    def stop_scheduler(self, kube: Kube, learner: str) -> None:
        """The shard deleted, and its process stopped now (the supervisor would, a moment later)."""
        super().stop_scheduler(kube, learner)
        LocalSchedulerControl(self.rt, name=shards.scheduler_name(learner)).stop()
        shutil.rmtree(self.folder / "partitions" / shards.shard_name(learner), ignore_errors=True)


class OperatorClass(ShardClass):
    """A class on kind or an existing cluster: KAI's operator runs the shards as scheduler Deployments, and KWOK's
    controller (which kind's lab and ``--kwok`` install) runs the learners' nodes."""

    def __init__(self, runtime: Runtime, state: str = STATE):
        super().__init__(runtime, runtime.home, state)

    def check_runtime(self, kube: Kube, adding: int, available: int | None) -> None:
        if missing := operator_missing(kube):
            raise KailabError(
                f"A class on the {self.rt.name} runtime needs {missing}. Nothing was applied.",
                hint="Install KAI Scheduler v0.17.0 with its Helm chart (its operator runs SchedulingShards), "
                "and KWOK (kailab up --runtime existing --kwok), then kailab class up again.",
            )
        fit, each = schedulers_that_fit(kube)
        if fit is not None and adding > fit:
            raise RosterError(
                f"The cluster's nodes have room for {fit} more scheduler{'s' if fit != 1 else ''}, and each learner "
                f"needs one ({each}, as KAI's operator asks for every shard's scheduler). Nothing was applied.",
                hint=(f"Add at most {fit} learner{'s' if fit != 1 else ''} now" if fit else "Free room on the nodes")
                + ", or hold the class on a machine (kind) or cluster with more CPU and memory, "
                "or on the local runtime (about 0.2 GiB a learner).",
            )


def operator_missing(kube: Kube) -> str:
    """What a class on a cluster kailab does not run KAI on needs and the cluster lacks, in words ("" nothing): the
    SchedulingShard CRD, KAI's operator (a Deployment ``kai-operator``, as KAI's chart names it) and KWOK's
    controller (``kube-system/kwok-controller``) for the learners' nodes."""
    if not shards.serves_shards(kube):
        return f"KAI's SchedulingShard CRD ({shards.CRD}), which this cluster does not serve"
    operators = kube.apps.list_deployment_for_all_namespaces(field_selector="metadata.name=kai-operator").items
    if not any((d.status.ready_replicas or 0) > 0 for d in operators):
        return "KAI's operator (a Deployment kai-operator, Ready), which turns SchedulingShards into schedulers"
    kwok = kube.apps.list_namespaced_deployment("kube-system", field_selector="metadata.name=kwok-controller").items
    if not kwok:
        return "KWOK's controller (kube-system/kwok-controller), which runs the learners' nodes"
    return ""


def schedulers_that_fit(kube: Kube) -> tuple[int | None, str]:
    """How many more shard schedulers the cluster's nodes have room for, as kube-scheduler counts room (allocatable
    CPU and memory less the requests of the pods there, on nodes whose taints the scheduler's pod tolerates), and
    one scheduler's requests in words; (None, "") when no shard's scheduler runs yet to read its requests from."""
    from kailab.quantity import amount

    made = [  # kai-scheduler-<shard> (shards.shard_scheduler): the chart's default shard's at least
        d
        for d in kube.apps.list_namespaced_deployment(KAI_NAMESPACE).items
        if d.metadata.name.startswith(KAI_SCHEDULER_NAME + "-")
    ]
    if not made:
        return None, ""
    pod = made[0].spec.template.spec
    want = {"cpu": 0.0, "memory": 0.0}
    for c in pod.containers:
        for r in want:
            want[r] += amount(str(((c.resources and c.resources.requests) or {}).get(r, "0")))
    if not any(want.values()):
        return None, ""
    fit = 0
    for node in kube.core.list_node().items:
        if node.spec.unschedulable or not _tolerated(node.spec.taints or [], pod.tolerations or []):
            continue
        free = {r: amount(str((node.status.allocatable or {}).get(r, "0"))) for r in want}
        on_node = kube.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.metadata.name}").items
        for p in on_node:
            if p.status.phase in ("Succeeded", "Failed"):
                continue
            for c in p.spec.containers:
                for r in want:
                    free[r] -= amount(str(((c.resources and c.resources.requests) or {}).get(r, "0")))
        fit += max(0, int(min(free[r] // want[r] for r in want if want[r])))
    each = f"{want['cpu']:g} CPU and {want['memory'] / 2**30:.2g} GiB"
    return fit, each


def _tolerated(taints, tolerations) -> bool:
    """Every NoSchedule or NoExecute taint is tolerated (by key, value or Exists, and effect)."""

    def tolerates(t, taint) -> bool:
        if t.effect and t.effect != taint.effect:
            return False
        if not t.key:
            return t.operator == "Exists"
        return t.key == taint.key and (t.operator == "Exists" or (t.value or "") == (taint.value or ""))

    return all(
        any(tolerates(t, taint) for t in tolerations) for taint in taints if taint.effect in ("NoSchedule", "NoExecute")
    )


def class_of(runtime: Runtime, state: str = STATE) -> ShardClass:
    """The class of the lab this runtime runs."""
    return LocalClass(runtime, state) if isinstance(runtime, LocalRuntime) else OperatorClass(runtime, state)


def remove_learner(kube: Kube, learner: str, timeout: float = 120, wait: bool = True) -> None:
    """Delete every object of the learner's (by their owner labels) and their nodes; with ``wait``, until their
    namespaces are gone."""
    owner = plan.owner(learner)
    selector = owner.selector()
    namespaces = [ns.metadata.name for ns in kube.core.list_namespace(label_selector=selector).items]
    for name in namespaces:
        kube.empty_namespace(name)
        kube.delete("v1", "Namespace", name)
    for api, kind in CLUSTER_KINDS:
        for obj in kube.list(api, kind, label_selector=selector):
            kube.delete(api, kind, obj["metadata"]["name"])
    kube.core.delete_collection_node(label_selector=f"{plan.node_selector(learner)},{selector}")
    # Gone, not only going: a class up right after (the same learner again) would find them terminating.
    if wait and not wait_until_gone(lambda: kube.core.list_namespace(label_selector=selector).items, timeout):
        raise KailabError(
            f"{learner}'s namespaces were not deleted within {timeout:.0f}s.",
            hint=f"See what is left: kubectl get namespaces -l {selector}",
        )


AT_ONCE = 8  # learners made or removed at the same time (a class holds up to MAX_LEARNERS)


def each(learners: list[str], work) -> None:
    """``work(learner)`` for the learners, AT_ONCE at a time, each in a thread; the first error is raised once all
    have ended."""
    if len(learners) <= 1:
        for learner in learners:
            work(learner)
        return
    with ThreadPoolExecutor(max_workers=min(AT_ONCE, len(learners))) as pool:
        for future in [pool.submit(work, learner) for learner in learners]:
            future.result()


def wait_until_gone(listing, timeout: float) -> bool:
    """Poll ``listing`` until it is empty; False at the timeout (the namespace controller deletes in rounds)."""
    deadline = time.monotonic() + timeout
    while listing():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True
