"""The runtime interface: how a cluster comes to be. Everything above it only needs a kubeconfig.

This module imports no runtime: the runtimes import it, and the registry (``kailab.runtimes``) knows them all.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kailab.errors import KailabError
from kailab.fleet import Fleet
from kailab.labstate import LabState
from kailab.operators import OperatorControl
from kailab.progress import Progress
from kailab.scheduler_settings import SchedulerSettings


@dataclass
class UpOptions:
    """What ``kailab up`` was asked for. Options only some runtimes take are named in ``Runtime.takes``."""

    fleet: Fleet
    with_kai: bool = True
    retain: bool = False  # local runtime: keep a half-made lab after a failure, to debug it
    apiserver_port: int | None = None  # a fixed port for kube-apiserver (local runtime)
    fleet_given: bool = False  # --fleet or --pool was on the command line
    kubeconfig: Path | None = None  # existing runtime: the cluster to adopt
    context: str | None = None  # existing runtime: a context of that kubeconfig
    kwok: bool = False  # existing runtime: add KWOK and kailab's fleet of fake GPUs
    prefix: str | None = None  # existing runtime: put NAME- in front of the lab's queues and namespaces
    offline: bool = False  # kind runtime: build every image here, pull nothing

    # option → how the command line spells it, for "… is for the local runtime"
    FLAGS = {
        "with_kai": "--no-kai",
        "apiserver_port": "--apiserver-port",
        "kubeconfig": "--kubeconfig",
        "context": "--context",
        "kwok": "--kwok",
        "prefix": "--prefix",
        "retain": "--retain",
        "offline": "--offline",
    }

    def given(self) -> set[str]:
        """The runtime-specific options that differ from their defaults."""
        out = {
            name for name in ("apiserver_port", "kubeconfig", "context", "prefix") if getattr(self, name) is not None
        }
        if not self.with_kai:
            out.add("with_kai")
        for flag in ("kwok", "retain", "offline"):
            if getattr(self, flag):
                out.add(flag)
        return out


@dataclass
class ComponentHealth:
    name: str
    healthy: bool
    detail: str = ""


@dataclass
class LabInfo:
    runtime: str
    kubeconfig: Path
    components: list[ComponentHealth] = field(default_factory=list)
    summary: str = ""  # what `kailab up` says the lab is, when the runtime says it itself


class SchedulerControl(ABC):
    """Stop, start and reconfigure KAI's scheduler of a running lab (scenarios do, as KAI's own e2e tests do)."""

    # True where settings with usage params start KAI's usage database too: the lab's Prometheus, a process on the
    # local runtime (kailab/runtimes/usage_db.py), a Deployment on kind (kailab/runtimes/kind_usage_db.py).
    runs_usage_db: bool = False

    @property
    @abstractmethod
    def settings(self) -> SchedulerSettings:
        """What the scheduler runs with now (or ran with last, while it is stopped)."""

    @abstractmethod
    def running(self) -> bool:
        """True while the scheduler runs."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the scheduler; return once it no longer runs. Stopping a stopped scheduler does nothing."""

    @abstractmethod
    def start(self, settings: SchedulerSettings | None = None) -> None:
        """Start the scheduler with ``settings`` (None: the lab's defaults); return once it is healthy.

        A scheduler already running with other settings is restarted with these; with the same ones, nothing happens.
        """

    def metrics(self) -> str | None:
        """The scheduler's Prometheus metrics, as text; None when it does not answer."""
        return None


class GpuLedgerControl(ABC):
    """Stop and start what gives KAI's GPU reservation pods their GPU (the GPU operator's part; on the local runtime
    kailab's GPU ledger), so a scenario can show a reservation that never gets one."""

    @abstractmethod
    def running(self) -> bool:
        """True while it runs."""

    @abstractmethod
    def stop(self) -> None:
        """Stop it; return once it no longer runs. Stopping it when stopped does nothing."""

    @abstractmethod
    def start(self) -> None:
        """Start it; return once it is healthy. Starting it when it runs does nothing."""


