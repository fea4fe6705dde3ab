"""The order the test workers take the files in (tests/balance.py), on simulated workers with xdist's own rules."""

from __future__ import annotations

from pathlib import Path

import balance

from kailab import tasks
from kailab.lesson import EXERCISE_NAMES

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_and_task_the_estimates_name_exists():
    ids = {t.id for t in [t for n in EXERCISE_NAMES for t in tasks.lesson_tasks(n)] + tasks.challenges()}
    for key in [*balance.ESTIMATES, *balance.SPLIT, *balance.ALONE]:
        assert (ROOT / balance.file_of(key)).is_file(), key
        if key.startswith(balance.TASK):
            assert key[len(balance.TASK) + 1 : -1] in ids, key


def run(seconds: dict[str, float]) -> dict[str, list]:
    return balance.simulate(seconds, lab_start=0.0)


def test_the_longest_files_start_first_and_a_long_test_has_only_a_short_file_queued_behind_it(monkeypatch):
    monkeypatch.setattr(
        balance, "ESTIMATES", {"tests/kind/a.py": 600, "tests/fleet/b.py": 500, "tests/fleet/c.py": 400}
    )
    monkeypatch.setattr(balance, "ALONE", frozenset())
    seconds = {"tests/kind/a.py::t": 600, "tests/fleet/b.py::t": 500, "tests/fleet/c.py::t": 400}
    seconds |= {f"tests/unit/u{i}.py::t": 1.0 for i in range(20)}
    runs = run(seconds)
    firsts = sorted(r[0][2] for r in runs.values())
    assert firsts == ["tests/fleet/b.py::t", "tests/kind/a.py::t"]
    # c (400 s) goes to b's worker when b ends (500 s), not behind a (600 s): the run ends at 900, not 1000
    assert max(r[-1][1] for r in runs.values()) <= 900 + 2 * 1.0
    for worker in runs.values():
        assert [n for *_, n in worker if n.startswith("tests/unit/")], "each long test had a short file queued behind"


def test_a_split_files_tests_are_shared_by_both_workers(monkeypatch):
    monkeypatch.setattr(balance, "ESTIMATES", {})
    monkeypatch.setattr(balance, "SPLIT", frozenset({"tests/fleet/split.py"}))
    seconds = {f"tests/fleet/split.py::t[{i}]": 100.0 for i in range(6)}
    seconds |= {f"tests/unit/u{i}.py::t": 0.2 for i in range(10)}
    runs = run(seconds)
    assert all(sum(1 for *_, n in r if "split.py" in n) == 3 for r in runs.values())


def test_an_alone_test_goes_first_while_the_other_worker_runs_only_short_files(monkeypatch):
    monkeypatch.setattr(
        balance, "ESTIMATES", {"tests/kind/long.py": 700, "tests/fleet/alone.py": 90, "tests/fleet/mid.py": 300}
    )
    monkeypatch.setattr(balance, "ALONE", frozenset({"tests/fleet/alone.py"}))
    seconds = {"tests/kind/long.py::t": 700, "tests/fleet/alone.py::t": 90, "tests/fleet/mid.py::t": 300}
    seconds |= {f"tests/unit/u{i}.py::t": 5.0 for i in range(30)}
    runs = run(seconds)
    (alone_worker,) = [w for w, r in runs.items() if "alone" in r[0][2]]
    assert runs[alone_worker][0][:2] == (0, 90)  # first, and it waited for no other test to end
    other = next(r for w, r in runs.items() if w != alone_worker)
    assert other[0][2].startswith("tests/unit/"), other  # handed out while the alone test was unfinished: short
    assert max(r[-1][1] for r in runs.values()) <= 90 + 700 + 2 * 5


def test_a_file_the_estimates_do_not_name_gets_a_default_per_test():
    got = balance.estimates(["tests/fleet/new.py::a", "tests/fleet/new.py::b", "tests/unit/new.py::a"])
    assert got == {
        "tests/fleet/new.py::a": balance.PER_TEST_DEFAULT["tests/fleet/"],
        "tests/fleet/new.py::b": balance.PER_TEST_DEFAULT["tests/fleet/"],
        "tests/unit/new.py::a": balance.UNIT_TEST_DEFAULT,
    }


def test_the_kind_files_are_not_handed_out_side_by_side_to_wait_for_each_other(monkeypatch):
    monkeypatch.setattr(balance, "ESTIMATES", {"tests/kind/a.py": 700, "tests/kind/b.py": 650, "tests/fleet/c.py": 600})
    monkeypatch.setattr(balance, "ALONE", frozenset())
    seconds = {"tests/kind/a.py::t": 700, "tests/kind/b.py::t": 650, "tests/fleet/c.py::t": 600}
    seconds |= {f"tests/unit/u{i}.py::t": 1.0 for i in range(10)}
    runs = run(seconds)
    firsts = sorted(r[0][2] for r in runs.values())
    assert firsts == ["tests/fleet/c.py::t", "tests/kind/a.py::t"]  # b waits its turn in the line, not on a lock
    assert max(r[-1][1] for r in runs.values()) <= 700 + 650 + 2 * 1.0  # b after a, as the lock has it


def test_a_new_test_in_a_file_of_named_tests_gets_their_mean(monkeypatch):
    monkeypatch.setattr(balance, "ESTIMATES", {"tests/fleet/t.py::a": 100, "tests/fleet/t.py::b": 50})
    assert balance.estimates(["tests/fleet/t.py::a", "tests/fleet/t.py::b", "tests/fleet/t.py::new"]) == {
        "tests/fleet/t.py::a": 100,
        "tests/fleet/t.py::b": 50,
        "tests/fleet/t.py::new": 75,
    }
