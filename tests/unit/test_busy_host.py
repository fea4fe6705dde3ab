"""A verdict never depends on how busy the host is (issue 41): waits grow with the lab's pace, what KAI times is
decided by the cluster's clock, and what the lab could not tell is UNDECIDED — each shown on recorded streams
replayed through the real engine, the same stream decided both ways where only the lab's pace or the cluster's
times differ."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kailab import pace
from kailab.checks import EXIT_UNDECIDED, Check, Verdict, exit_code, tally
from kailab.errors import ScenarioError
from kailab.progress import Progress
from kailab.scenarios.engine import Engine
from kailab.scenarios.fold import Change, RunState, fold
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.replay import ReplayCluster

T0 = datetime(2026, 11, 27, 10, 0, 0, tzinfo=UTC).timestamp()  # the cluster's clock at the first step


def rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def scenario(tmp_path: Path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path)


def run(s, changes: list[dict]) -> Verdict:
    return Engine(ReplayCluster([Change.from_json(c) for c in changes]), Progress(quiet=True)).run(s)


def pod(name: str, t: float, at: float | None, **kw) -> dict:
    body = {"name": name, "phase": "Pending", **kw}
    return {"t": t, "type": "MODIFIED" if kw.get("node") else "ADDED", "pod": body, **({"at": at} if at else {})}


def paced(until: float, cycle: float, api: float = 0.01, every: float = 1.0) -> list[dict]:
    """A reading of the lab's pace every second, with the cluster's time of it."""
    out, t = [], 0.5
    while t < until:
        out.append({"t": t, "type": "PACE", "at": T0 + int(t), "pace": {"cycle": cycle, "api": api}})
        t += every
    return out


def by_time(changes: list[dict]) -> list[dict]:
    return sorted(changes, key=lambda c: c["t"])


# -- the lab's pace ------------------------------------------------------------------------------------------------

KAI_METRICS = """e2e_scheduling_latency_milliseconds 0
# HELP kai_e2e_scheduling_latency_milliseconds E2e scheduling latency
# TYPE kai_e2e_scheduling_latency_milliseconds gauge
kai_e2e_scheduling_latency_milliseconds 1800
kai_queue_fair_share_gpu{queue_name="a"} 8
"""
APISERVER = """apiserver_request_duration_seconds_sum{component="apiserver",verb="LIST",resource="pods"} S1
apiserver_request_duration_seconds_count{component="apiserver",verb="LIST",resource="pods"} C1
apiserver_request_duration_seconds_sum{component="apiserver",verb="WATCH",resource="pods"} W1
apiserver_request_duration_seconds_count{component="apiserver",verb="WATCH",resource="pods"} 3
"""


def apiserver(s1: float, c1: int, w: float) -> str:
    return APISERVER.replace("S1", str(s1)).replace("C1", str(c1)).replace("W1", str(w))


def test_the_pace_is_read_from_kai_and_the_api_servers_own_metrics():
    assert pace.cycle_work(KAI_METRICS) == 1.8
    assert pace.cycle_work("kai_queue_fair_share_gpu 8") is None
    before = apiserver(10.0, 100, 500.0)
    after = apiserver(30.0, 140, 9000.0)  # watches stay open for minutes: not latency
    assert pace.api_latency(before, after) == pytest.approx(0.5)
    assert pace.api_latency(before, before) is None  # no request in between: nothing to say


def test_slowdown_is_against_a_quiet_lab_and_busy_words_say_so():
    assert pace.slowdown(pace.Pace(pace.QUIET_CYCLE_WORK, pace.QUIET_API)) == pytest.approx(1.0)
    assert pace.slowdown(pace.Pace(api=0.004)) == 1.0  # faster than quiet is not "faster than 1"
    slow = pace.Pace(cycle=1.8, api=0.02)
    assert pace.slowdown(slow) >= pace.BUSY
    said = pace.busy_words(slow)
    assert "1.8 s" in said and "fewer lessons or learners" in said
    assert pace.busy_words(pace.Pace(cycle=0.02, api=0.01)) == ""
    assert pace.slowdown(pace.Pace(cycle=600.0)) == pace.MOST


def test_changes_carry_the_clusters_time_the_pace_and_the_steps_through_their_json_lines():
    for c in (
        Change("PACE", pace=pace.Pace(0.4, 0.02), at=T0, t=1.0),
        Change("STEP", step=3, at=T0 + 2, t=2.0),
        Change.from_json({"t": 1, "type": "ADDED", "pod": {"name": "a"}, "at": T0}),
    ):
        assert Change.from_json(json.loads(json.dumps(c.to_json()))) == c
    state = RunState()
    for c in (
        Change("ADDED", at=T0 + 5, t=1, pod=Change.from_json({"t": 0, "type": "ADDED", "pod": {"name": "a"}}).pod),
        Change("PACE", pace=pace.Pace(0.1), at=T0 + 9, t=2),
        Change("STEP", step=1, at=T0 + 7, t=3),
    ):
        fold(state, c)
    assert state.server_now == T0 + 9  # a pace reading's Date moves the cluster's clock…
    assert state.seen_at == T0 + 5  # …but only a change to an object says when what is observed became so
    assert state.steps == {1: T0 + 7} and len(state.paces) == 1


def test_object_time_is_the_latest_write_or_when_a_graceful_deletion_began():
    from kailab.pods import object_time

    pod = {
        "metadata": {
            "creationTimestamp": rfc3339(T0),
            "managedFields": [{"manager": "kwok", "time": rfc3339(T0 + 4)}, {"manager": "x", "time": rfc3339(T0 + 2)}],
        },
        "status": {"conditions": [{"type": "PodScheduled", "lastTransitionTime": rfc3339(T0 + 3)}]},
    }
    assert object_time(pod) == T0 + 4
    pod["metadata"] |= {"deletionTimestamp": rfc3339(T0 + 40), "deletionGracePeriodSeconds": 30}
    assert object_time(pod) == T0 + 10  # deleted at +10 with 30 s of grace, not "at +40"
    assert object_time({"metadata": {}}) is None


# -- waits grow with the lab's pace; what they could not tell is UNDECIDED ------------------------------------------

SLOW_JOB = """
name: slow
queues:
  - {name: team, gpu: {quota: 8}}
