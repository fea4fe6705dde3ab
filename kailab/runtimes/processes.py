"""Background processes kailab starts itself, kwokctl-style: a pid file and a log each, in a session of its own.

KAI's components and kailab's GPU ledger: ``pids/<name>.pid`` and ``logs/<name>.log`` under one folder.

A process is known by its identity — pid *and* start time — so a pid the system has since
given to another program is never signalled. Nothing is ever found by matching a command line.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from kailab.errors import KailabError
from kailab.outfile import open_own_log, write_own
from kailab.userfile import peek_text, tail
from kailab.waiting import TimedOut, until


@dataclass(frozen=True)
class Identity:
    """One process, as pid and start time (seconds since the epoch, as psutil reports it)."""

    pid: int
    started: float

    @classmethod
    def of(cls, pid: int) -> Identity | None:
        """The identity of the live process ``pid``, or None when there is none."""
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
            return None

    @classmethod
    def parse(cls, text: str) -> Identity | None:
        """``"<pid> <start time>"`` as written by :meth:`dump`; anything else is None."""
        try:
            pid, started = text.split()
            ident = cls(int(pid), float(started))
        except ValueError:
            return None
        return ident if 0 < ident.pid < 2**31 and math.isfinite(ident.started) else None

    def dump(self) -> str:
        return f"{self.pid} {self.started!r}"

    def alive(self) -> bool:
        """True while this very process runs (not a zombie, not a newer process with the same pid)."""
        try:
            proc = psutil.Process(self.pid)
            return proc.create_time() == self.started and proc.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False


def stop(identities: list[Identity], timeout: float = 10, group: bool = False) -> None:
    """SIGTERM each process that is still the one we started, SIGKILL what is left after ``timeout``.

    ``group``: signal its whole process group too (a process started in its own session leads one).
    """
    for ident in identities:
        _signal(ident, signal.SIGTERM, group)
    try:
        until(lambda: not any(i.alive() for i in identities), timeout, 0.1, "processes to stop")
    except TimedOut:
        for ident in identities:
            _signal(ident, signal.SIGKILL, group)


def _signal(ident: Identity, sig: int, group: bool) -> None:
    if not ident.alive():
        return
    try:
        if group and os.getpgid(ident.pid) == ident.pid:
            os.killpg(ident.pid, sig)
        else:
            os.kill(ident.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class ProcessSpec:
    """One process: a name, its command line and extra environment."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    health_url: str | None = None


class ProcessGroup:
    """Starts, checks and stops named processes that outlive the kailab command."""

    def __init__(self, root: Path):
        self.root = root
        self.pids = root / "pids"
        self.logs = root / "logs"

    def log_path(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def identity(self, name: str) -> Identity | None:
        """The process started as ``name``, while it still runs; None otherwise."""
        text = peek_text(self.pids / f"{name}.pid", 4096)  # a pid file that is not one (a FIFO, a link): none
        ident = Identity.parse(text) if text is not None else None
        return ident if ident and ident.alive() else None

    def pid(self, name: str) -> int | None:
        ident = self.identity(name)
        return ident.pid if ident else None

    def start(self, spec: ProcessSpec) -> int:
        """Start a process unless it already runs; return its pid."""
        running = self.pid(spec.name)
        if running:
            return running
        self.pids.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        with open_own_log(self.log_path(spec.name), root=self.root) as log:
            proc = subprocess.Popen(
                spec.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **spec.env},
                start_new_session=True,
                cwd=self.root,
            )
        ident = Identity.of(proc.pid) or Identity(proc.pid, 0.0)
        write_own(self.pids / f"{spec.name}.pid", ident.dump(), root=self.root)
        return proc.pid

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.pids.glob("*.pid")) if self.pids.exists() else []

    def running(self) -> list[Identity]:
        """Every process of this group that still runs."""
        return [i for i in map(self.identity, self.names()) if i]

    def stop_all(self, timeout: float = 10, first: tuple[str, ...] = ()) -> None:
        """Stop each process this group started (and its process group), then forget it; the ones named ``first``
        before the others (a process that starts others: it starts no more while they stop)."""
        stop([i for i in map(self.identity, first) if i], timeout, group=True)
        stop(self.running(), timeout, group=True)
        for name in self.names():
            (self.pids / f"{name}.pid").unlink(missing_ok=True)

    def stop_one(self, name: str, what: str) -> None:
        """Stop the process started as ``name`` (and its process group), then forget it; ``what`` names it in the
        error when it will not stop. Stopping one that does not run does nothing."""
        ident = self.identity(name)
        if ident is not None:
            stop([ident], timeout=10, group=True)
            if ident.alive():
                raise KailabError(f"{what} (pid {ident.pid}) did not stop.", hint=f"Its log: {self.log_path(name)}")
        (self.pids / f"{name}.pid").unlink(missing_ok=True)

    def log_tail(self, name: str, lines: int = 20) -> str:
        return tail(self.log_path(name), lines) or "(no log)"

    def fail(self, name: str, why: str) -> KailabError:
        """The error for a component that did not start: its log tail and where the log is."""
        return KailabError(
            f"{name} {why}.",
            hint=f"Full log: {self.log_path(name)}",
            details=f"last lines of its log:\n{self.log_tail(name)}",
        )


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