class Runtime(ABC):
    """Brings a lab cluster up and down, and says what it runs: ``up``, ``down``, ``info`` and ``kubeconfig`` each
    runtime must have; the rest (scheduler control, metrics, memory, preflight, ``forget``) has a default."""

    name: str = ""
    takes: frozenset[str] = frozenset()  # the runtime-specific UpOptions this runtime accepts
    preference: int = 100  # --runtime auto tries runtimes in this order, lowest first
    own_entries: tuple[str, ...] = ()  # what this runtime writes in the lab folder (down removes exactly these)
    makes_cluster: bool = True  # False: it adopts a cluster kailab did not make (never chosen by --runtime auto)
    after_failed_up: str = ""  # what a failed `up` leaves, said when --retain is refused (a runtime that takes it: "")

    # A hook, empty on purpose: a runtime overrides it when it refuses more (B027 asks for abstract or a body).
    @classmethod  # noqa: B027
    def check_options(cls, options: UpOptions) -> None:
        """Refuse, before anything starts, a combination of options this runtime cannot do (beyond ``takes``,
        which :func:`kailab.runtimes.check_options` checks for every runtime)."""

    def __init__(self, home: Path | None = None):
        from kailab.paths import lab_home

        self.home = home or lab_home()

    def state(self) -> LabState | None:
        return LabState.read(self.home)

    def running(self, progress: Progress) -> LabInfo | None:
        """The lab when it already runs with every component healthy (``up`` then has nothing to do), else None."""
        info = self.info()
        if info and info.components and all(c.healthy for c in info.components):
            progress.info(
                f"✓ The lab is already running ({self.name} runtime); nothing to do. Kubeconfig: {self.kubeconfig()}",
                style="green",
            )
            return info
        return None

    @classmethod
    @abstractmethod
    def available(cls) -> tuple[bool, str]:
        """(fits this machine?, why) — asked by ``--runtime auto`` (:func:`kailab.runtimes.choose_runtime`)."""

    @abstractmethod
    def up(self, options: UpOptions, progress: Progress) -> LabInfo:
        """Make the lab exist and be ready; a second call while it runs is a fast no-op."""

    @abstractmethod
    def down(self, progress: Progress) -> None:
        """Remove everything this runtime made for the lab."""

    def forget(self, progress: Progress) -> None:
        """Remove what this runtime can identify as its own when the lab's state file is gone or damaged."""
        from kailab import labdir

        labdir.report_left(self.home, labdir.remove(self.home, list(self.own_entries)), progress)

    @abstractmethod
    def info(self) -> LabInfo | None:
        """The running lab, or None when there is none."""

    @abstractmethod
    def kubeconfig(self) -> Path:
        """Where the lab's kubeconfig is (it may not exist yet)."""

    def memory_mib(self) -> float | None:
        """Memory (RSS, MiB) of every process the lab runs, together; None when this runtime cannot say."""
        return None

    def scheduler_control(self) -> SchedulerControl:
        """Stop, start and reconfigure KAI's scheduler of this lab."""
        raise KailabError(f"The {self.name} runtime cannot stop, start or reconfigure KAI's scheduler.")

    def gpu_ledger_control(self) -> GpuLedgerControl:
        """Stop and start what gives KAI's GPU reservation pods their GPU on this lab."""
        raise KailabError(
            f"The {self.name} runtime cannot stop or start what gives KAI's GPU reservation pods their GPU "
            "(only a lab the local runtime made runs kailab's GPU ledger for it)."
        )

    def operators(self) -> OperatorControl:
        """The workload operators of this lab (KubeRay, training-operator, JobSet, LWS), each started on first need
        (:class:`kailab.operators.OperatorControl`)."""
        raise KailabError(f"The {self.name} runtime cannot run workload operators (KubeRay, JobSet, …).")

    def scheduler_metrics(self) -> Callable[[], str | None] | None:
        """A reader of KAI's scheduler metrics (fair shares), or None when this lab cannot read them."""
        try:
            return self.scheduler_control().metrics
        except KailabError:
            return None

    def gpu_sharing(self) -> bool:
        """Whether KAI's GPU sharing is on (a lab kailab made has it on)."""
        return True

    def preflight(self, options: UpOptions) -> list:
        """What ``up`` found before changing anything (kailab.preflight.Finding rows); none for a runtime that
        makes its own cluster."""
        return []
