"""Where verdicts are decided: expectations against observations, no cluster needed."""

import pytest

from kailab.checks import Observation, PodView, evaluate, stragglers
from kailab.scenarios.model import Expectation
from kailab.scenarios.values import Bound


def pods(workload, queue, running=0, pending=0, deleting=0):
    out = [PodView(f"{workload}-r{i}", workload, queue, "Running", node="n1", gpus=1) for i in range(running)]
    out += [PodView(f"{workload}-p{i}", workload, queue, "Pending") for i in range(pending)]
    out += [
        PodView(f"{workload}-d{i}", workload, queue, "Running", node="n2", gpus=1, deleting=True)
        for i in range(deleting)
    ]
    return out


def exp(measure, want, **kw):
    counting = measure not in ("all_or_none", "reason", "bound_before")
    return Expectation(title=measure, measure=measure, want=want, bound=Bound.parse(want) if counting else None, **kw)


def test_counts_by_queue_and_workload():
    obs = Observation(pods=pods("a", "q1", running=3, pending=2) + pods("b", "q2", running=1))
    assert evaluate(exp("running", "3", queue="q1"), obs).passed
    assert evaluate(exp("pending", "2", workload="a"), obs).passed
    assert not evaluate(exp("running", "5"), obs).passed
    assert evaluate(exp("running", "4..4"), obs).observed == "4"


def test_pod_groups_counts_the_workloads_podgroups_only():
    from kailab.pods import PodGroupView

    groups = {"web": [PodGroupView(f"pg-web-{i}", "web") for i in range(4)], "db": [PodGroupView("pg-db", "db")]}
    obs = Observation(pods=pods("web", "q", running=3, pending=1), groups=groups)
    assert evaluate(exp("pod_groups", "4", workload="web"), obs).passed
    assert evaluate(exp("pod_groups", "1", workload="db"), obs).observed == "1"
    assert not evaluate(exp("pod_groups", "1", workload="web"), obs).passed
    assert evaluate(exp("pod_groups", "0", workload="none"), obs).passed  # no PodGroup yet: 0, not an error


def test_pods_being_deleted_still_hold_gpus_but_do_not_run():
    obs = Observation(pods=pods("a", "q", running=2, deleting=3))
    assert evaluate(exp("running", "2", workload="a"), obs).passed
    assert evaluate(exp("bound", "5", workload="a"), obs).passed
    assert evaluate(exp("allocated", "5", queue="q"), obs).passed


def test_all_or_none():
    size = {"g": 10}
    none = Observation(pods=pods("g", "q", pending=10), sizes=size)
    some = Observation(pods=pods("g", "q", running=8, pending=2), sizes=size)
    every = Observation(pods=pods("g", "q", running=10), sizes=size)
    e = exp("all_or_none", "true", workload="g")
    assert evaluate(e, none).passed and evaluate(e, every).passed
    check = evaluate(e, some)
    assert not check.passed and check.observed == "8 of 10 bound"


def test_evicted_counts_distinct_pods_per_workload_and_queue():
    obs = Observation(evicted={"low": {"low-1", "low-2"}}, evicted_queue={"q": {"low-1", "low-2"}})
    assert evaluate(exp("evicted", ">=2", workload="low"), obs).passed
    assert evaluate(exp("evicted", "2", queue="q"), obs).passed
    assert not evaluate(exp("evicted", ">=1", workload="keeper"), obs).passed


def test_reason_and_stragglers_quote_the_scheduler():
    obs = Observation(
        pods=pods("d", "q", running=8, pending=1),
        reasons={"d": ["Non-preemptible workload is over quota. Use a preemptible workload to go over quota."]},
    )
    check = evaluate(exp("reason", "over quota", workload="d"), obs)
    assert check.passed and "Non-preemptible" in check.observed
    assert not evaluate(exp("reason", "gang", workload="d"), obs).passed
    lines = stragglers(exp("running", "9", workload="d"), obs)
    assert lines == [
        "d-p0 Pending (queue q): Non-preemptible workload is over quota. Use a preemptible workload to go over quota."
    ]


def test_bound_before():
    obs = Observation(first_bound={"a": 10.0, "b": 12.5})
    assert evaluate(exp("bound_before", "b", workload="a"), obs).passed
    assert not evaluate(exp("bound_before", "a", workload="b"), obs).passed


def test_bound_grammar():
    holds = lambda text, value: Bound.parse(text).holds(value)  # noqa: E731
    assert holds(">=8", 8) and not holds(">8", 8) and holds("<=0", 0) and holds("2..4", 3) and not holds("2..4", 5)
    assert [str(Bound.parse(t)) for t in ("8", ">=8", "<3", "2..5")] == ["8", "≥ 8", "< 3", "2 to 5"]
    with pytest.raises(ValueError, match="empty range"):
        Bound.parse("8..2")


def test_an_api_error_ends_the_scenario_on_its_verdict_not_the_run():
    from kubernetes.client.exceptions import ApiException

    from kailab.progress import Progress
    from kailab.scenarios.engine import Engine
    from kailab.scenarios.model import Scenario
    from kailab.scenarios.replay import ReplayCluster

    class Refusing(ReplayCluster):
        def clear_scenarios(self, namespace=""):
            raise ApiException(status=503, reason="Service Unavailable")

    verdict = Engine(Refusing([]), Progress(quiet=True)).run(
        Scenario(name="s", title="S", path="s.yaml", namespace="kailab-s")
    )
    assert not verdict.passed
    assert verdict.error.startswith("the API server answered 503 Service Unavailable")
