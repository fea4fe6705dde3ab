"""The pure core: changes folded into a RunState, observed as the checks see it."""

from __future__ import annotations

from types import SimpleNamespace

from kailab.pods import EventView, PodView
from kailab.scenarios.fold import Change, RunState, fold, observe
from kailab.watched import Watched


def pod(name, workload="w", queue="q", node="", phase="Pending", pod_group="", waiting="", bound_at=None):
    return PodView(
        name,
        workload=workload,
        queue=queue,
        node=node,
        phase=phase,
        gpus=1,
        pod_group=pod_group,
        waiting=waiting,
        bound_at=bound_at,
    )


def run(*changes: Change) -> RunState:
    state = RunState()
    for c in changes:
        fold(state, c)
    return state


def test_a_deleted_pod_leaves_the_observation_but_its_eviction_keeps_its_workload_and_queue():
    state = run(
        Change("ADDED", pod=pod("a-0", workload="a", queue="team-prod", node="n1", phase="Running", pod_group="pg-a")),
        Change("DELETED", pod=pod("a-0", workload="a", queue="team-prod", node="n1", phase="Running")),
        Change("ADDED", event=EventView("PodGroup", "pg-a", "Evict", "Pod ns/a-0 was preempted by workload ns/b", 5.0)),
    )
    obs = observe(state)
    assert obs.pods == [] and obs.evicted == {"a": {"a-0"}} and obs.evicted_queue == {"team-prod": {"a-0"}}


def test_a_stale_gangs_eviction_names_its_victim_even_in_a_workload_the_lab_scaled_down():
    # KAI v0.17.0's words, pkg/scheduler/api/unschedule_info.go (getGangEvictionForDefaultSubgroupMessage)
    said = "Workload doesn't meet the minimum required number of pods (2), evicting remaining pod: ns/job-gang-x1"
    state = RunState(released={"job-gang"})  # deleted pods of a scaled-down workload are not evictions…
    for c in (
        Change("ADDED", pod=pod("job-gang-x1", workload="job-gang", node="n1", phase="Running", pod_group="pg-j")),
        Change("DELETED", pod=pod("job-gang-x1", workload="job-gang", node="n1", phase="Running")),
    ):
        fold(state, c)
    assert observe(state).evicted == {}
    fold(state, Change("ADDED", event=EventView("PodGroup", "pg-j", "Evict", said, 5.0)))  # …KAI's word is
    assert observe(state).evicted == {"job-gang": {"job-gang-x1"}}


def test_a_bound_pod_deleted_by_another_hand_is_evicted_even_when_its_event_was_dropped():
    def deleting(name, workload):
        p = pod(name, workload=workload, node="n1", phase="Running")
        return Change("MODIFIED", pod=PodView(**{**p.to_json(), "deleting": True}))

    state = RunState(released={"gone"}, removed={"b-1"})
    for c in (
        deleting("a-0", "a"),
        deleting("g-0", "gone"),
        deleting("b-1", "b"),
        Change("MODIFIED", pod=PodView(**{**pod("c-0", workload="c").to_json(), "deleting": True})),
    ):
        fold(state, c)
    # a-0: taken by the scheduler; g-0: its workload was deleted by the lab; b-1: a deletePods step; c-0: never bound
    assert observe(state).evicted == {"a": {"a-0"}}


def test_waiting_reasons_come_from_pods_and_podgroups_in_time_order_once_each():
    state = run(
        Change("ADDED", pod=pod("g-0", workload="g", pod_group="pg-g", waiting="pod says")),
        Change("ADDED", event=EventView("PodGroup", "pg-g", "Unschedulable", "second", 20.0)),
        Change("ADDED", event=EventView("PodGroup", "pg-g", "Unschedulable", "first", 10.0)),
        Change("MODIFIED", event=EventView("PodGroup", "pg-g", "Unschedulable", "second", 30.0)),  # count+1
        Change("ADDED", event=EventView("PodGroup", "pg-other", "Unschedulable", "not ours", 1.0)),
        Change("ADDED", event=EventView("Pod", "g-0", "Scheduled", "not a reason", 2.0)),
    )
    assert observe(state).reasons == {"g": ["pod says", "first", "second"]}


def test_first_bound_is_the_earliest_bind_of_each_workload():
    state = run(
        Change("ADDED", pod=pod("a-0", workload="a", node="n", bound_at=12.0)),
        Change("ADDED", pod=pod("a-1", workload="a", node="n", bound_at=10.0)),
        Change("ADDED", pod=pod("b-0", workload="b")),
    )
    assert observe(state).first_bound == {"a": 10.0}


def test_a_change_survives_its_json_line():
    c = Change("MODIFIED", pod=pod("a-0", node="n1", phase="Running", bound_at=3.5), t=1.25)
    assert Change.from_json(c.to_json()) == c
    e = Change("ADDED", event=EventView("Pod", "a-0", "Preempted", "preempted by x", 9.0, "ns"), t=2.0)
    assert Change.from_json(e.to_json()) == e


def obj(name: str, rv: str):
    return SimpleNamespace(metadata=SimpleNamespace(namespace="ns", name=name, resource_version=rv))


def test_a_relist_tells_listeners_what_changed_while_the_watch_was_down():
    w = Watched(lambda **_: None)
    seen: list[tuple[str, str]] = []
    w.on_change(lambda kind, o: seen.append((kind, o.metadata.name)))
    w._relisted([obj("a", "1"), obj("b", "1")])
    w._relisted([obj("a", "1"), obj("b", "2"), obj("c", "1")])  # b changed, c new
    w._relisted([obj("c", "1")])  # a and b gone
    assert seen == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "b"),
        ("ADDED", "c"),
        ("DELETED", "a"),
        ("DELETED", "b"),
    ]
    assert sorted(w.objects) == ["ns/c"] and w.version == 6


