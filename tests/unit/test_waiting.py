import time

import pytest

from kailab.errors import KailabError
from kailab.waiting import Pending, TimedOut, until


def test_until_returns_the_first_true_answer():
    answers = iter([None, Pending("1 of 3"), "ready"])
    calls = []
    assert until(lambda: calls.append(1) or next(answers), timeout=5, interval=0.01) == "ready"
    assert len(calls) == 3


def test_until_says_what_it_waited_for_and_what_it_saw_last():
    seen = iter(["admission, binder", "binder"])
    with pytest.raises(TimedOut) as err:
        until(
            lambda: Pending(next(seen, "binder")),
            timeout=0.05,
            interval=0.01,
            what="KAI's Deployments Ready",
            hint="kubectl get pods",
        )
    assert err.value.message == "Not within 0s: KAI's Deployments Ready; last seen: binder."
    assert err.value.hint == "kubectl get pods"


def test_until_with_no_time_asks_once_then_fails_with_the_callers_error():
    calls = []
    with pytest.raises(KailabError, match="still: sched-0"):
        until(
            lambda: calls.append(1) or Pending("sched-0"),
            timeout=0,
            fail=lambda last: KailabError(f"still: {last.seen}"),
        )
    assert calls == [1]


def test_until_stops_when_the_condition_raises():
    def exited():
        raise KailabError("kai-binder exited while starting")

    start = time.monotonic()
    with pytest.raises(KailabError, match="exited"):
        until(exited, timeout=30)
    assert time.monotonic() - start < 15  # not the 30 s timeout


def test_until_does_not_sleep_past_its_deadline():
    start = time.monotonic()
    with pytest.raises(TimedOut):
        until(lambda: False, timeout=0.1, interval=10)
    assert time.monotonic() - start < 5  # not the 10 s interval


def _emptying(monkeypatch, rounds: list[set[str]]):
    """A Kube emptying a namespace whose pods, at each look, are ``rounds`` (then none); 30 s pass between looks."""
    from types import SimpleNamespace

    from kailab import kube as kube_module

    clock = [0.0]
    looks = iter(rounds)
    deletes: list[str] = []

    def watch_until(list_fn, args, done, timeout):
        clock[0] += 30.0
        return done(next(looks, set()))

    answered = SimpleNamespace(read=lambda: b"")
    k = kube_module.Kube.__new__(kube_module.Kube)
    k.core = SimpleNamespace(
        delete_collection_namespaced_pod=lambda *a, **kw: deletes.append("pods") or answered,
        delete_collection_namespaced_event=lambda *a, **kw: answered,
        list_namespaced_pod=None,  # read by the fake watch_until only
    )
    k._watch_until = watch_until
    monkeypatch.setattr(kube_module, "_found", lambda call: True)
    monkeypatch.setattr(kube_module.time, "monotonic", lambda: clock[0])
    return k, clock, deletes


def test_emptying_a_namespace_waits_on_while_its_pods_are_still_going(monkeypatch):
    """16 learners at once kept the API server deleting pods for over a minute: the wait goes on while pods go (and a
    controller's new ones count as the old going), not to a fixed 60 s."""
    shrinking = [{f"p{i}" for i in range(n)} for n in range(10, 0, -1)]  # one pod fewer every 30 s: 5 minutes
    k, clock, deletes = _emptying(monkeypatch, shrinking)
    k.empty_namespace("ann-kailab-gang", timeout=60)
    assert clock[0] == 330.0 and len(deletes) == 10  # deleted again after each look that found pods


def test_emptying_a_namespace_gives_up_when_no_pod_goes_for_its_timeout(monkeypatch):
    from kailab.errors import NotRunning
    from kailab.waiting import timed_out

    stuck = [{"p1", "p2"}] * 10
    k, clock, _ = _emptying(monkeypatch, [{"p1", "p2", "p3"}, *stuck])
    with pytest.raises(NotRunning, match="2 left, not one gone in 60s") as e:
        k.empty_namespace("ann-kailab-gang", timeout=60)
    assert timed_out(e.value) and clock[0] == 150.0  # p3 went by 60 s; nothing after it for more than 60 s
