"""Each fleet test file runs in its worker's own network namespace, where that worker's lab is (tests/networks.py)."""

from __future__ import annotations

import pytest
from networks import machine_network, private_network

from kailab import build, operators
from kailab.progress import Progress


@pytest.fixture(scope="module", autouse=True)
def on_the_workers_own_network():
    with private_network():
        yield


@pytest.fixture
def kuberay_built(kai_reason):
    """KubeRay built (on the machine's network: Go modules) for a test whose lesson starts it: built only for the
    tests that need it, and the lesson starts it in its lab."""
    if kai_reason is None:
        with machine_network():
            build.ensure_built(
                [operators.OPERATORS["kuberay"].build], Progress(), lock=operators.OPERATORS["kuberay"].build_lock
            )


@pytest.fixture(scope="session")
def operators_built(kai_reason):
    """Every operator built (on the machine's network) for the operators' own proofs."""
    if kai_reason is None:
        with machine_network():
            for op in operators.OPERATORS.values():
                build.ensure_built([op.build], Progress(), lock=op.build_lock)
