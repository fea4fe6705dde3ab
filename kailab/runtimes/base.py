"""The runtime interface: how a cluster comes to be. Everything above it only needs a kubeconfig.

A runtime registers itself with :func:`register`; ``kailab up --runtime auto``
asks each one whether it fits this machine (:meth:`Runtime.available`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, ClassVar

from kailab.errors import KailabError
from kailab.fleet import Fleet
from kailab.progress import Progress


@dataclass
class UpOptions:
    """What ``kailab up`` was asked for. Options only some runtimes take are named in ``Runtime.takes``."""

    fleet: Fleet
    with_kai: bool = True
    retain: bool = False  # keep a half-made lab after a failure, to debug it
    apiserver_port: int | None = None  # a fixed port for kube-apiserver (local runtime)
    fleet_given: bool = False  # --fleet or --pool was on the command line
    kubeconfig: Path | None = None  # existing runtime: the cluster to adopt
    context: str | None = None  # existing runtime: a context of that kubeconfig
    kwok: bool = False  # existing runtime: add KWOK and kailab's fleet of fake GPUs
    prefix: str | None = None  # existing runtime: put NAME- in front of the lab's queues and namespaces

    # option → how the command line spells it, for "… is for the local runtime"
    FLAGS = {"with_kai": "--no-kai", "apiserver_port": "--apiserver-port", "kubeconfig": "--kubeconfig",
             "context": "--context", "kwok": "--kwok", "prefix": "--prefix"}

    def given(self) -> set[str]:
        """The runtime-specific options that differ from their defaults."""
        out = {name for name in ("apiserver_port", "kubeconfig", "context", "prefix") if getattr(self, name) is not None}
        if not self.with_kai:
            out.add("with_kai")
        if self.kwok:
            out.add("kwok")
        return out


class DamagedState(KailabError):
    """The lab's state file cannot be read."""


@dataclass
class LabState:
    """What ``lab.json`` in the lab folder says: which runtime made the lab, and where its kubeconfig is.

    Written by the runtime that made the lab; read by every command through :meth:`read`.
    """

    runtime: str
    kubeconfig: str
    fleet: str = ""
    total_gpus: int = 0
    versions: dict = field(default_factory=dict)
    shape: str = ""  # the fleet's pools, as Fleet.describe() says them
    kai_components: list[str] = field(default_factory=list)  # local runtime: KAI processes it started
    complete: bool = True  # kind runtime: False while an `up` is under way (or was interrupted)
    context: str = ""  # existing runtime: the kubeconfig's context it adopted ("" its current one)
    prefix: str = ""  # existing runtime: in front of the lab's queue and namespace names
    lab_id: str = ""  # existing runtime: on every object the lab makes (kailab.io/lab-id)
    kwok_objects: list[dict] = field(default_factory=list)  # existing runtime with --kwok: what it applied, in order

    FILE = "lab.json"

    @classmethod
    def read(cls, home: Path) -> "LabState | None":
        """The state of the lab in ``home``; None when there is none; DamagedState when it cannot be used."""
        path = home / cls.FILE
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise cls._damaged(path, e.strerror or str(e)) from e
        try:
            data = json.loads(text)
        except ValueError:
            raise cls._damaged(path, "it is not JSON") from None
        if not isinstance(data, dict):
            raise cls._damaged(path, "it is not a JSON object")
        missing = [k for k in ("runtime", "kubeconfig") if not isinstance(data.get(k), str)]
        if missing:
            raise cls._damaged(path, f"it has no {' and no '.join(missing)}")
        if data["runtime"] not in runtime_names():
            raise cls._damaged(path, f"it names a runtime kailab does not have: {data['runtime']!r}")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if wrong := [k for k, v in known.items() if not isinstance(v, type(getattr(cls(runtime="", kubeconfig=""), k)))]:
            raise cls._damaged(path, f"{', '.join(wrong)} {'has' if len(wrong) == 1 else 'have'} the wrong type")
        try:
            return cls(**known)
        except TypeError as e:
            raise cls._damaged(path, str(e)) from e

    @staticmethod
    def _damaged(path: Path, why: str) -> DamagedState:
        return DamagedState(f"The lab's state file {path} is damaged: {why}.",
                            hint="Remove the lab and start again: kailab down && kailab up")

    def write(self, home: Path) -> None:
        (home / self.FILE).write_text(json.dumps(asdict(self), indent=2))


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


