"""A class on the local runtime: per learner a lesson fleet and a KAI scheduler process of their own.

Why processes the lab starts, and not SchedulingShard objects watched by a supervisor: on the local runtime
every KAI component is a process the lab started and knows by pid and start time (kai/pids/), and ``kailab
down`` stops them all; a learner's scheduler is one more of them (``kai-scheduler-<learner>``, started with
``--partition-label-value=<learner>``), so stopping, starting and reconfiguring it — what the placement,
consolidation and fair-share lessons do — is the lab's own scheduler control pointed at that process, with
no second way to run a scheduler. The price: only the machine that holds the lab folder can change a
learner's scheduler. A learner who has only a kubeconfig needs the settings in the cluster instead — a
SchedulingShard per learner (``kai.scheduler/v1``, which KAI's operator turns into a scheduler on kind and
existing clusters) and a supervisor here that turns shards into these processes. That is not built yet.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import psutil

from kailab.classroom import access, plan
from kailab.classroom.roster import MAX_LEARNERS, Roster, RosterError
from kailab.errors import KailabError
from kailab.fleet import Fleet, create_fleet
from kailab.kube import Kube
from kailab.labels import KAI_SCHEDULER_PROCESS, LEARNER_LABEL, NODEPOOL_LABEL
from kailab.ownership import CLUSTER_KINDS
from kailab.progress import Progress
from kailab.runtimes.local import LocalRuntime, LocalSchedulerControl
from kailab.scenarios.live import LiveCluster

STATE = "class.json"  # in the lab's KAI folder, which `kailab down` removes with the processes


class LocalClass:
    """The class of a running local lab: its learners, their partitions, their clusters as the engine sees them."""

    def __init__(self, runtime: LocalRuntime, state: str = STATE):
        self.rt = runtime
        self.folder = runtime.home / "kai"
        self.state_file = self.folder / state  # the partitions this lab made (a class's; demo all's own in another)

    def learners(self) -> list[str]:
        try:
            data = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return []
        names = data.get("learners") if isinstance(data, dict) else None
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def _write(self, learners: list[str]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps({"learners": learners}, indent=1))

    def control(self, learner: str) -> LocalSchedulerControl:
        """The learner's scheduler: the lab's scheduler control, for their process and partition."""
        return LocalSchedulerControl(
            self.rt,
            name=plan.scheduler_process(learner),
            partition=learner,
            workdir=self.folder / "partitions" / learner,
        )

    def cluster(self, learner: str, kube: Kube) -> LiveCluster:
        """The engine's view of the learner's slice: their owner labels, nodes and scheduler."""
        self.known(learner)
        control = self.control(learner)
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

    # -- up and down -------------------------------------------------------------------------

    def check(self, kube: Kube, roster: Roster, available: int | None = None) -> list[str]:
        """The learners to add (those not in the class yet); refuses, before anything is applied, a class too
        big for one lab or for this machine's available memory (bytes; None: psutil's figure now), or a
        partition whose label value is on nodes this class did not make."""
        have = self.learners()
        new = [n for n in roster.names if n not in have]
        if len(have) + len(new) > MAX_LEARNERS:
            raise RosterError(
                f"The class would have {len(have) + len(new)} learners; one lab holds at most {MAX_LEARNERS}.",
                hint="Remove some first: kailab class down --learner NAME",
            )
        if available is None:
            available = psutil.virtual_memory().available
        if short := plan.memory_shortfall(len(new), available):
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
        return new

    def up(
        self,
        kube: Kube,
        roster: Roster,
        fleet: Fleet,
        progress: Progress,
        out: Path | None = None,
        available: int | None = None,
    ) -> list[str]:
        """Add the roster's new learners: their fleet, then their scheduler; with ``out``, write every learner's
        kubeconfig there (classroom.access). Returns the learners added."""
        new = self.check(kube, roster, available)
        done = self.learners()
        for learner in new:
            with progress.step(
                f"Learner {learner}: {fleet.node_count} nodes ({fleet.total_gpus} GPUs) and a scheduler "
                f"for partition {NODEPOOL_LABEL}={learner}"
            ):
                self._write(done + [learner])  # first: a failure half-way is still removed by class down
                self.make(kube, fleet, learner)
                done.append(learner)
        if out is not None:
            with progress.step(f"Credentials: a kubeconfig per learner in {out}"):
                access.grant(kube, done, out)
        return new

    def make(self, kube: Kube, fleet: Fleet, learner: str) -> None:
        """A partition: the learner's fleet (labelled with their node pool), then their scheduler."""
        create_fleet(
            kube,
            fleet,
            timeout=60,
            nodes=plan.nodes(fleet, learner),
            logs_hint="Is the KWOK controller running? See: kailab status",
        )
        self.control(learner).start()

    def remove(self, kube: Kube, learner: str, wait: bool = True) -> None:
        """A partition gone: the learner's objects and nodes, their scheduler and its folder; ``wait=False``
        leaves their namespaces terminating."""
        remove_learner(kube, learner, wait=wait)
        self.control(learner).stop()
        shutil.rmtree(self.folder / "partitions" / learner, ignore_errors=True)

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
        for learner in learners:
            with progress.step(f"Removing learner {learner}: credential, scheduler, namespaces, queues and nodes"):
                access.revoke(kube, learner)
                self.remove(kube, learner)
                self._write([n for n in self.learners() if n != learner])
        if not self.learners():
            access.revoke_class(kube)
        return learners


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


def wait_until_gone(listing, timeout: float) -> bool:
    """Poll ``listing`` until it is empty; False at the timeout (the namespace controller deletes in rounds)."""
    deadline = time.monotonic() + timeout
    while listing():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True