workloads:
  - {name: w, queue: team, pods: 8, gpus: 1, priorityClass: train}
steps:
  - apply: w
  - expect: {workload: w, title: "all 8 run", running: 8}
    timeout: 10s
"""


def binding(count: int, every: float) -> list[dict]:
    """w's pods: all Pending at once, then one Running every ``every`` seconds (KAI one a cycle)."""
    out = [pod(f"w-{i}", 0.2, T0, workload="w", queue="team") for i in range(8)]
    out += [
        pod(f"w-{i}", every * (i + 1), T0 + int(every * (i + 1)), workload="w", queue="team", node="n", phase="Running")
        for i in range(count)
    ]
    return out


def test_a_wait_on_a_slow_lab_grows_with_kais_cycle_and_passes(tmp_path):
    """The same pods, bound one every 4 s: on a lab whose KAI cycle takes 1.8 s the 10 s wait grows and sees all 8;
    read as a quiet lab, the wait runs out (FAIL) — the pace read is all that differs."""
    s = scenario(tmp_path, SLOW_JOB)
    slow = run(s, by_time(binding(8, 4.0) + paced(60, cycle=1.8)))
    assert slow.outcome == "PASS", [c.to_dict() for c in slow.checks]
    quiet = run(s, by_time(binding(8, 4.0) + paced(60, cycle=0.02)))
    assert quiet.outcome == "FAIL" and quiet.checks[0].observed != "8"
    assert quiet.exit_code == 1 and slow.exit_code == 0


def test_a_wait_that_runs_out_on_a_busy_lab_is_undecided_with_what_was_seen(tmp_path):
    s = scenario(tmp_path, SLOW_JOB)
    v = run(s, by_time(binding(5, 4.0) + paced(200, cycle=1.8)))
    (row,) = v.checks
    assert v.outcome == "UNDECIDED" and row.outcome == "UNDECIDED" and not row.passed
    assert row.undecided.startswith("the host was too busy — waited ")
    assert "all 8 run: 5" in row.undecided and "KAI's last scheduling cycle 1.8 s" in row.undecided
    assert v.exit_code == EXIT_UNDECIDED and v.to_dict()["outcome"] == "UNDECIDED"
    assert v.to_dict()["checks"][0]["undecided"] == row.undecided
    quiet = run(s, by_time(binding(5, 4.0) + paced(200, cycle=0.02)))  # the same, read as a quiet lab: KAI stopped
    assert quiet.outcome == "FAIL" and not quiet.checks[0].undecided


