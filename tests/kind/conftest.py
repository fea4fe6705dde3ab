"""The kind tests, one at a time (they run on the machine's network, where Docker publishes kind's API server).

Both make the kind cluster ``kailab`` and compare Docker's containers, networks and images before and after, so
a test worker takes a lock on the machine for each kind test file, as workers run side by side (tests/networks.py).
"""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path

import pytest

LOCK = Path(tempfile.gettempdir()) / "kailab-kind-tests.lock"


@pytest.fixture(scope="module", autouse=True)
def one_kind_test_file_at_a_time():
    with open(LOCK, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield
