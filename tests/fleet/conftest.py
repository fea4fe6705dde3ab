"""Each fleet test file runs in its worker's own network namespace, where that worker's lab is (tests/networks.py)."""

from __future__ import annotations

import pytest
from networks import private_network


@pytest.fixture(scope="module", autouse=True)
def on_the_workers_own_network():
    with private_network():
        yield
