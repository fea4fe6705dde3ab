"""Shared fixtures: one local lab per test session, with KAI when the pinned KAI can be had.

A contributor's machine that cannot build the fleet (or cannot get KAI) skips the fleet
tests with the reason; under CI (CI=true) either is a failure instead: nothing that proves
KAI may skip there.

Where the machine allows it, workers run side by side, each with labs of its own (tests/networks.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import balance
import pytest
from networks import WORKERS, private_network, private_networks_possible, use_private_networks

from kailab import build, versions
from kailab.errors import KailabError
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.labels import RESERVATION_NAMESPACE
from kailab.progress import Progress
from kailab.runtimes.base import UpOptions
from kailab.runtimes.local import LocalRuntime
from kailab.scenarios.live import clear_scenarios

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.hookimpl(optionalhook=True)  # xdist's hook
def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: labs side by side where each worker can have a network namespace of its own, else one worker."""
    return WORKERS if private_networks_possible() else 1


def pytest_configure(config) -> None:
    """A worker among several runs its lab in a network namespace of its own (tests/networks.py)."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    if workers > 1:
        use_private_networks()


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # xdist's hook; before its own loadfile scheduler
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``: the longest files first, and a test marked ``alone`` first of all (tests/balance.py)."""
    return balance.make_scheduler(config, log) if config.getoption("dist", None) == "loadfile" else None


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.get_closest_marker("alone") and balance.file_of(item.nodeid) not in balance.ALONE:
            raise pytest.UsageError(f"{item.nodeid} is marked alone: add its file to tests/balance.py's ALONE")


_measured: dict[str, float] = {}
_ran: set[str] = set()


def pytest_runtest_logreport(report) -> None:
    """Each unit's measured seconds (under xdist, the workers' reports arrive here too)."""
    unit = balance.unit_of(report.nodeid)
    _measured[unit] = _measured.get(unit, 0.0) + report.duration
    _ran.add(report.nodeid)


def pytest_terminal_summary(terminalreporter, config) -> None:
    """The units whose measured time is off their estimate by more than half, with the line for ESTIMATES."""
    if config.getoption("dist", None) != "loadfile" or config.getoption("keyword") or config.getoption("markexpr"):
        return
    est: dict[str, float] = {}
    for nodeid, seconds in balance.estimates(sorted(_ran)).items():
        est[balance.unit_of(nodeid)] = est.get(balance.unit_of(nodeid), 0.0) + seconds
    off = {
        u: m for u, m in _measured.items() if u in est and max(m, est[u]) >= 60 and not 0.5 <= m / max(est[u], 1) <= 1.5
    }
    if off:
        terminalreporter.write_sep("-", "measured far from tests/balance.py's ESTIMATES (the run's order uses them)")
        for unit, seconds in sorted(off.items(), key=lambda x: -x[1]):
            terminalreporter.write_line(f'    "{unit}": {seconds:.0f},  # estimated {est[unit]:.0f}')