PLACEMENTS = ("binpack", "spread")

# The one scheduler flag the lab sets apart from KAI's defaults, on every runtime (local: a flag; kind: the
# SchedulingShard's args). KAI reclaims and preempts one victim per scheduling cycle, and a cycle starts every
# second by default: a lesson's reclaim of 8 GPUs took 9.5 s. Every 250 ms it takes 3 s (measured; see bench/).
LAB_SCHEDULER_ARGS = {"schedule-period": "250ms"}

# The one change the lab makes to KAI's CRDs, on the runtimes that install KAI (local, kind): the PodGroup's
# spec.subGroups defaults to an empty list. KAI v0.17.0's pod-grouper builds every PodGroup with
# ``subGroups: []``, the API gives it back without the field, and the two never compare equal
# (pkg/podgrouper/podgroup/handler.go, podGroupsEqual): so for every event of every pod it rewrote the PodGroup,
# lost the race to the podgroup-controller's status patches, and was requeued with a 1 s doubling backoff — a
# 32-pod Job waited 4–8 s to be grouped. With the default, the API gives back what the pod-grouper built, it
# finds nothing to change, and the Job is grouped in about 1 s (measured; see bench/). No KAI component tells
# an empty list from none (they all read len(); only the generated deep-copy checks for nil).
PODGROUP_CRD = "podgroups.scheduling.run.ai"
PODGROUP_CRD_PATCH = [  # RFC 6902, for `kubectl patch --type=json` and for apply_json_patch
    {"op": "test", "path": "/spec/versions/0/name", "value": "v2alpha2"},
    {"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/subGroups/default",
     "value": []},
]


def apply_json_patch(obj: dict, ops: list[dict]) -> dict:
    """A copy of ``obj`` with the patch's ``test`` and ``add`` operations applied (all the lab's patches use)."""
    out = json.loads(json.dumps(obj))
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = out
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        key = int(last) if isinstance(target, list) else last
        if op["op"] == "test":
            if target[key] != op["value"]:
                raise KailabError(f"KAI's CRD is not what the lab expects at {op['path']}: "
                                  f"{target[key]!r}, not {op['value']!r}.",
                                  hint="The pinned KAI version and its CRD disagree; see kailab/versions.py.")
        elif op["op"] == "add":
            target[key] = op["value"]
        else:
            raise ValueError(f"unsupported JSON patch operation {op['op']!r}")
    return out


@dataclass(frozen=True)
class SchedulerSettings:
    """What a scenario may set in KAI's scheduler. ``SchedulerSettings()`` is the lab's default: KAI v0.17.0's own,
    with the lab's cycle period (``LAB_SCHEDULER_ARGS``).

    Placement is the SchedulingShard's ``placementStrategy`` (what KAI's operator turns into the config
    file's plugins and actions); full-hierarchy fairness is the scheduler's flag ``--full-hierarchy-fairness``.
    """

    gpu_placement: str = "binpack"
    cpu_placement: str = "binpack"
    full_hierarchy_fairness: bool = True

    ARGS: ClassVar[tuple[str, ...]] = ("full-hierarchy-fairness", *LAB_SCHEDULER_ARGS)  # every flag args() may set

    def __post_init__(self):
        for name in ("gpu_placement", "cpu_placement"):
            if getattr(self, name) not in PLACEMENTS:
                raise KailabError(f"{name} must be binpack or spread, not {getattr(self, name)!r}.")
        if not isinstance(self.full_hierarchy_fairness, bool):
            raise KailabError(f"full_hierarchy_fairness must be true or false, not {self.full_hierarchy_fairness!r}.")

    @classmethod
    def of(cls, change: "SchedulerSettings | object | None") -> "SchedulerSettings":
        """These settings; None → the defaults; any object with the same attribute names → them, None keeping the default."""
        if change is None or isinstance(change, cls):
            return change or cls()
        given = {k: getattr(change, k, None) for k in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in given.items() if v is not None})

    def args(self) -> dict[str, str]:
        """The scheduler's command-line flags these settings need beyond KAI's defaults (SchedulingShard ``spec.args``)."""
        return {**LAB_SCHEDULER_ARGS, **({} if self.full_hierarchy_fairness else {"full-hierarchy-fairness": "false"})}

    def describe(self) -> str:
        return (f"GPU {self.gpu_placement}, CPU {self.cpu_placement}, "
                f"full-hierarchy fairness {'on' if self.full_hierarchy_fairness else 'off'}")


