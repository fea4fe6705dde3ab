"""A class on one cluster: per learner a lesson fleet and a KAI partition of their own, and a credential.

Each learner's partition is KAI's own object, a SchedulingShard (``kailab/shards.py``, ``kailab/partitions.py``):
``class up`` makes their KWOK nodes (labelled with their node pool) and their shard, then waits until a scheduler
runs it. What runs it is the runtime's (a :class:`~kailab.runtimes.base.PartitionHost`, which the class holds):
KAI's operator turns the shard into a scheduler Deployment on kind and existing clusters; on the local runtime,
which runs KAI's components as processes and no operator, kailab's supervisor (``runtimes/shard_supervisor.py``, a
process the lab starts and ``kailab down`` stops) turns it into a ``kai-scheduler`` process started with
``--partition-label-value=<learner>``. Either way a learner's scheduler settings — what the placement,
consolidation and fair-share lessons change — live in their shard, so the engine changes them through the API
server (:class:`~kailab.shards.ShardSchedulerControl`), from the instructor's machine or, with only their
kubeconfig, from the learner's.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from kailab import network, partitions, shards
from kailab.checks import Verdict
from kailab.classroom import access, grading, records
from kailab.classroom.roster import MAX_LEARNERS, Roster
from kailab.errors import KailabError, RosterError
from kailab.fleet import Fleet
from kailab.kube import Kube, as_json
from kailab.labels import JOINED_LABEL, LAB_ID_LABEL, LEARNER_LABEL, NODEPOOL_LABEL, SHARD_API
from kailab.partitions import CLASS_STATE, Partitions, each, wait_until_gone
from kailab.paths import EXERCISES
from kailab.progress import Progress
from kailab.runtimes.base import PartitionHost, SchedulerControl
from kailab.scenarios.engine import Engine
from kailab.scenarios.live import LiveCluster
from kailab.scenarios.loader import load_scenario


class Class:
    """The class of a running lab: its learners (the partitions it made, :class:`~kailab.partitions.Partitions`),
    their clusters as the engine sees them, their credentials. ``host``: the runtime's part (what runs shards)."""

    def __init__(self, host: PartitionHost, state: str = CLASS_STATE, address: str = "", adopted: bool = False):
        """``address``: where the lab's API server answers beyond loopback (``kailab up --address``; "" loopback
        only); ``adopted``: the cluster is one kailab did not make (its API server is where the instructor's
        kubeconfig names it)."""
        self.parts = Partitions(host, state)
        self.host = host
        self.state_file = self.parts.state_file
        self.address = address
        self.adopted = adopted

    def learners(self) -> list[str]:
        return self.parts.names()

    def forget(self) -> None:
        """The class's state file gone: for a class whose cluster goes with it (kind, local), or that is empty."""
        self.parts.forget()

    def control(self, learner: str, kube: Kube) -> SchedulerControl:
        """The learner's scheduler: their SchedulingShard."""
        return self.parts.control(learner, kube)

    def cluster(self, learner: str, kube: Kube) -> LiveCluster:
        """The engine's view of the learner's slice: their owner labels, nodes and scheduler."""
        self.known(learner)
        return self.parts.cluster(learner, kube)

    def known(self, learner: str) -> None:
        """Refuse a name that is not one of the class's learners."""
        if learner not in self.learners():
            names = ", ".join(self.learners()) or "none"
            raise KailabError(
                f"No learner named {learner!r} in this lab's class (learners: {names}).",
                hint="Add them: kailab class up --learner NAME",
            )

    def run(self, kube: Kube, learner: str, names: list[str], progress: Progress) -> list[Verdict]:
        """Play these exercises, one after another, as ``learner``: their names, nodes and scheduler; each kept in
        their namespace, where the instructor reads it (``class status``)."""
        scenarios = [partitions.for_partition(load_scenario(EXERCISES / f"{n}.yaml"), learner) for n in names]
        engine = records.Recording(Engine(self.cluster(learner, kube), progress), kube, learner)
        engine.refuse_foreign(scenarios)
        return [engine.run(s) for s in scenarios]

    def status(self, kube: Kube, stuck_after: float) -> dict:
        """``class status``: learners × lessons (classroom/records.py), task grades from the learners' recordings
        (classroom/grading.py), whose scheduler runs and who has joined (classroom/joined.py) — one list of shards
        and one of join marks for the whole class."""
        from kailab.classroom.grading import grades

        learners = self.learners()
        report = records.class_status(kube, learners, stuck_after=stuck_after)
        for name, theirs in grades(kube, learners).items():
            report[name]["tasks"] = theirs
        found = {s["metadata"]["name"]: s for s in kube.list(SHARD_API, shards.KIND)}
        for name, joined in joined_states(kube, learners).items():
            shard = found.get(shards.shard_name(name))
            report[name]["scheduler"] = (
                "missing" if shard is None else "running" if shards.runs(shard, name) else "stopped"
            )
            report[name]["joined"] = joined
        return report

    def page(self, kube: Kube, out: Path, stuck_after: float, force: bool = False) -> list[Path]:
        """``class evidence``: the class's status as a page (classroom/report.py), with each learner's timelines
        and task grades (classroom/grading.py); a file at ``out`` that kailab did not write is replaced only with
        ``force`` (:mod:`kailab.outfile`)."""
        from kailab.classroom import report
        from kailab.classroom.grading import grades
        from kailab.lesson import lesson_names

        learners = self.learners()
        status = records.class_status(kube, learners, stuck_after=stuck_after, timelines=True)
        for name, theirs in grades(kube, learners).items():
            status[name]["tasks"] = theirs
        return report.write(status, lesson_names(), out, force)

    def learners_server(self, kube: Kube, asked: str | None = None) -> tuple[str, str]:
        """(the API server address the learners' kubeconfigs name, what ``class up`` says about it): the address the
        lab was brought up at (``kailab up --address``), else its loopback, which works on this machine only; on a
        cluster kailab did not make, the API server as the instructor's kubeconfig names it. ``asked``: the address
        ``class up --address`` gave, refused (before anything is applied) unless it is the lab's."""
        host = kube.api.configuration.host
        if self.adopted:
            if asked:
                raise KailabError(
                    f"--address is for labs kailab makes; on a cluster it adopts, learners reach its API server as your "
                    f"kubeconfig names it ({host}).",
                    hint="Leave --address out (the kubeconfig's server must be one your learners reach).",
                )
            return host, f"The learners' kubeconfigs name {host}, as yours does: it must be an address they reach."
        have = self.address
        if asked is not None:
            asked = network.check_address(asked)
            if asked != have:
                where = f"at {have}" if have else "on this machine's loopback only"
                raise KailabError(
                    f"The lab's API server listens {where}, not at {asked}. Nothing was applied.",
                    hint=f"Bring the lab up at that address first: kailab down && kailab up --address {asked}, "
                    "then kailab class up again.",
                )
        if not have:
            return host, (
                f"The learners' kubeconfigs name {host}, this machine's loopback: they work on this machine only. "
                "For learners on their own laptops: kailab down && kailab up --address <this machine's address>."
            )
        server = network.with_host(host, have)
        port = urllib.parse.urlsplit(server).port
        others = [
            f"{name} on {network.host_port(at, p)}" for name, at, p in self.host.open_beyond_loopback() if p != port
        ]
        said = (
            f"Learners reach the lab at {server} (TCP port {port}): its API server, with the kubeconfig each is given."
            + (
                " Nothing else of the lab listens beyond this machine's loopback."
                if not others
                else f" Also listening beyond this machine's loopback: {', '.join(others)}."
            )
        )
        return server, said

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
        self.host.check(kube, len(new), available)
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
                and not partitions.owner(n).owns(got["metadata"].get("labels"))
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
        server: str | None = None,
        force: bool = False,
    ) -> list[str]:
        """Add the roster's new learners: their fleet, then their SchedulingShard; with ``out``, write every
        learner's kubeconfig there (classroom.access), naming ``server`` (None: the API server as ``kube`` reaches
        it; one that kailab did not write is replaced only with ``force``, and that is checked before anything is
        applied). Returns the learners added."""
        if out is not None:
            access.check_out(out, [*self.learners(), *roster.names], force)
        new = self.check(kube, roster, available)
        done = self.learners()
        if new and (slow := self.host.cores_short(len(done) + len(new))):
            progress.info(f"This machine is slow for the class: {slow}. Every verdict still comes.", style="yellow")
        if new:
            with progress.step(
                f"{'Learner' if len(new) == 1 else 'Learners'} {', '.join(new)}: {fleet.node_count} nodes "
                f"({fleet.total_gpus} GPUs) and a SchedulingShard <learner>-shard for partition "
                f"{NODEPOOL_LABEL}=<learner> each"
            ):
                self.parts.write(done + new)  # first: a failure half-way is still removed by class down
                # At once: each partition mostly waits (nodes Ready, its scheduler's first cycle), 8 one after
                # another took 8 s on 2 busy cores. A client per thread (each its own connection pool).
                each(new, lambda learner: self.parts.make(Kube(kube.kubeconfig, kube.context), fleet, learner))
                done += new
        if out is not None:
            with progress.step(f"Credentials: a kubeconfig per learner in {out}"):
                access.grant(kube, done, out, force, self.host.usage_db_url(), server)
        return new

    def add(
        self,
        kube: Kube,
        roster: Roster,
        fleet: Fleet,
        progress: Progress,
        out: Path | None = None,
        server: str | None = None,
    ) -> list[str]:
        """``class add``: late joiners, each a partition and (with ``out``) a kubeconfig of their own; nobody else's
        partition or kubeconfig is touched. A name already in the class is refused before anything is applied."""
        have = [n for n in roster.names if n in self.learners()]
        if have:
            raise RosterError(
                f"Already in this lab's class: {', '.join(have)}. Nothing was applied.",
                hint="A learner whose slice is in a bad state: kailab class reset --learner NAME",
            )
        added = self.up(kube, roster, fleet, progress, available=None)
        if out is not None:
            with progress.step(f"Credentials: a kubeconfig for {', '.join(added)} in {out}"):
                access.grant(kube, added, out, False, self.host.usage_db_url(), server)
        return added

    def reset(self, kube: Kube, learners: list[str], fleet: Fleet, progress: Progress) -> list[str]:
        """``class reset``: these learners' slices back to clean (:meth:`~kailab.partitions.Partitions.reset`) —
        their records and credential kept, so their kubeconfig keeps working; nobody else's slice is touched. A name
        not in the class is refused before anything is changed."""
        unknown = [n for n in learners if n not in self.learners()]
        if unknown or not learners:
            raise KailabError(
                f"No learner named {', '.join(unknown)} in this lab's class."
                if unknown
                else "Say whose slice to reset: --learner NAME.",
                hint=f"Learners: {', '.join(self.learners()) or 'none'}.",
            )
        with progress.step(
            f"Resetting {', '.join(learners)}: scheduler to the lab's defaults, lesson namespaces emptied, queues and "
            "priority classes deleted, nodes made again (records and credentials kept)"
        ):
            each(learners, lambda learner: self.parts.reset(Kube(kube.kubeconfig, kube.context), fleet, learner))
        return learners

    def down(self, kube: Kube, learners: list[str] | None, progress: Progress) -> list[str]:
        """Remove these learners (None: all): their scheduler, namespaces, queues, priority classes and nodes."""
        have = self.learners()
        if learners is None:
            learners = have
        unknown = [n for n in learners if n not in have]
        if unknown:
            raise KailabError(
                f"No learner named {', '.join(repr(n[:80]) for n in unknown)} in this lab's class.",
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
                    self.parts.remove(mine, learner, wait=False)

                # All at once, then one wait for every namespace (one after another, 8 learners took 90 s).
                each(learners, remove)
                selector = f"{LAB_ID_LABEL} in ({','.join(partitions.owner(n).lab_id for n in learners)})"
                if not wait_until_gone(lambda: kube.core.list_namespace(label_selector=selector).items, 120):
                    raise KailabError(
                        "These learners' namespaces were not deleted within 120s.",
                        hint=f"See what is left: kubectl get namespaces -l '{selector}'",
                    )
                self.parts.write([n for n in self.learners() if n not in learners])
        if not self.learners():
            access.revoke_class(kube)
            grading.remove(kube)
        return learners

    def store_tasks(self, kube: Kube, own: list[grading.StoredTask], progress: Progress) -> list[str]:
        """The built-in tasks and the instructor's ``own`` (which replace a built-in one of the same name) stored in
        the cluster, their hidden checks where no learner reads them (classroom/grading.py). Returns their names."""
        everyone = {s.id: s for s in [*grading.built_in(), *own]}
        with progress.step(f"Tasks: {len(everyone)} stored ({len(own)} of yours), their checks hidden from learners"):
            grading.store(kube, list(everyone.values()))
        return [s.task.name for s in everyone.values()]


def joined_states(kube: Kube, learners: list[str]) -> dict[str, dict | None]:
    """learner → their join as its mark says (:func:`kailab.classroom.joined.join_states`), from one list."""
    from kailab.classroom.joined import join_states

    marks = as_json(kube.core.list_config_map_for_all_namespaces)(label_selector=JOINED_LABEL)["items"]
    return join_states(learners, marks)
