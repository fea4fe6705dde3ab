"""The fleet tests' wait: it returns the first answer, and its limit grows with the host's load."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("fleet_waits", Path(__file__).parents[1] / "fleet" / "waits.py")
assert _spec and _spec.loader
waits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(waits)


def _clock(monkeypatch, load: float) -> list[float]:
    now = [0.0]
    monkeypatch.setattr(waits.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(waits.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(waits.time, "monotonic", lambda: now[0])

    def sleep(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(waits.time, "sleep", sleep)
    return now


def test_the_first_answer_is_returned(monkeypatch):
    now = _clock(monkeypatch, load=0.5)
    answers = iter([None, None, "ok"])
    assert waits.until("x", lambda: next(answers), timeout=10, every=1) == "ok"
    assert now[0] == 2


@pytest.mark.parametrize(("load", "gave_up_after"), [(0.5, 10), (2.0, 10), (8.0, 40), (40.0, 50)])
def test_a_wait_gives_up_after_its_timeout_grown_by_the_load_and_at_most_five_times(monkeypatch, load, gave_up_after):
    now = _clock(monkeypatch, load)
    with pytest.raises(AssertionError, match="timeout 10s"):
        waits.until("never", lambda: None, timeout=10, every=1)
    assert gave_up_after < now[0] <= gave_up_after + 1