def test_a_wait_waits_on_while_what_it_waits_for_keeps_moving(tmp_path):
    """A quiet lab where KAI binds one pod every 2 s: 16 s in all, past the 10 s timeout, but never 3 s without a
    change — it passes; nothing new for longer than that and it fails."""
    s = scenario(tmp_path, SLOW_JOB)
    assert run(s, by_time(binding(8, 2.0) + paced(60, cycle=0.02))).outcome == "PASS"


# -- KAI's windows by the cluster's clock -----------------------------------------------------------------------------

PROTECTION = """
name: window
queues:
  - {name: team-borrow, gpu: {quota: 8}, reclaimMinRuntime: 15s}
  - {name: team-owner, gpu: {quota: 8}}
workloads:
  - {name: borrower, queue: team-borrow, pods: 8, gpus: 1, priorityClass: train}
  - {name: owner, queue: team-owner, pods: 8, gpus: 1, priorityClass: train}
steps:
  - apply: borrower
  - apply: owner
  - expect:
      - {queue: team-owner, title: "the owner waits", running: 0,
         throughWindow: {workload: borrower, kind: reclaimMinRuntime}}
      - {workload: borrower, title: "the borrower loses nothing", evicted: 0,
         throughWindow: {workload: borrower, kind: reclaimMinRuntime}}
    timeout: 5s
"""


def protection_stream(owner_at: float, evicted_at: float, evicted_t: float, lag: float = 0.0) -> list[dict]:
    """The borrower started at T0 (its PodGroup's last-start-timestamp): its 15 s window ends at T0+15. The owner
    asks at ``owner_at``; one borrower pod is evicted at the cluster's time ``evicted_at``, which kailab hears
    ``evicted_t`` seconds in; it hears every reading of the cluster's clock ``lag`` seconds late (a busy host)."""
    group = {
        "name": "pg-borrower",
        "workload": "borrower",
        "fields": {},
        "conditions": [],
        "annotations": {"kai.scheduler/last-start-timestamp": rfc3339(T0)},
        "created": T0 - 1,
    }
    running = {"workload": "borrower", "queue": "team-borrow", "node": "n", "phase": "Running"}
    return by_time(
        [
            {"t": 0.0, "type": "STEP", "step": 1, "at": T0 - 1},
            {"t": 0.0, "type": "STEP", "step": 2, "at": owner_at},
            {"t": 0.0, "type": "ADDED", "podGroup": group, "at": T0},
            *(pod(f"borrower-{i}", 0.0, T0, **running) for i in range(8)),
            *(pod(f"owner-{i}", 0.1, owner_at, workload="owner", queue="team-owner") for i in range(8)),
            {**pod("borrower-0", evicted_t, evicted_at, **running, deleting=True), "type": "MODIFIED"},
            *(
                {"t": t, "type": "PACE", "at": owner_at + int(t - lag), "pace": {"cycle": 0.02, "api": 0.01}}
                for t in [x + 0.5 + lag for x in range(40)]
            ),
        ]
    )


def test_kai_keeping_its_window_passes_even_when_the_lab_hears_of_it_late(tmp_path):
    """Owner at T0+5; KAI reclaims at T0+15 when the window ends — by the cluster's clock; kailab hears it 12 s
    after the step (its own clock would call that "inside the hold" of 5 s). PASS."""
    v = run(scenario(tmp_path, PROTECTION), protection_stream(T0 + 5, T0 + 15, 12.0))
    assert v.outcome == "PASS", [c.to_dict() for c in v.checks]


