"""The runtime interface: how a cluster comes to be, and what a runtime offers beyond a kubeconfig.

A runtime has ten members (:class:`Runtime`) and one value of optional parts (:class:`Capabilities`: scheduler
control, GPU ledger, metrics, partitions, GPU sharing, memory, workload operators — None where it has none). This
module imports no runtime: the runtimes import it, and the registry (``kailab.runtimes``) knows them all.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from kailab.labstate import LabState
from kailab.progress import Progress
from kailab.scheduler_settings import SchedulerSettings

if TYPE_CHECKING:
    from kailab.fleet import Fleet
    from kailab.kube import Kube
    from kailab.operators import OperatorControl


@dataclass
class UpOptions:
    """What ``kailab up`` was asked for. Options only some runtimes take are named in ``Traits.takes``."""

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
    address: str | None = None  # local, kind: an address of this machine where learners reach the API server

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
        "address": "--address",
    }

    def given(self) -> set[str]:
        """The runtime-specific options that differ from their defaults."""
        out = {
            name
            for name in ("apiserver_port", "kubeconfig", "context", "prefix", "address")
            if getattr(self, name) is not None
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


class Control(ABC):
    """A part of a running lab that a scenario stops and starts again; each call returns once it is done."""

    @abstractmethod
    def running(self) -> bool:
        """True while it runs."""

    @abstractmethod
    def stop(self) -> None:
        """Stop it; return once it no longer runs. Stopping it when stopped does nothing."""

    @abstractmethod
    def start(self) -> None:
        """Start it; return once it is healthy. Starting it when it runs does nothing."""


class SchedulerControl(Control):
    """Stop, start and reconfigure KAI's scheduler of a running lab (scenarios do, as KAI's own e2e tests do)."""

    # True where settings with usage params start KAI's usage database too: the lab's Prometheus, a process on the
    # local runtime (kailab/runtimes/usage_db.py), a Deployment on kind (kailab/runtimes/kind_usage_db.py).
    runs_usage_db: bool = False

    @property
    @abstractmethod
    def settings(self) -> SchedulerSettings:
        """What the scheduler runs with now (or ran with last, while it is stopped)."""

    @abstractmethod
    def start(self, settings: SchedulerSettings | None = None) -> None:
        """Start the scheduler with ``settings`` (None: the lab's defaults); return once it is healthy.

        A scheduler already running with other settings is restarted with these; with the same ones, nothing happens.
        """

    def metrics(self) -> str | None:
        """The scheduler's Prometheus metrics, as text; None when it does not answer."""
        return None

    def watching(self) -> AbstractContextManager:
        """While open, :meth:`metrics` may answer from a watch rather than a request per call (a lesson reads it every
        second); by default nothing changes."""
        return nullcontext()


class GpuLedgerControl(Control):
    """Stop and start what gives KAI's GPU reservation pods their GPU (the GPU operator's part; on the local runtime
    kailab's GPU ledger), so a scenario can show a reservation that never gets one."""


class PartitionHost(Protocol):
    """What runs a lab's partitions' schedulers (each partition a SchedulingShard, ``kailab/partitions.py``): the
    runtime's part of a class and of lessons side by side. The local runtime's supervisor runs each shard as a
    process (``runtimes/local_partitions.py``); KAI's operator runs it as a Deployment on kind and existing clusters
    (``runtimes/operator_partitions.py``)."""

    home: Path  # the lab folder: nothing of the partitions' is written outside it
    folder: Path  # where the lab keeps the names of the partitions it made

    def side_by_side(self, available: int | None = None) -> tuple[int, str]:
        """How many lessons can run at once here, each in a partition of its own, with ``available`` bytes of
        memory (None: psutil's figure now); and why not more than one, in words ("" when more fit)."""

    def check(self, kube: Kube, adding: int, available: int | None) -> None:
        """Refuse, before anything is applied, a cluster that cannot hold ``adding`` more partitions."""

    def ready(self, kube: Kube) -> None:
        """Make sure something runs the shards."""

    def control(self, kube: Kube, partition: str) -> SchedulerControl:
        """The partition's scheduler, through its shard (:class:`kailab.shards.ShardSchedulerControl`)."""

    def stopped(self, kube: Kube, partition: str) -> None:
        """The partition's shard is deleted: what is left of its scheduler here removed at once."""

    def usage_db_url(self) -> str | None:
        """The lab's usage database a learner's shard may name (None: none may be named)."""

    def cores_short(self, partitions: int) -> str:
        """Why this machine's cores cannot run ``partitions`` lessons at once at the speed a class needs ("" they
        can, or the host cannot say)."""

    def open_beyond_loopback(self) -> list[tuple[str, str, int]]:
        """(process, address, port) the lab listens on beyond this machine's loopback, where the host can tell."""


@dataclass(frozen=True)
class Capabilities:
    """What a running lab offers beyond a kubeconfig, each None (or False) where its runtime has none: the engine,
    ``status``, ``explain``, a class and ``demo`` side by side read them here, never by asking which runtime runs."""

    scheduler: SchedulerControl | None = None  # stop, start and reconfigure KAI's scheduler
    gpu_ledger: GpuLedgerControl | None = None  # what gives KAI's GPU reservation pods their GPU
    metrics: Callable[[], str | None] | None = None  # KAI's scheduler metrics (fair shares)
    partitions: PartitionHost | None = None  # what runs partitions' schedulers (a class, lessons side by side)
    gpu_sharing: bool = False  # KAI's GPU sharing is on
    memory: Callable[[], float | None] | None = None  # MiB of every process the lab runs, together
    operators: OperatorControl | None = None  # the workload operators (KubeRay, JobSet…), each run on first need


@dataclass(frozen=True)
class Traits:
    """What the registry and ``kailab up`` know of a runtime before one is made."""

    name: str
    takes: frozenset[str] = frozenset()  # the runtime-specific UpOptions this runtime accepts
    preference: int = 100  # --runtime auto tries runtimes in this order, lowest first
    own_entries: tuple[str, ...] = ()  # what this runtime writes in the lab folder (down removes exactly these)
    makes_cluster: bool = True  # False: it adopts a cluster kailab did not make (never chosen by --runtime auto)
    after_failed_up: str = ""  # what a failed `up` leaves, said when --retain is refused (a runtime that takes it: "")


class Runtime(ABC):
    """Brings a lab cluster up and down, and says what it runs: ``traits``, ``home``, ``available``,
    ``check_options``, ``preflight``, ``up``, ``down``, ``forget``, ``info`` and ``kubeconfig``; and
    :meth:`capabilities`, its optional parts."""

    traits: ClassVar[Traits]

    def __init__(self, home: Path | None = None, state: LabState | None = None):
        """``state``: the lab's state as the caller read it (``kailab.lab`` reads ``lab.json`` once per command);
        without it the runtime reads it when it needs it."""
        from kailab.paths import lab_home

        self.home = home or lab_home()
        self._given_state = state

    @classmethod
    @abstractmethod
    def available(cls) -> tuple[bool, str]:
        """(fits this machine?, why) — asked by ``--runtime auto`` (:func:`kailab.runtimes.choose_runtime`)."""

    # A hook, empty on purpose: a runtime overrides it when it refuses more (B027 asks for abstract or a body).
    @classmethod  # noqa: B027
    def check_options(cls, options: UpOptions) -> None:
        """Refuse, before anything starts, a combination of options this runtime cannot do (beyond ``takes``,
        which :func:`kailab.runtimes.check_options` checks for every runtime)."""

    def preflight(self, options: UpOptions) -> list:
        """What ``up`` found before changing anything (kailab.preflight.Finding rows); none for a runtime that
        makes its own cluster."""
        return []

    @abstractmethod
    def up(self, options: UpOptions, progress: Progress) -> LabInfo:
        """Make the lab exist and be ready; a second call while it runs is a fast no-op."""

    @abstractmethod
    def down(self, progress: Progress) -> None:
        """Remove everything this runtime made for the lab."""

    def forget(self, progress: Progress) -> None:
        """Remove what this runtime can identify as its own when the lab's state file is gone or damaged."""
        from kailab import labdir

        labdir.report_left(self.home, labdir.remove(self.home, list(self.traits.own_entries)), progress)

    @abstractmethod
    def info(self) -> LabInfo | None:
        """The running lab, or None when there is none."""

    @abstractmethod
    def kubeconfig(self) -> Path:
        """Where the lab's kubeconfig is (it may not exist yet)."""

    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this lab offers beyond a kubeconfig (its optional parts; None where it has none)."""

    # -- for the runtimes themselves --------------------------------------------------------------------------------

    def _state(self) -> LabState | None:
        """The lab's state: as it was given, else read now."""
        return self._given_state if self._given_state is not None else LabState.read(self.home)

    def _running(self, progress: Progress) -> LabInfo | None:
        """The lab when it already runs with every component healthy (``up`` then has nothing to do), else None."""
        info = self.info()
        if info and info.components and all(c.healthy for c in info.components):
            progress.info(
                f"✓ The lab is already running ({self.traits.name} runtime); nothing to do. "
                f"Kubeconfig: {self.kubeconfig()}",
                style="green",
            )
            return info
        return None
