"""The local runtime's controls of its processes: KAI's scheduler and kailab's GPU ledger.

The scheduler is the lab's, or a partition's for the supervisor; each process is stopped by its recorded identity
and started again as ``up`` starts it."""

from __future__ import annotations

import dataclasses
import http.client
import json
import threading
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from kailab import build, versions
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import KAI_SCHEDULER_PROCESS
from kailab.outfile import write_own
from kailab.progress import Progress
from kailab.runtimes import gpu_ledger, usage_db
from kailab.runtimes import local_kai as kai
from kailab.runtimes.base import GpuLedgerControl, SchedulerControl
from kailab.runtimes.processes import ProcessSpec
from kailab.scheduler_settings import SchedulerSettings
from kailab.userfile import peek_text
from kailab.waiting import until

if TYPE_CHECKING:
    from kailab.runtimes.local import LocalRuntime

# address → (its lock, a connection kept open to it): a scheduler's metrics are read every second (by a lesson, by
# the shard supervisor for each shard), and a new connection each time cost more than the reading
_KEPT: dict[tuple[str, int | None], tuple[threading.Lock, http.client.HTTPConnection]] = {}
_KEPT_LOCK = threading.Lock()


def read_loopback(url: str, timeout: float = 2) -> str | None:
    """The text at a process's plain-HTTP ``url`` (a scheduler's metrics); None when it does not answer 200. Over a
    connection kept open to that address; one the process closed is opened again at once, one that cannot be is
    forgotten (a stopped scheduler: a restarted one listens on new ports)."""
    where = urllib.parse.urlsplit(url)
    if where.scheme != "http" or not where.hostname:
        return None
    address = (where.hostname, where.port)
    with _KEPT_LOCK:
        lock, conn = _KEPT.get(address) or _KEPT.setdefault(
            address, (threading.Lock(), http.client.HTTPConnection(where.hostname, where.port, timeout=timeout))
        )
    with lock:
        for fresh in (conn.sock is None, True):  # a kept connection may have been closed by the other end: once more
            try:
                conn.request("GET", where.path or "/")
                answer = conn.getresponse()
                body = answer.read()
                return body.decode(errors="replace") if answer.status == 200 else None
            except (OSError, http.client.HTTPException):
                conn.close()  # opened again by the next request
                if fresh:
                    break
    with _KEPT_LOCK:
        if _KEPT.get(address, (None, None))[1] is conn:
            del _KEPT[address]
    return None