def test_an_eviction_inside_the_window_fails_and_says_when_by_the_clusters_clock(tmp_path):
    v = run(scenario(tmp_path, PROTECTION), protection_stream(T0 + 5, T0 + 9, 4.0))
    row = next(c for c in v.checks if c.title == "the borrower loses nothing")
    assert v.outcome == "FAIL" and row.outcome == "FAIL" and row.observed.startswith("1 (changed at 10:00:09 UTC")
    assert "6s before the window ended at 10:00:15 UTC: pg-borrower started 10:00:00 UTC + 15s" in row.observed


def test_a_window_over_before_the_step_it_is_about_is_undecided(tmp_path):
    """The owner asked at T0+14.5 (the lab was slow to get there): one second of the window was left — KAI's
    reclaim at T0+16 proves nothing either way."""
    v = run(scenario(tmp_path, PROTECTION), protection_stream(T0 + 14, T0 + 16, 3.0))
    assert v.outcome == "UNDECIDED" and {c.outcome for c in v.checks} == {"UNDECIDED"}
    assert "the window ended at 10:00:15 UTC (pg-borrower started 10:00:00 UTC + 15s)" in v.checks[0].undecided
    assert "came at 10:00:14 UTC: only 1s before" in v.checks[0].undecided


def test_a_hold_is_timed_by_the_clusters_clock(tmp_path):
    """``stable: 5s``: a change the cluster timed 2 s after the claim first held breaks it, though kailab, 4 s
    behind the cluster, hears of it 6 s after (by its own clock the hold was over); one timed 7 s after does not."""
    text = PROTECTION.replace("throughWindow: {workload: borrower, kind: reclaimMinRuntime}}", "stable: 5s}").replace(
        "reclaimMinRuntime: 15s", ""
    )
    s = scenario(tmp_path, text)
    early = run(s, protection_stream(T0 + 5, T0 + 7, 6.0, lag=4.0))
    assert early.outcome == "FAIL", [c.to_dict() for c in early.checks]
    assert "2s after it first held, by the cluster's clock" in early.checks[1].observed
    assert run(s, protection_stream(T0 + 5, T0 + 12, 11.0, lag=4.0)).outcome == "PASS"


def test_a_window_needs_its_length_from_the_scenario(tmp_path):
    with pytest.raises(ScenarioError, match="sets no reclaimMinRuntime"):
        scenario(tmp_path, PROTECTION.replace("reclaimMinRuntime: 15s", ""))
    with pytest.raises(ScenarioError, match="not both"):
        scenario(tmp_path, PROTECTION.replace("evicted: 0,", "evicted: 0, stable: 5s,"))
    with pytest.raises(ScenarioError, match="which sets no preemptionDelay"):
        scenario(tmp_path, PROTECTION.replace("kind: reclaimMinRuntime}}", "kind: preemptionDelay}}", 1))


# -- the verdict's outcome, everywhere it is shown -------------------------------------------------------------------


def test_undecided_has_its_own_outcome_exit_code_and_count():
    ok = Verdict("a", "A", checks=[Check("x", "1", "1", True)])
    busy = Verdict("b", "B", checks=[Check("x", "1", "1", True), Check("y", "8", "5", False).undecide("the host…")])
    bad = Verdict("c", "C", checks=[Check("x", "1", "0", False), Check("y", "8", "5", False).undecide("the host…")])
    assert [v.outcome for v in (ok, busy, bad)] == ["PASS", "UNDECIDED", "FAIL"]
    assert exit_code([ok]) == 0 and exit_code([ok, busy]) == EXIT_UNDECIDED == 3 and exit_code([busy, bad]) == 1
    assert tally([ok, busy, bad, busy]) == {"PASS": 1, "UNDECIDED": 2, "FAIL": 1}
    assert Verdict.from_record(busy.to_record()).outcome == "UNDECIDED"
    assert "undecided" not in ok.to_dict()["checks"][0]  # a decided row reads as it always has


def test_demo_output_counts_undecided_apart_and_says_what_to_do(capsys):
    from kailab import render

    busy = Verdict("b", "B", checks=[Check("y", "8", "5", False).undecide("the host was too busy — waited 90s")])
    busy.load = "The lab is busy: API requests 0.4 s (quiet: about 15 ms)"
    render.print_verdicts([Verdict("a", "A", checks=[Check("x", "1", "1", True)]), busy], as_json=False)
    out = capsys.readouterr().out
    assert "1 of 2 exercises passed, 1 undecided" in out and "b UNDECIDED" in out
    assert "the host was too busy — waited 90s" in out and "run fewer lessons or learners at once" in out
    assert "1 started on a busy lab (b): The lab is busy: API requests 0.4 s" in out


