"""kailab removes only what it wrote and stops only what it started (by pid and start time)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cli_run import kailab  # tests/unit/cli_run.py: the command line in this process

from kailab import labdir
from kailab.errors import KailabError
from kailab.runtimes.processes import Identity, ProcessGroup, ProcessSpec


def test_down_refuses_a_folder_kailab_did_not_make(tmp_path):
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "ch1.tex").write_text("\\chapter{One}")
    (tmp_path / "lab.json").write_text('{"runtime": "local", "kubeconfig": "x"}')
    proc = kailab("down", home=tmp_path)
    assert proc.returncode == 1
    assert "not a lab folder made by kailab" in proc.stderr and "Lab removed" not in proc.stdout
    assert (tmp_path / "thesis" / "ch1.tex").read_text() == "\\chapter{One}"
    assert (tmp_path / "lab.json").exists()


def test_claim_refuses_a_folder_with_files_and_adopts_an_empty_one(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(KailabError, match="already holds files that kailab did not write"):
        labdir.claim(tmp_path)
    assert not labdir.is_ours(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert labdir.is_ours(labdir.claim(empty))


def test_claim_says_when_the_folder_cannot_be_written(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(KailabError, match="cannot be written"):
        labdir.claim(tmp_path / "a-file" / "lab")  # fails for root too, unlike a read-only folder


def test_remove_takes_only_named_entries_and_keeps_uncaptured_verdicts(tmp_path):
    home = labdir.claim(tmp_path / "lab")
    (home / "kai").mkdir()
    (home / "kai" / "x.log").write_text("log")
    (home / "lab.json").write_text("{}")
    (home / "mine.txt").write_text("a user's file")
    (home / labdir.VERDICTS).write_text("{}\n")
    left = labdir.remove(home, ["kai", "lab.json", "kubeconfig.yaml"])
    assert left == sorted([labdir.MARKER, labdir.VERDICTS, "mine.txt"])
    (home / "mine.txt").unlink()
    (home / labdir.VERDICTS).unlink()
    assert labdir.remove(home, []) == [] and not home.exists()


def test_a_reused_pid_is_not_the_process_kailab_started(tmp_path):
    group = ProcessGroup(tmp_path)
    pid = group.start(ProcessSpec("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"]))
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert group.pid("sleeper") == pid
        # The pid file now names the stranger's pid with the sleeper's start time: a pid the system gave away.
        started = Identity.parse((group.pids / "sleeper.pid").read_text()).started
        (group.pids / "sleeper.pid").write_text(Identity(stranger.pid, started - 100).dump())
        assert group.pid("sleeper") is None
        group.stop_all(timeout=2)
        assert stranger.poll() is None, "stop_all signalled a process it did not start"
    finally:
        stranger.kill()
        stranger.wait()
        os.kill(pid, 9)


def test_stop_all_stops_what_it_started(tmp_path):
    group = ProcessGroup(tmp_path)
    group.start(ProcessSpec("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"]))
    ident = group.identity("sleeper")
    assert ident and ident.alive()
    group.stop_all(timeout=5)
    assert not ident.alive() and group.names() == []


def test_stop_all_stops_the_process_that_starts_others_first(tmp_path, monkeypatch):
    """The local runtime's shard supervisor starts schedulers: ``kailab down`` stops it before them, so it starts no
    scheduler while they stop."""
    from kailab.runtimes import processes

    group = ProcessGroup(tmp_path)
    for name in ("a-scheduler", "supervisor"):
        group.start(ProcessSpec(name, [sys.executable, "-c", "import time; time.sleep(60)"]))
    supervisor, scheduler = group.identity("supervisor"), group.identity("a-scheduler")
    rounds: list[tuple[list[int], bool]] = []  # each stop: the pids it was given, and whether the supervisor ran
    real_stop = processes.stop

    def recorded(identities, timeout=10, group=False):
        rounds.append((sorted(i.pid for i in identities), supervisor.alive()))
        real_stop(identities, timeout, group)

    monkeypatch.setattr(processes, "stop", recorded)
    group.stop_all(timeout=5, first=("supervisor",))
    assert rounds[0] == ([supervisor.pid], True)  # alone, first
    assert rounds[1] == ([scheduler.pid], False)  # the scheduler after the supervisor had stopped
    assert not scheduler.alive()
    assert group.names() == []
