"""The runtime interface: how a cluster comes to be. Everything above it only needs a kubeconfig.

A runtime registers itself with :func:`register`; ``kailab up --runtime auto``
asks each one whether it fits this machine (:meth:`Runtime.available`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from kailab.fleet import Fleet
from kailab.progress import Progress


@dataclass
class UpOptions:
    fleet: Fleet
    with_kai: bool = True
    retain: bool = False  # keep a half-made lab after a failure, to debug it


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


class Runtime(ABC):
    """Brings a lab cluster up and down. Small on purpose: up, down, info, kubeconfig."""

    name: str = ""

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

    @abstractmethod
    def info(self) -> LabInfo | None:
        """The running lab, or None when there is none."""

    @abstractmethod
    def kubeconfig(self) -> Path:
        """Where the lab's kubeconfig is (it may not exist yet)."""


_REGISTRY: dict[str, type[Runtime]] = {}


def register(cls: type[Runtime]) -> type[Runtime]:
    _REGISTRY[cls.name] = cls
    return cls


def get_runtime(name: str) -> type[Runtime]:
    _load_builtin()
    return _REGISTRY[name]


def choose_runtime(requested: str) -> tuple[type[Runtime], str]:
    """``auto`` → kind when a Docker engine answers, else local. Returns (runtime, why)."""
    _load_builtin()
    if requested != "auto":
        return _REGISTRY[requested], f"--runtime {requested}"
    kind_ok, kind_why = _REGISTRY["kind"].available()
    if kind_ok:
        return _REGISTRY["kind"], kind_why
    return _REGISTRY["local"], f"{kind_why}; using the local runtime (no Docker needed)"


def _load_builtin() -> None:
    from kailab.runtimes import kind, local  # noqa: F401  (registers them)
