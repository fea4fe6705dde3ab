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
