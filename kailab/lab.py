"""The lab one command acts on, opened once: the user's own lab, or a learner's slice of a class.

``Lab.open(home)`` gives an :class:`OwnLab` (``lab.json``, read once, names the runtime, built once) or a
:class:`LearnerSlice` (the folder joined a class: ``kailab join``, kailab/classroom/joined.py). Either has a connected
client (:attr:`Lab.kube`), the owner labels of what it makes, the :class:`View` of what it sees (kailab/view.py:
queues, nodes, namespaces, fair shares), its scenarios as it runs them (prefixed, or renamed for a learner), and a
:meth:`Lab.session` that alone checks the evidence folder, builds the engine, refuses foreign objects, runs and keeps
each verdict (evidence; a lesson's record in the cluster). What differs between the two is the difference of two
classes.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from kailab import labdir
from kailab.errors import KailabError, NotRunning
from kailab.labstate import LabState
from kailab.lesson import scenario_file
from kailab.ownership import Owner
from kailab.paths import lab_home
from kailab.progress import Progress
from kailab.runtimes.base import Capabilities
from kailab.view import View, learner_view

if TYPE_CHECKING:
    from kailab.checks import Verdict
    from kailab.classroom.joined import Joined
    from kailab.classroom.klass import Class
    from kailab.explain import Explanation
    from kailab.kube import Kube
    from kailab.runtimes.base import LabInfo, Runtime, UpOptions
    from kailab.scenarios.engine import Engine
    from kailab.scenarios.live import LiveCluster
    from kailab.scenarios.model import Scenario
    from kailab.scenarios.objects import QueueFile
    from kailab.session import Session


class Lab(ABC):
    """The lab in ``home`` as one command sees it (see the module)."""

    def __init__(self, home: Path):
        self.home = home

    @property
    def learner(self) -> str | None:
        """The class's learner whose slice this is; None: a lab of one's own."""
        return None

    @staticmethod
    def open(home: Path | None = None) -> OwnLab | LearnerSlice:
        """The lab in ``home`` (KAILAB_HOME's by default): a learner's slice when the folder joined a class."""
        from kailab.classroom.joined import current

        home = home or lab_home()
        labdir.check_home(home)
        joined = current(home)
        return OwnLab(home) if joined is None else LearnerSlice(home, joined)

    @cached_property
    def state(self) -> LabState | None:
        """``lab.json``, read once; None when no lab is up; DamagedState when it cannot be used."""
        from kailab.runtimes import runtime_names

        return LabState.read(self.home, runtime_names())

    @abstractmethod
    def kubeconfig(self) -> Path:
        """The lab's kubeconfig; ``KAILAB_KUBECONFIG`` points kailab at any other cluster."""

    def context(self) -> str | None:
        """The kubeconfig's context the lab uses (an adopted cluster's ``--context``); None: its current one."""
        return None

    @cached_property
    def kube(self) -> Kube:
        """A client for the lab; a clear error when the lab is not up or does not answer."""
        from kailab.kube import Kube

        path = self.kubeconfig()
        clears = None if os.environ.get("KAILAB_KUBECONFIG") else self.CLEARS  # the user's own file: its error says
        try:
            if not os.path.lexists(path):  # anything else there is read by the rule for files kailab reads, and said
                raise NotRunning(f"The lab's kubeconfig {path} is missing.", hint="Unset KAILAB_KUBECONFIG.")
            kube = Kube(path, context=self.context())
        except KailabError as e:  # a damaged credential names itself and the one command that clears it
            raise type(e)(e.message, hint=clears or e.hint, details=e.details) from None
        self._answers(kube, path)
        return kube

    CLEARS = "Start again: kailab down && kailab up"  # what clears a kubeconfig of the lab's that cannot be used

    @abstractmethod
    def _answers(self, kube: Kube, path: Path) -> None:
        """Raise a clear error when the lab's API server does not answer this client."""

    @property
    @abstractmethod
    def owner(self) -> Owner:
        """Whose objects the lab's are: the labels it stamps on what it makes and selects by."""

    @cached_property
    @abstractmethod
    def view(self) -> View:
        """What this lab sees of its cluster."""

    @abstractmethod
    def scenario(self, scenario: Scenario) -> Scenario:
        """The scenario as this lab runs it: its names prefixed (a lab's ``--prefix``) or renamed (a learner's)."""

    def exercise(self, name: str) -> Scenario:
        """A built-in exercise (or a lesson's variation), as this lab runs it."""
        from kailab.scenarios.loader import load_scenario

        return self.scenario(load_scenario(scenario_file(name)))

    @abstractmethod
    def cluster(self, kube: Kube) -> LiveCluster:
        """The engine's view of this lab: its scheduler control and metrics (where it has them), owner, fleet."""

    def engine(self, kube: Kube, progress: Progress, record: Path | None = None) -> Engine:
        """The engine that plays this lab's scenarios, keeping each lesson in the cluster as it goes (started, each
        expectation decided, its verdict: kailab/classroom/records.py) — for the pages (kailab/web) and a learner's
        instructor's ``class status``."""
        from kailab.classroom.records import Recording
        from kailab.scenarios.engine import Engine

        played = Engine(self.cluster(kube), progress, record=record)
        return Recording(played, kube, self.learner, self.owner)  # type: ignore[return-value]

    def keep(self, verdict: Verdict, prediction: str, graded: list) -> None:
        """A lesson's verdict and predictions (free text, and graded ones right or wrong), kept in its namespace
        beside the evidence: for the pages and, a learner's, for the instructor's ``class status``."""
        from kailab.classroom.records import kept_attempts, record_object, with_attempts

        kept = kept_attempts(self.kube, verdict.scenario, verdict.namespace)  # the earlier tries stay beside it
        self.kube.apply(with_attempts(record_object(self.learner, verdict, prediction, graded, self.owner), kept))

    def session(self, progress: Progress, record: Path | None = None) -> Session:
        """A run of scenarios on this lab (kailab/session.py): the lab answers and can keep verdicts, or nothing
        runs."""
        from kailab.session import Session

        return Session(self, progress, record)

    # -- what the commands ask of it ------------------------------------------------------------------------------

    @property
    def runtime(self) -> Runtime | None:
        """The runtime that made the lab; None for a learner's slice (the class's is the instructor's)."""
        return None

    @property
    def capabilities(self) -> Capabilities:
        """What this lab offers beyond a kubeconfig (:class:`~kailab.runtimes.base.Capabilities`)."""
        return Capabilities()

    def info(self) -> LabInfo:
        """The running lab's components; NotRunning when there is none."""
        raise no_lab(self.home)

    def status(self, with_queues: bool) -> dict:
        """``kailab status``: components, GPU nodes, and with ``with_queues`` each queue with its fair share."""
        from kailab.status import lab_status

        info = self.info()
        try:
            kube = self.kube
        except NotRunning:
            kube = None
        fair_shares = self.view.fair_shares() if with_queues and kube else None
        return lab_status(info, kube, with_queues, fair_shares, self.view.metrics, self.view if kube else None)

    def lesson_queues(self) -> tuple[QueueFile, ...]:
        """The lesson's queue hierarchy (manifests/queues.yaml), named as this lab names its queues."""
        from kailab.scenarios.loader import LESSON_QUEUES, load_queue_file
        from kailab.scenarios.prefix import prefixed_queues

        specs = load_queue_file(LESSON_QUEUES)
        return prefixed_queues(specs, self.prefix) if self.prefix else specs

    @property
    def prefix(self) -> str:
        """What this lab puts in front of its queue and namespace names ("" nothing)."""
        return ""

    def apply_lesson_queues(self, progress: Progress) -> list[dict]:
        """``kailab queues``: apply the lesson's queues (none that is another's), then list this lab's queues."""
        from kailab import ownership
        from kailab.scenarios.loader import LESSON_QUEUES
        from kailab.scenarios.manifests import queue_object
        from kailab.status import queues

        kube = self.kube
        specs = self.lesson_queues()
        objects = [queue_object(q) for q in specs]
        cluster = self.cluster(kube)
        if taken := cluster.foreign(objects):
            raise ownership.refused(taken)
        with progress.step(f"Applying {len(specs)} queues from {LESSON_QUEUES.name}"):
            for obj in objects:
                cluster.apply(obj)
        return queues(kube, self.view.pods(kube), self.view.fair_shares(), self.view.queues)

    def explain(self, name: str, namespace: str) -> list[Explanation]:
        """``kailab explain``: why each pod of that name (or of that Job) is where it is."""
        from kailab.explain import Scope, gather

        kube, view = self.kube, self.view
        pods = view.pods(kube) if view.nodes else None
        return gather(kube, name, namespace, Scope(view.fair_shares(), pods, view.nodes, view.per_queue("usage")))

    def frame(self, view: View | None = None):
        """One frame of ``kailab watch``: this lab's queues and every GPU of its nodes (or ``view``'s: a learner's)."""
        from kailab.watch import current_frame

        kube, view = self.kube, view or self.view
        return current_frame(kube, view.pods(kube), view.fair_shares(), view.queues, view.nodes)

    def watch(self, console, view: View | None = None) -> None:
        """``kailab watch``: frames redrawn on every pod change, until Ctrl-C."""
        from kailab import watch

        kube, view = self.kube, view or self.view
        shown = (view.queues, view.nodes)
        watch.run(kube, console, fair_shares=view.fair_shares, namespaces=view.pod_namespaces(kube), selectors=shown)

    def capture(self, progress: Progress, what: str, out: Path | None = None, allow_empty: bool = False) -> Path | None:
        """Snapshot this lab into evidence/<UTC timestamp>/ (or ``out``); None when there is nothing to capture and
        ``allow_empty`` says that is fine."""
        from kailab import evidence as ev
        from kailab.labels import SCENARIO_LABEL

        kube = self.kube
        try:
            with progress.step(f"Capturing evidence {what}") as step:
                path = ev.capture(
                    kube,
                    self.home,
                    Path.cwd() / "evidence",
                    out,
                    self.view.fair_shares(),
                    namespaces=self.owner.selector(SCENARIO_LABEL),
                    slice_of=(self.view.queues, self.view.nodes),
                )
                step.note(str(path))
        except ev.NothingToCapture as e:
            if allow_empty:
                progress.info(f"Nothing to capture {what}: {e}")
                return None
            raise KailabError(f"Nothing captured: {e}", hint="Run an exercise first, e.g. kailab demo quota") from e
        except OSError as e:  # --out that exists, under a file, in /proc, on a full disk
            if isinstance(e, FileExistsError) and e.errno is None:  # write_snapshot's own: it never overwrites
                raise KailabError(f"Nothing captured: {e}.", hint="Choose another --out.") from e
            why = (
                "a file is in the way" if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror or str(e)
            )
            raise KailabError(
                f"Nothing captured: cannot write {e.filename or out or 'the evidence folder'}: {why}.",
                hint="Choose an --out in a folder you can write.",
            ) from None
        return path

    def up(
        self, options: UpOptions, requested: str, progress: Progress, show_findings: Callable[[list], None]
    ) -> LabInfo:
        """``kailab up``: the runtime of the lab that runs (``lab.json``), else the one ``requested``, brings it up
        (:func:`kailab.runtimes.bring_up`)."""
        from kailab.runtimes import bring_up

        return bring_up(self.home, self.state, options, requested, progress, show_findings)

    @abstractmethod
    def remove(self, progress: Progress) -> None:
        """``kailab down``."""

    @abstractmethod
    def side_by_side(self) -> tuple[int, str]:
        """How many lessons fit side by side here, each in a partition of its own, and why not ("" they fit):
        :func:`kailab.parallel.at_once` weighs it against what was asked."""

    def klass(self) -> Class:
        """The running lab's class; a clear error without a lab, or where the class is not this lab's to change."""
        raise no_lab(self.home)


def no_lab(home: Path) -> NotRunning:
    """No lab runs in ``home``: start one (a learner who left their class was told how to join again)."""
    return NotRunning("No lab is running.", hint="Start one: kailab up")


class OwnLab(Lab):
    """The user's own lab: ``lab.json`` names the runtime that made it (or ``KAILAB_KUBECONFIG`` names a cluster)."""

    @cached_property
    def runtime(self) -> Runtime | None:
        from kailab.runtimes import get_runtime

        state = self.state
        return None if state is None else get_runtime(state.runtime)(self.home, state=state)

    @cached_property
    def capabilities(self) -> Capabilities:
        return self.runtime.capabilities() if self.runtime is not None else Capabilities()

    def kubeconfig(self) -> Path:
        if os.environ.get("KAILAB_KUBECONFIG"):
            return Path(os.environ["KAILAB_KUBECONFIG"])
        if self.state is None:
            raise no_lab(self.home)
        return Path(self.state.kubeconfig)

    def context(self) -> str | None:
        if os.environ.get("KAILAB_KUBECONFIG"):
            return None
        return (self.state.context or None) if self.state else None

    def _answers(self, kube: Kube, path: Path) -> None:
        if why := kube.probe():
            raise NotRunning(
                f"The lab's API server does not answer ({path}): {why}.",
                hint="Check it with: kailab status — or start again: kailab down && kailab up",
            )

    @property
    def owner(self) -> Owner:
        """A cluster kailab made is the lab's own; an adopted cluster's lab has an id."""
        return Owner(self.state.lab_id if self.state else "")

    @property
    def prefix(self) -> str:
        return self.state.prefix if self.state else ""

    @cached_property
    def view(self) -> View:
        """Everything, but on a cluster kailab made the lab's fleet is KAI's unlabelled partition: a class's
        learners' nodes are not its."""
        from kailab.labels import NODEPOOL_LABEL

        made = self.runtime is not None and self.runtime.traits.makes_cluster
        return View(fleet=f"!{NODEPOOL_LABEL}" if made else None, metrics=self.capabilities.metrics)

    def scenario(self, scenario: Scenario) -> Scenario:
        from kailab.scenarios.prefix import prefixed

        return prefixed(scenario, self.prefix) if self.prefix else scenario

    def cluster(self, kube: Kube) -> LiveCluster:
        from kailab.scenarios.live import LiveCluster

        caps = self.capabilities
        return LiveCluster(
            kube,
            caps.scheduler,
            owner=self.owner,
            metrics=caps.metrics,
            gpu_sharing=caps.gpu_sharing if self.runtime is not None else True,
            node_selector=self.view.fleet,
            gpu_ledger=caps.gpu_ledger,
            operators=caps.operators,
        )

    def info(self) -> LabInfo:
        info = self.runtime.info() if self.runtime is not None else None
        if info is None:
            raise no_lab(self.home)
        return info

    def remove(self, progress: Progress) -> None:
        """The lab's runtime removes it; without a usable state file, each runtime removes what it can find of its
        own (processes by identity, files it writes) — nothing else."""
        from kailab.runtimes import get_runtime, runtime_names

        labdir.refuse_unless_ours(self.home)
        try:
            rt = self.runtime
        except Exception as e:  # a damaged state file: say so, and remove what is identifiably ours
            progress.info(f"{getattr(e, 'message', e)} Removing what kailab can identify as its own.", style="yellow")
            rt = None
        if rt is not None:
            self.remove_class(progress)
            rt.down(progress)
            return
        for name in runtime_names():
            get_runtime(name)(self.home).forget(progress)

    def remove_class(self, progress: Progress) -> None:
        """Before an adopted cluster is let go of (existing runtime), its class: every learner's SchedulingShard,
        nodes, queues, namespaces and credential (``class down``). The local and kind runtimes delete the whole
        cluster, and with it the shards; the local runtime's ``down`` stops the supervisor, then the schedulers it
        started."""
        from kailab.classroom.klass import Class

        assert self.runtime is not None
        host = self.capabilities.partitions
        if host is None:
            return
        klass = Class(host)
        if self.runtime.traits.makes_cluster:
            klass.forget()  # the class goes with the cluster; on kind its state file is in the lab folder
            return
        try:
            if not klass.learners():
                return
        except KailabError as e:  # a damaged class file: the lab goes all the same, and what is left is said
            progress.info(f"{e.message} The class's learners are left on the cluster.", style="yellow")
            klass.forget()
            return
        try:
            kube = self.kube
        except Exception as e:  # noqa: BLE001 (the runtime's down says what is left, and can be run again)
            progress.info(f"The class is left on the cluster: {getattr(e, 'message', e)}", style="yellow")
            return
        klass.down(kube, None, progress)

    def side_by_side(self) -> tuple[int, str]:
        """As the runtime's partitions host says (the local runtime's: this machine's memory)."""
        host = self.capabilities.partitions if self.runtime is not None else None
        if host is None:
            return 0, "no lab is running"
        fit, why = host.side_by_side()
        return fit, why or (f"this lab names its objects with the prefix {self.prefix!r}" if self.prefix else "")

    def klass(self) -> Class:
        from kailab.classroom.klass import Class

        host = self.capabilities.partitions if self.runtime is not None else None
        if self.runtime is None:
            raise no_lab(self.home)
        if host is None:
            raise KailabError(f"The {self.runtime.traits.name} runtime cannot hold a class.")
        address = self.state.address if self.state is not None else ""
        return Class(host, address=address, adopted=not self.runtime.traits.makes_cluster)


class LearnerSlice(Lab):
    """A learner's slice of a class's cluster, from the kubeconfig their instructor handed out: their queues and
    namespaces (``<learner>-…``), their nodes, their owner labels, and their scheduler through their
    SchedulingShard."""

    def __init__(self, home: Path, joined: Joined):
        super().__init__(home)
        self.joined = joined

    @property
    def learner(self) -> str:
        return self.joined.learner

    CLEARS = "Leave the class here and join again: kailab down, then kailab join FILE"

    def kubeconfig(self) -> Path:
        if os.environ.get("KAILAB_KUBECONFIG"):
            return Path(os.environ["KAILAB_KUBECONFIG"])
        return self.joined.kubeconfig

    def _answers(self, kube: Kube, path: Path) -> None:
        """A revoked credential says so (401), not "does not answer"."""
        from kailab.classroom.joined import whoami

        whoami(kube, self.joined.kubeconfig)

    @property
    def owner(self) -> Owner:
        """The class's owner labels of the learner's, and their partition's node pool."""
        from kailab import partitions

        return partitions.owner(self.learner)

    @property
    def prefix(self) -> str:
        return self.learner

    @cached_property
    def control(self):
        """The learner's scheduler, through their SchedulingShard."""
        from kailab.shards import ShardSchedulerControl

        return ShardSchedulerControl(self.kube, self.learner)

    @cached_property
    def view(self) -> View:
        """Their slice (:func:`learner_view`), their fair shares read with their credential."""
        return learner_view(self.kube, self.learner)

    def info(self) -> LabInfo:
        """Their slice of the class: the class's API server, answering their credential (a cluster that does not
        answer, or a credential it no longer takes, is said with a learner's hint), and their scheduler."""
        from kailab.runtimes.base import ComponentHealth, LabInfo

        kube = self.kube
        server = kube.api.configuration.host
        try:
            runs = self.control.running()
        except KailabError as e:
            runs, why = False, e.message
        else:
            why = "running" if runs else "stopped: your next lesson restarts it"
        return LabInfo(
            runtime="class",  # "Lab (class runtime)"; the first line of every learner command says whose slice
            kubeconfig=self.kubeconfig(),
            components=[
                ComponentHealth("the class's API server", True, server),
                ComponentHealth(f"your scheduler ({self.learner})", runs, why),
            ],
        )

    def scenario(self, scenario: Scenario) -> Scenario:
        from kailab.partitions import for_partition

        return for_partition(scenario, self.learner)

    def cluster(self, kube: Kube) -> LiveCluster:
        from kailab.scenarios.live import LiveCluster
        from kailab.shards import ShardSchedulerControl

        control = ShardSchedulerControl(kube, self.learner)  # its metrics: their fair shares, through the API server
        return LiveCluster(kube, control, owner=self.owner, node_selector=self.view.fleet)

    def remove(self, progress: Progress) -> None:
        """Their own objects only, then the credential is forgotten."""
        from kailab.classroom.joined import leave

        labdir.refuse_unless_ours(self.home)
        with progress.step(f"Removing {self.learner}'s lesson objects (their namespaces stay, the instructor's)") as st:
            st.note(f"{len(leave(self.joined, self.home))} emptied or deleted")

    def explain(self, name: str, namespace: str) -> list[Explanation]:
        """As any lab's, but a Pending pod of theirs while their scheduler is stopped says that first (a lesson cut
        short leaves it so; their next lesson, or the instructor's ``class reset``, starts it again)."""
        found = super().explain(name, namespace)
        if any(e.state == "Pending" for e in found) and not self._scheduler_runs():
            for e in found:
                if e.state == "Pending":
                    e.details.insert(
                        0,
                        f"{self.learner}'s scheduler is stopped, so nothing in their partition is placed: a lesson "
                        "cut short left it so. Your next kailab lesson or demo starts it again (or ask your "
                        f"instructor: kailab class reset --learner {self.learner}).",
                    )
        return found

    def _scheduler_runs(self) -> bool:
        try:
            return bool(self.control.running())
        except KailabError:
            return False

    def side_by_side(self) -> tuple[int, str]:
        return 0, "you run a class learner's slice"

    def klass(self) -> Class:
        raise KailabError(
            f"This folder joined a class as learner {self.learner}: the class's commands are the instructor's.",
            hint="Your own slice: kailab demo NAME, kailab lesson NAME, kailab watch, kailab down.",
        )
