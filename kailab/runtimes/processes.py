"""Background processes kailab starts itself (the KAI components), kwokctl-style:
``pids/<name>.pid`` and ``logs/<name>.log`` under one folder, each in its own session.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kailab.errors import KailabError


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

    def pid(self, name: str) -> int | None:
        try:
            pid = int((self.pids / f"{name}.pid").read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def start(self, spec: ProcessSpec) -> int:
        """Start a process unless it already runs; return its pid."""
        running = self.pid(spec.name)
        if running:
            return running
        self.pids.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.log_path(spec.name), "ab") as log:
            proc = subprocess.Popen(
                spec.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **spec.env}, start_new_session=True, cwd=self.root,
            )
        (self.pids / f"{spec.name}.pid").write_text(str(proc.pid))
        return proc.pid

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.pids.glob("*.pid")) if self.pids.exists() else []

    def stop_all(self, timeout: float = 10) -> None:
        """SIGTERM each process group, SIGKILL what is left after ``timeout``."""
        pids = {n: self.pid(n) for n in self.names()}
        for pid in filter(None, pids.values()):
            _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(p and _alive(p) for p in pids.values()):
            time.sleep(0.1)
        for pid in filter(None, pids.values()):
            if _alive(pid):
                _signal_group(pid, signal.SIGKILL)
        for name in pids:
            (self.pids / f"{name}.pid").unlink(missing_ok=True)

    def log_tail(self, name: str, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def fail(self, name: str, why: str) -> KailabError:
        """The error for a component that did not start: its log tail and where the log is."""
        return KailabError(
            f"{name} {why}.",
            hint=f"Full log: {self.log_path(name)}",
            details=f"last lines of its log:\n{self.log_tail(name)}",
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