def _machine_locks() -> tuple[Path, Path] | None:
    """The run's two lock files (a turnstile, the machine) when workers run side by side; None with one worker."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    base = Path(tempfile.gettempdir()) / f"kailab-tests-{run}"
    return base.with_suffix(".turnstile"), base.with_suffix(".machine")


@pytest.fixture(autouse=True)
def _share_the_machine(request):
    """Each test shares the machine with the other worker's; a test marked ``alone`` (one that loads the cores on
    purpose: tests/fleet/test_under_load_fleet.py) has it alone — it waits for the other worker's test to end, and
    that worker's next test waits for it (a turnstile, so it is never starved). One worker: nothing to share."""
    paths = _machine_locks()
    if paths is None:
        yield
        return
    alone = request.node.get_closest_marker("alone") is not None
    with open(paths[0], "a") as turnstile, open(paths[1], "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)  # only passed through: a test that wants the machine alone holds it
        fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.fixture
def stress_ng() -> str:
    """The path of stress-ng (Debian's ``stress-ng``: .ci/run installs it); skipped without it, a failure under CI."""
    found = shutil.which("stress-ng")
    if found is None:
        if IN_CI:
            pytest.fail("CI must load the cores with stress-ng: apt-get install stress-ng (.ci/run does)")
        pytest.skip("stress-ng is not installed (apt-get install stress-ng)")
    return found


def processes_naming(path: Path, spare: tuple[int, ...] = ()) -> list[int]:
    """Pids of processes whose command line names ``path`` (a test's leftover detector; kailab never kills by this)."""
    needle = str(path)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (os.getpid(), *spare):
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            found.append(int(entry.name))
    return found


def kai_unavailable_reason() -> str | None:
    """None when KAI can run on the local fleet, else the measured reason it cannot."""
    kai = versions.build("kai")
    if build.is_built(kai):
        return None
    answer = build.module_available(kai)
    if answer is None:
        return None
    return f"{kai.module}@{kai.version} cannot be downloaded: {answer.strip().splitlines()[0]}"


@pytest.fixture(name="processes_naming")
def processes_naming_fixture():
    return processes_naming


@pytest.fixture(scope="session")
def kai_reason() -> str | None:
    return kai_unavailable_reason()


@pytest.fixture(scope="session")
def lab(tmp_path_factory, kai_reason):
    """A running local lab in a fresh KAILAB_HOME; torn down (and checked for leftovers) at the end."""
    try:
        build.check_go()
    except KailabError as e:
        if IN_CI:
            pytest.fail(f"CI must build the fleet: {e.message}")
        pytest.skip(f"cannot build the local fleet here: {e.message}")
    home = tmp_path_factory.mktemp("kailab-home")
    os.environ["KAILAB_HOME"] = str(home)
    runtime = LocalRuntime(home=home)
    runtime.ensure_builds(kai_reason is None, Progress())  # on the machine's network: Go modules
    with private_network():  # the lab on this worker's own loopback
        runtime.up(UpOptions(fleet=load_fleet(), with_kai=kai_reason is None), Progress())
    yield Lab(runtime, home, Kube(runtime.kubeconfig()), kai_reason)
    with private_network():
        runtime.down(Progress())
    assert processes_naming(home) == [], "processes of the lab are left after down"


class Lab:
    def __init__(self, runtime: LocalRuntime, home: Path, kube: Kube, kai_reason: str | None):
        self.runtime = runtime
        self.home = home
        self.kube = kube
        self.kai_reason = kai_reason

    def cli(self, *args: str, check: bool = False) -> subprocess.CompletedProcess:
        """Run the kailab command line against this lab, as a user would."""
        env = {**os.environ, "KAILAB_HOME": str(self.home)}
        proc = subprocess.run(
            [sys.executable, "-m", "kailab", *args], capture_output=True, text=True, env=env, timeout=600
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kailab {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    @contextlib.contextmanager
    def running(self, *args: str) -> Iterator[subprocess.Popen]:
        """The kailab command line against this lab, in the background while the block runs (its output piped, as
        text); killed if it still runs when the block ends."""
        env = {**os.environ, "KAILAB_HOME": str(self.home)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "kailab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()


@pytest.fixture
def kai_lab(lab):
    """The lab, for tests that need the real KAI Scheduler; its fleet left free for the next test on this worker.

    The lab is one per worker, shared by every fleet file that worker runs, in an order that varies from run to run:
    ``kailab run`` keeps a scenario's pods until the next run, as it does for a user, so a test that ran one (a
    runbook's fraction, holding a GPU and its reservation pod) took a GPU from the next test's fleet — a fractions
    test that wants a node's GPUs free, a lesson that counts on all 32."""
    if lab.kai_reason:
        if IN_CI:
            pytest.fail(f"CI must prove the lessons on the real KAI, but KAI cannot be built: {lab.kai_reason}")
        pytest.skip(f"KAI is not available on this machine: {lab.kai_reason}")
    yield lab
    free_the_fleet(lab.kube)


def free_the_fleet(kube: Kube, timeout: float = 60) -> None:
    """Empty the lab's scenario namespaces that have pods (as the next lesson would) and wait for KAI to remove the
    GPU reservation pods that held their fractions' GPUs."""
    with private_network():
        clear_scenarios(kube)
        deadline = time.monotonic() + timeout
        while kube.core.list_namespaced_pod(RESERVATION_NAMESPACE, limit=1).items and time.monotonic() < deadline:
            time.sleep(0.5)
