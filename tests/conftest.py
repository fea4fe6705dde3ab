"""Shared fixtures: one local lab per test session, with KAI when the pinned KAI can be had.

A contributor's machine that cannot build the fleet skips the fleet tests with the
reason; under CI (CI=true) a missing toolchain is a failure instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kailab import build, versions
from kailab.errors import KailabError
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.progress import Progress
from kailab.runtimes.base import UpOptions
from kailab.runtimes.local import LocalRuntime, lab_pids

IN_CI = os.environ.get("CI", "").lower() == "true"


def kai_unavailable_reason() -> str | None:
    """None when KAI can run on the local fleet, else the measured reason it cannot."""
    kai = versions.build("kai")
    if build.is_built(kai):
        return None
    answer = build.module_available(kai)
    if answer is None:
        return None
    return f"the Go module proxy does not serve {kai.module}@{kai.version}: {answer.strip().splitlines()[-1]}"


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
    runtime.up(UpOptions(fleet=load_fleet(), with_kai=kai_reason is None), Progress())
    yield Lab(runtime, home, Kube(runtime.kubeconfig()), kai_reason)
    runtime.down(Progress())
    assert lab_pids(str(home)) == [], "processes of the lab are left after down"


class Lab:
    def __init__(self, runtime: LocalRuntime, home: Path, kube: Kube, kai_reason: str | None):
        self.runtime = runtime
        self.home = home
        self.kube = kube
        self.kai_reason = kai_reason

    def cli(self, *args: str, check: bool = False) -> subprocess.CompletedProcess:
        """Run the kailab command line against this lab, as a user would."""
        env = {**os.environ, "KAILAB_HOME": str(self.home)}
        proc = subprocess.run([sys.executable, "-m", "kailab", *args], capture_output=True, text=True, env=env, timeout=600)
        if check and proc.returncode != 0:
            raise AssertionError(f"kailab {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc


@pytest.fixture
def kai_lab(lab):
    """The lab, for tests that need the real KAI Scheduler."""
    if lab.kai_reason:
        pytest.skip(f"KAI is not available on this machine: {lab.kai_reason}")
    return lab