def test_class_status_counts_undecided_apart():
    from kailab.classroom.report import outcome_counts

    report = {
        "ann": {"lessons": {"quota": {"outcome": "PASS"}, "reclaim": {"outcome": "UNDECIDED"}}},
        "bob": {"lessons": {"quota": {"outcome": "FAIL"}, "gang": {"outcome": "RUNNING"}}},
    }
    said = outcome_counts(report)
    assert said.startswith("Verdicts: 1 PASS, 1 FAIL, 1 UNDECIDED, 1 RUNNING")
    assert "fewer learners at once" in said
    assert outcome_counts({"ann": {"lessons": {}}}) == ""


def test_the_evidence_report_carries_undecided_rows_and_why():
    from kailab.evidence import render_report

    busy = Verdict("b", "B", checks=[Check("y", "8", "5", False).undecide("the host was too busy — waited 90s")])
    page = render_report([busy.to_record()], [], [], False)
    assert "## B — UNDECIDED" in page and "| y | 8 | 5 | UNDECIDED |" in page
    assert "UNDECIDED, y: the host was too busy — waited 90s" in page


def test_the_labs_own_wait_running_out_on_a_busy_lab_is_undecided_not_an_error(tmp_path):
    """A scheduler restart (the lab's own step) that times out: on a measurably busy lab the lesson could not be
    played to its end — UNDECIDED, with why; on a quiet one it is the error it always was."""
    from kailab.errors import KailabError
    from kailab.waiting import TimedOut, until

    class Restarting(ReplayCluster):
        def __init__(self, reading):
            super().__init__([])
            self.reading = reading

        def stop_scheduler(self):
            until(lambda: False, 0, fail=lambda _: KailabError("kai-scheduler ran no scheduling cycle within 0s"))

        def pace(self, namespace="default"):
            return self.reading

    s = scenario(tmp_path, SLOW_JOB.replace("  - apply: w\n", "  - stopScheduler: true\n  - apply: w\n"))
    busy = Engine(Restarting(pace.Pace(cycle=2.0, api=0.5)), Progress(quiet=True)).run(s)
    (row,) = busy.checks
    assert busy.outcome == "UNDECIDED" and not busy.error and row.title == "the lab's own step"
    assert "ran no scheduling cycle" in row.observed and row.undecided.startswith("the host was too busy — The lab")
    quiet = Engine(Restarting(pace.Pace(cycle=0.001, api=0.005)), Progress(quiet=True)).run(s)
    assert quiet.outcome == "FAIL" and "ran no scheduling cycle" in quiet.error and not quiet.checks
    with pytest.raises(KailabError) as raised:
        until(lambda: False, 0, fail=lambda _: KailabError("x"))
    assert isinstance(raised.value.__cause__, TimedOut)


def test_a_late_within_is_undecided_only_when_the_lab_was_that_slow(tmp_path):
    """All 8 run 32 s after the step, past ``within: 20s``: on a lab slower than quiet by more than 32/20 for most
    of the wait that proves nothing (UNDECIDED); on a quiet lab it is KAI's lateness (FAIL)."""
    text = SLOW_JOB.replace("running: 8}\n    timeout: 10s", "running: 8, within: 20s}\n    timeout: 60s")
    s = scenario(tmp_path, text)
    quiet = run(s, by_time(binding(8, 4.0) + paced(60, cycle=0.02)))
    within = next(c for c in quiet.checks if c.measure == "within")
    assert quiet.outcome == "FAIL" and within.outcome == "FAIL" and within.observed == "only after 32.0s"
    busy = run(s, by_time(binding(8, 4.0) + paced(60, cycle=1.8)))
    within = next(c for c in busy.checks if c.measure == "within")
    assert busy.outcome == "UNDECIDED" and within.outcome == "UNDECIDED", [c.to_dict() for c in busy.checks]
    assert "all 8 run: only after 32.0s" in within.undecided