def test_the_recorder_writes_every_kind_of_change_with_its_time_into_the_run(tmp_path):
    from kailab.fairshare import FairShare
    from kailab.pods import PodGroupView
    from kailab.scenarios.replay import ReplayCluster, read_changes
    from kailab.scenarios.run import Recorder

    stream = [
        Change("ADDED", pod=pod("a-0"), t=0.5),
        Change("ADDED", group=PodGroupView("pg-a", "a"), t=1.0),
        Change("MODIFIED", share=FairShare("q", gpu=8.5), t=2.0),
    ]
    source = ReplayCluster(stream)
    rec = Recorder(source, tmp_path / "s" / "changes.jsonl", start=0.25)  # the run began at 0.25 on that clock
    while rec.next(5) is not None:
        pass
    rec.close()
    again = read_changes(tmp_path / "s" / "changes.jsonl")
    assert [c.t for c in again] == [0.25, 0.75, 1.75]
    assert again[1].group == PodGroupView("pg-a", "a") and again[2].share == FairShare("q", gpu=8.5)


def test_a_job_controllers_words_are_its_workloads_and_no_one_elses():
    """A Job whose pods the API server refuses has no pod: its controller's FailedCreate is the only reason."""
    refused = 'Error creating: pods "typo-x" is forbidden: no PriorityClass with name trian was found'
    state = run(
        Change("ADDED", event=EventView("Job", "typo", "FailedCreate", refused, 1.0)),
        Change("ADDED", event=EventView("Job", "many-2", "FailedCreate", "for many", 2.0)),
        Change("ADDED", event=EventView("Job", "stranger-1", "FailedCreate", "not a workload of the run", 3.0)),
        Change("ADDED", event=EventView("Job", "typo", "SuccessfulCreate", "not a reason", 4.0)),
    )
    state.sizes.update({"typo": 1, "many": 3})
    assert observe(state).reasons == {"typo": [refused], "many": ["for many"]}


def test_a_change_that_repeats_the_state_leaves_its_counters_and_one_that_does_not_moves_them():
    state = run(
        Change("ADDED", pod=pod("a-0")), Change("ADDED", event=EventView("Pod", "a-0", "FailedScheduling", "no", 1.0))
    )
    counters = (state.version, state.pods_version, state.reasons_version)
    fold(state, Change("MODIFIED", pod=pod("a-0")))
    fold(state, Change("ADDED", event=EventView("Pod", "a-0", "FailedScheduling", "no", 1.0)))
    fold(state, Change("ADDED", event=EventView("Pod", "a-0", "Scheduled", "not a reason", 2.0)))
    assert (state.version, state.pods_version, state.reasons_version) == counters
    held = state.held_version
    fold(state, Change("MODIFIED", pod=pod("a-0", node="n1", phase="Running")))
    assert state.pods_version == counters[1] + 1 and state.reasons_version == counters[2]
    assert state.held_version == held + 1  # bound: it holds its GPU for its queue
    fold(state, Change("MODIFIED", pod=pod("a-0", node="n1", phase="Running", waiting="said")))
    assert state.pods_version == counters[1] + 2 and state.held_version == held + 1
    fold(state, Change("ADDED", event=EventView("Pod", "a-0", "FailedScheduling", "no", 3.0)))  # said again, later
    assert state.reasons_version == counters[2] + 1 and state.version == counters[0] + 3


def test_while_the_counters_stay_the_observation_does_and_what_observe_keeps_gives_it_afresh():
    """Every golden stream, change by change: the observation made from the parts observe keeps is the one made from
    nothing; while ``version`` stays, so does it (what Run.observe relies on); while ``held_version`` stays, so do
    the GPUs per queue, to the last bit (Run.sample)."""
    from dataclasses import replace
    from pathlib import Path

    from kailab.gpus import per_queue
    from kailab.scenarios.replay import read_changes

    streams = sorted(Path(__file__).parent.parent.joinpath("golden").glob("*/changes.jsonl"))
    assert len(streams) > 20
    for path in streams:
        state = RunState()
        last = (state.version, observe(state), state.held_version, per_queue([]))
        for change in read_changes(path):
            fold(state, change)
            afresh = observe(replace(state, kept={}))
            assert observe(state) == afresh, f"{path}: {change}"
            if state.version == last[0]:
                assert afresh == last[1], f"{path}: {change}"
            if state.held_version == last[2]:
                assert per_queue(state.pods.values()) == last[3], f"{path}: {change}"
            last = (state.version, afresh, state.held_version, per_queue(state.pods.values()))


def test_a_jobs_words_become_its_workloads_when_the_engine_sets_the_workloads_size_after_they_came():
    """The words kept by observe are worked out again when the sizes change (the engine sets them, not fold)."""
    state = run(Change("ADDED", event=EventView("Job", "late-0", "FailedCreate", "refused", 1.0)))
    assert observe(state).reasons == {}
    state.sizes["late"] = 1
    assert observe(state).reasons == {"late": ["refused"]}


def test_a_runs_observation_follows_the_sizes_its_steps_set():
    from kailab.checks import Verdict
    from kailab.scenarios.replay import ReplayCluster
    from kailab.scenarios.run import Run

    cluster = ReplayCluster([Change("ADDED", event=EventView("Job", "late-0", "FailedCreate", "refused", 1.0))])
    r = Run(cluster, SimpleNamespace(predictions=()), Verdict("s", "t"), 0.0, cluster)
    r.take(1)
    before = r.observe()
    assert before.reasons == {} and r.observe() is before  # kept while nothing changed
    r.resized("late", 1)
    assert r.observe().sizes == {"late": 1} and r.observe().reasons == {"late": ["refused"]}