class LocalSchedulerControl(SchedulerControl):
    """KAI's scheduler process of a local lab: stopped by its recorded identity, started again with a config file and
    flags made from the settings, on fresh ports. Its pid file is where ``down`` and ``status`` find it; what it runs
    with (settings, metrics address) is in ``kai/scheduler.json``.
    """

    RECORD = "scheduler.json"
    runs_usage_db = True

    def __init__(
        self,
        runtime: LocalRuntime,
        timeout: float = 60,
        name: str = KAI_SCHEDULER_PROCESS,
        partition: str = "",
        workdir: Path | None = None,
        args: dict[str, str] | None = None,
    ):
        self.rt = runtime
        self.timeout = timeout
        self.name = name  # its process name; a partition's scheduler has its own (runtimes/local_partitions.py)
        self.partition = partition  # the node-pool label value it schedules; "" the lab's own scheduler
        self.workdir = workdir or runtime.home / "kai"
        self.args = (
            args  # a SchedulingShard's spec.args (kailab/runtimes/shard_supervisor.py); None: the settings' flags
        )

    def _record(self) -> dict:
        try:
            data = json.loads(peek_text(self.workdir / self.RECORD) or "{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def record(self, spec: ProcessSpec, settings: SchedulerSettings) -> None:
        """Remember what the scheduler started from ``spec`` runs with."""
        write_own(
            self.workdir / self.RECORD,
            json.dumps(
                {"settings": dataclasses.asdict(settings), "metrics": spec.health_url, "binary": spec.argv[0]}, indent=1
            ),
            root=self.rt.home,
        )

    @property
    def settings(self) -> SchedulerSettings:
        try:
            return SchedulerSettings(**self._record().get("settings", {}))
        except (TypeError, KailabError):
            return SchedulerSettings()

    def running(self) -> bool:
        return self.rt.kai_processes.identity(self.name) is not None

    def stop(self) -> None:
        self.rt.kai_processes.stop_one(self.name, "KAI's scheduler")

    def start(self, settings: SchedulerSettings | None = None) -> None:
        settings = SchedulerSettings.of(settings)
        state = self.rt._state()
        if state is None or KAI_SCHEDULER_PROCESS not in state.kai_components:
            raise KailabError(
                "This lab runs no KAI scheduler to start (it was brought up without KAI).",
                hint="Bring it up with KAI: kailab down && kailab up",
            )
        if self.running() and settings == self.settings:
            return
        binary = Path(self._record().get("binary") or self.rt.scheduler_control()._record().get("binary") or "")
        if binary.is_file():  # the binary this lab started with (a partition's first start: the lab's scheduler's)
            bins = {KAI_SCHEDULER_PROCESS: binary}
        else:
            bins = build.ensure_built([versions.build("kai")], Progress(quiet=True), self.rt.cache)
        usage = None
        if settings.usage_params is not None:  # time-based fair share: the lab's Prometheus, started if need be
            url = usage_db.ensure_running(self.rt.kai_processes, self.rt.cache)
            capacity = usage_db.node_capacity(Kube(self.rt.kubeconfig()), self.partition)
            usage = usage_db.usage_db_config(settings, url, capacity)
        self.stop()
        spec = kai.scheduler_spec(
            bins, self.rt.kubeconfig(), self.workdir, settings, self.partition, self.name, self.args, usage
        )
        self.rt.kai_processes.start(spec)
        self.record(spec, settings)
        kai.wait_healthy([spec], self.rt.kai_processes, timeout=self.timeout)
        self._wait_scheduling()

    def _wait_scheduling(self) -> None:
        """Until the new scheduler has run a cycle: its caches are synced and it binds again."""
        processes = self.rt.kai_processes

        def cycled() -> bool:
            if kai.actions_run(self.metrics() or ""):
                return True
            if processes.pid(self.name) is None:
                raise processes.fail(self.name, "exited while starting")
            return False

        until(
            cycled,
            self.timeout,
            0.2,
            fail=lambda _: processes.fail(self.name, f"ran no scheduling cycle within {self.timeout:.0f}s"),
        )

    def metrics(self) -> str | None:
        url = self._record().get("metrics")
        if not url or not self.running():
            return None
        return read_loopback(url)


class LocalGpuLedgerControl(GpuLedgerControl):
    """kailab's GPU ledger process of a local lab (it plays the GPU operator's part): stopped by its recorded
    identity, started again as ``up`` starts it."""

    def __init__(self, runtime: LocalRuntime, timeout: float = 30):
        self.rt = runtime
        self.timeout = timeout

    def running(self) -> bool:
        return self.rt.kai_processes.identity(gpu_ledger.PROCESS_NAME) is not None

    def stop(self) -> None:
        self.rt.kai_processes.stop_one(gpu_ledger.PROCESS_NAME, "kailab's GPU ledger")

    def start(self) -> None:
        state = self.rt._state()
        if state is None or gpu_ledger.PROCESS_NAME not in state.kai_components:
            raise KailabError(
                "This lab runs no GPU ledger to start (it was brought up without KAI).",
                hint="Bring it up with KAI: kailab down && kailab up",
            )
        if self.running():
            return
        spec = kai.gpu_ledger_spec(self.rt.kubeconfig())
        self.rt.kai_processes.start(spec)
        kai.wait_healthy([spec], self.rt.kai_processes, timeout=self.timeout)