class SchedulerControl(ABC):
    """Stop, start and reconfigure KAI's scheduler of a running lab (scenarios do, as KAI's own e2e tests do)."""

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


class Runtime(ABC):
    """Brings a lab cluster up and down. Small on purpose: up, down, info, kubeconfig."""

    name: str = ""
    takes: frozenset[str] = frozenset()  # the runtime-specific UpOptions this runtime accepts
    preference: int = 100  # --runtime auto tries runtimes in this order, lowest first
    own_entries: tuple[str, ...] = ()  # what this runtime writes in the lab folder (down removes exactly these)
    makes_cluster: bool = True  # False: it adopts a cluster kailab did not make (never chosen by --runtime auto)

    @classmethod
    def check_options(cls, options: UpOptions) -> None:
        """Refuse, before anything starts, options this runtime does not take."""
        extra = sorted(options.given() - cls.takes)
        if extra:
            takers = {o: [n for n, c in _REGISTRY.items() if o in c.takes] for o in extra}
            raise KailabError(
                "; ".join(f"{UpOptions.FLAGS[o]} is for the {' or '.join(takers[o]) or 'no'} runtime, "
                          f"not the {cls.name} runtime" for o in extra) + ".",
                hint=f"Leave it out, or choose the runtime that takes it: kailab up --runtime {takers[extra[0]][0]}"
                if takers[extra[0]] else "Leave it out.")

    def __init__(self, home: Path | None = None):
        from kailab.paths import lab_home

        self.home = home or lab_home()

    def state(self) -> LabState | None:
        return LabState.read(self.home)

    def running(self, progress: Progress) -> LabInfo | None:
        """The lab when it already runs with every component healthy (``up`` then has nothing to do), else None."""
        info = self.info()
        if info and info.components and all(c.healthy for c in info.components):
            progress.info(f"✓ The lab is already running ({self.name} runtime); nothing to do. "
                          f"Kubeconfig: {self.kubeconfig()}", style="green")
            return info
        return None

    @classmethod
    @abstractmethod
    def available(cls) -> tuple[bool, str]:
        """(fits this machine?, why) — used by ``--runtime auto`` and ``kailab doctor``."""

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


_REGISTRY: dict[str, type[Runtime]] = {}


def register(cls: type[Runtime]) -> type[Runtime]:
    _REGISTRY[cls.name] = cls
    return cls


def runtime_names() -> list[str]:
    """Every runtime, in the order ``--runtime auto`` tries them."""
    _load_builtin()
    return sorted(_REGISTRY, key=lambda n: (_REGISTRY[n].preference, n))


def get_runtime(name: str) -> type[Runtime]:
    _load_builtin()
    if name not in _REGISTRY:
        raise KailabError(f"No runtime named {name!r}.", hint=f"Runtimes: auto, {', '.join(runtime_names())}.")
    return _REGISTRY[name]


def choose_runtime(requested: str) -> tuple[type[Runtime], str]:
    """``auto`` → the first runtime, in preference order, that fits this machine. Returns (runtime, why).

    When none fits, the last one is tried: its own error says what to install.
    """
    if requested != "auto":
        return get_runtime(requested), f"--runtime {requested}"
    names, reasons = [n for n in runtime_names() if _REGISTRY[n].makes_cluster], []
    for name in names:
        ok, why = _REGISTRY[name].available()
        if ok:
            return _REGISTRY[name], "; ".join(reasons + [f"using the {name} runtime ({why})"]) if reasons else why
        reasons.append(why)
    return _REGISTRY[names[-1]], "; ".join(reasons) + f"; trying the {names[-1]} runtime, which says what it needs"


def _load_builtin() -> None:
    from kailab.runtimes import existing, kind, local  # noqa: F401  (registers them)
