"""The gpuLedger step: what it needs of a cluster, that a scenario which stops the ledger always starts it again,
and which runtimes can do it (the local one only)."""

from __future__ import annotations

import pytest

from kailab.errors import KailabError
from kailab.paths import RUNBOOKS
from kailab.progress import Progress
from kailab.scenarios.engine import Engine
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.model import ABILITIES
from kailab.scenarios.replay import ReplayCluster

SCENARIO = RUNBOOKS / "scenarios" / "gpu-sharing-reservation.yaml"


class Lacking(ReplayCluster):
    def __init__(self, lacking: set[str]):
        super().__init__([], node_gpus=[8, 8, 8, 4, 4])
        self.lacking = lacking

    def abilities(self):
        return frozenset(ABILITIES) - self.lacking


def test_without_control_of_the_ledger_the_scenario_is_not_applicable_and_touches_nothing():
    cluster = Lacking({"gpu-ledger-control"})
    verdict = Engine(cluster, Progress(quiet=True)).run(load_scenario(SCENARIO))
    assert verdict.outcome == "NOT APPLICABLE" and cluster.calls == []
    assert "local runtime" in verdict.not_applicable and "GPU ledger" in verdict.not_applicable


def test_a_scenario_that_stops_the_ledger_starts_it_again_even_when_it_fails():
    cluster = Lacking(set())  # a recording with no changes: the first expectation fails
    verdict = Engine(cluster, Progress(quiet=True)).run(load_scenario(SCENARIO))
    assert not verdict.passed
    ledger = [verb for verb, what in cluster.calls if what == "gpu-ledger"]
    assert ledger == ["stop", "start"], cluster.calls
    assert cluster.calls.index(("stop", "gpu-ledger")) < cluster.calls.index(("apply", "Job/half"))


def test_only_the_local_runtime_controls_the_ledger(tmp_path):
    from kailab.runtimes.existing import ExistingRuntime
    from kailab.runtimes.kind import KindRuntime
    from kailab.runtimes.local import LocalRuntime
    from kailab.runtimes.local_controls import LocalGpuLedgerControl

    assert isinstance(LocalRuntime(home=tmp_path).capabilities().gpu_ledger, LocalGpuLedgerControl)
    for runtime in (KindRuntime, ExistingRuntime):
        assert runtime(home=tmp_path).capabilities().gpu_ledger is None


def test_a_local_lab_without_kai_has_no_ledger_to_control(tmp_path):
    from kailab.labstate import LabState
    from kailab.runtimes.local import LocalRuntime

    with pytest.raises(KailabError, match="runs no GPU ledger"):
        LocalRuntime(home=tmp_path).gpu_ledger_control().start()  # no lab at all
    LabState("local", str(tmp_path / "kubeconfig"), kai_components=[]).write(tmp_path)
    # a lab without KAI: a scenario that needs it is not applicable
    assert LocalRuntime(home=tmp_path).capabilities().gpu_ledger is None
