"""The lessons whose verdicts hung on timing, side by side as ``kailab demo all`` runs them, beside a synthetic CPU
load of twice the cores (stress-ng) on the real KAI: every verdict PASS, or UNDECIDED with what was seen — never
FAIL (issue 41). On a busy host these failed: protection's window measured by kailab's clock, and waits of 30 s
for a reclaim or a preemption (priority, reclaim, borrow, quota).

One run of six lessons, to keep CI under its hour; ``python bench/under_load.py`` runs every lesson three times so,
after a run on the quiet machine. The same lessons PASS quietly with their golden rows in
test_demo_side_by_side_fleet.py. The test has the machine alone (marker ``alone``): the other worker's tests wait.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from kailab.checks import BUSY_PREFIX
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.parallel import SideBySide
from kailab.progress import Progress

pytestmark = [pytest.mark.fleet, pytest.mark.kai, pytest.mark.alone]

TIMED = ["protection", "preempt-delay", "staleness", "priority", "reclaim", "borrow"]


def test_timing_lessons_beside_twice_the_cores_of_load_never_fail(kai_lab, stress_ng):
    from kailab.lab import Lab

    cores = os.cpu_count() or 1
    stress = subprocess.Popen(
        [stress_ng, "--cpu", str(2 * cores), "--timeout", "900s", "--quiet"], start_new_session=True
    )
    try:
        time.sleep(5)  # the load is on before the lessons start
        said = kai_lab.cli("status", "--json", check=True).stdout
        kubeconfig, lab = kai_lab.runtime.kubeconfig(), Lab.open()
        run = SideBySide(
            lab.capabilities.partitions,
            load_fleet(),
            lambda: Kube(kubeconfig),
            Progress(quiet=True),
            len(TIMED),
            lab.cluster,
        )
        verdicts = run.run(TIMED)
    finally:
        os.killpg(stress.pid, signal.SIGTERM)
        stress.wait()
    assert '"load"' in said  # kailab status read the lab's pace
    for v in verdicts:
        rows = [(c.title, c.outcome, c.observed, c.undecided) for c in v.checks if not c.passed]
        assert v.outcome in ("PASS", "UNDECIDED"), (v.scenario, v.error, rows)
        assert not v.error, (v.scenario, v.error)
        for c in v.checks:  # UNDECIDED says why, with what was seen
            assert c.passed or c.undecided.startswith(BUSY_PREFIX + " — "), (v.scenario, c)
    undecided = [v.scenario for v in verdicts if v.outcome == "UNDECIDED"]
    assert len(undecided) < len(verdicts), "every verdict UNDECIDED: the test proved nothing"
