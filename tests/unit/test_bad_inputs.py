"""A corpus of bad inputs, each with the one message it must produce — no traceback, nothing changed.

Scenario and fleet files live in tests/badinput/; each starts with ``# error: LINE: words``:
the message must be ``<file>:<LINE>: …`` and contain the words. The command lines run in this process
(tests/unit/cli_run.py); a few smoke tests start ``python -m kailab`` itself (:func:`kailab_process`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import kailab  # tests/unit/cli_run.py: the command line in this process

from kailab.errors import KailabError, ScenarioError
from kailab.fleet import load_fleet
from kailab.scenarios.loader import load_scenario

CORPUS = Path(__file__).parent.parent / "badinput"
SCENARIOS = sorted((CORPUS / "scenarios").glob("*.yaml"))
FLEETS = sorted((CORPUS / "fleets").glob("*.yaml"))


def expected(path: Path) -> tuple[int, str]:
    m = re.match(r"# error: (\d+): (.*)", path.read_text().splitlines()[0])
    assert m, f"{path} must start with '# error: LINE: words'"
    return int(m.group(1)), m.group(2)


def kailab_process(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python -m kailab ARGS`` as a process of its own (the smoke tests: the entry point, a real stdin)."""
    env = {**os.environ, "KAILAB_HOME": str(home)}
    env.pop("KAILAB_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "kailab", *args], env=env, capture_output=True, text=True, timeout=60, input=stdin
    )


CASES = [(load_scenario, p) for p in SCENARIOS] + [(load_fleet, p) for p in FLEETS]


@pytest.mark.parametrize("load, path", CASES, ids=[f"{p.parent.name}/{p.stem}" for _, p in CASES])
def test_bad_file_says_file_line_and_what(load, path):
    line, words = expected(path)
    with pytest.raises(KailabError) as err:  # ScenarioError for scenarios
        load(path)
    assert err.value.message.startswith(f"{path}:{line}: "), err.value.message
    assert words in err.value.message, err.value.message


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_kailab_run_refuses_a_bad_scenario_with_its_message_and_exit_1(path, tmp_path, monkeypatch, capsys):
    """The same cases through the command line (in this process: fast): the message once, exit code 1, no lab made."""
    from kailab import cli

    line, words = expected(path)
    monkeypatch.setenv("KAILAB_HOME", str(tmp_path / "lab"))
    monkeypatch.delenv("KAILAB_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["kailab", "run", str(path)])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    err = " ".join(capsys.readouterr().err.split())
    assert ended.value.code == 1
    assert err.count(f"✗ Error: {path}:{line}: ") == 1 and " ".join(words.split()) in err, err
    assert not (tmp_path / "lab").exists()


def test_binary_files_are_refused_in_words(tmp_path):
    blob = tmp_path / "blob.yaml"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ScenarioError, match="is not a text file"):
        load_scenario(blob)
    with pytest.raises(KailabError, match="is not a text file"):
        load_fleet(blob)


def test_run_checks_every_file_before_it_needs_a_lab(tmp_path):
    """`kailab run` with a bad file: exit 1, the file:line message once, no traceback — even with no lab up."""
    bad = CORPUS / "scenarios" / "parent-cycle.yaml"
    proc = kailab_process("run", str(bad), home=tmp_path / "lab")
    assert proc.returncode == 1
    assert f"{bad}:4: queues form a loop" in proc.stderr and proc.stderr.count("loop of parents") == 1
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args, code, words",
    [
        (["nosuch"], 2, "No such command 'nosuch'"),
        (["run"], 2, "Missing argument"),
        (["up", "--apiserver-port", "abc"], 2, "Invalid value for '--apiserver-port'"),
        (["up", "--apiserver-port", "99999"], 2, "Invalid value for '--apiserver-port'"),
        (["up", "--apiserver-port", "-5"], 2, "Invalid value for '--apiserver-port'"),
        (["up", "--runtime", "nosuch"], 2, "nosuch"),
        (["up", "--pool", "a100=2.7"], 1, "--pool 'a100=2.7' is not POOL=COUNT"),
        (["up", "--pool", "v100=2"], 1, "No pool named v100"),
        (["up", "--pool", "a100=٣"], 1, "--pool 'a100=٣' is not POOL=COUNT"),  # an Arabic-Indic 3: a digit to Python
        (["up", "--pool", "a100=²"], 1, "--pool 'a100=²' is not POOL=COUNT"),
        (["up", "--pool", "a100=３"], 1, "--pool 'a100=３' is not POOL=COUNT"),
        (["up", "--pool", "a100=3", "--pool", "a100=4"], 1, "--pool gives pool 'a100' twice (a100=3 and a100=4)"),
        (
            ["up", "--pool", "a100=0", "--pool", "h100=0", "--pool", "l40s=0"],
            1,
            "With --pool, the fleet has no GPU (every pool has 0 nodes, or only CPU-only pools have nodes)",
        ),
        (
            ["up", "--pool", "a100=5000", "--pool", "h100=5000"],
            1,
            "With --pool, the fleet has 10002 nodes, more than the 5000 kailab makes",
        ),
        (["up", "--runtime", "kind", "--apiserver-port", "7000"], 1, "--apiserver-port is for the local runtime"),
        (["up", "--runtime", "local", "--address", "laptop.local"], 1, "--address 'laptop.local' is not an IP address"),
        (["up", "--runtime", "local", "--address", "127.0.0.1"], 1, "--address 127.0.0.1 is loopback"),
        (["up", "--runtime", "local", "--address", "192.0.2.77"], 1, "--address 192.0.2.77 is not an address of this"),
        (["up", "--runtime", "existing", "--address", "10.0.0.1"], 1, "--address is for the kind or local runtime"),
        (["class", "up", "--learners", "2", "--address", "10.0.0.1"], 1, "No lab is running"),
        (["demo", "nosuch"], 1, "No exercise named 'nosuch'"),
        (["lesson", "nosuch"], 1, "No lesson named 'nosuch'"),
        (["lesson", "quota"], 1, "No lab is running"),
        (["explain", "x"], 1, "No lab is running"),
        (["status"], 1, "No lab is running"),
        (["evidence"], 1, "No lab is running"),
    ],
)
def test_bad_command_lines_get_one_message(tmp_path, args, code, words):
    proc = kailab(*args, home=tmp_path / "lab", stdin="")
    assert proc.returncode == code, proc.stderr
    assert words in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "lab").exists(), "a refused command made the lab folder"


def test_bad_fleet_file_on_the_command_line(tmp_path):
    empty = tmp_path / "fleet.yaml"
    empty.write_text("")
    proc = kailab("up", "--runtime", "local", "--fleet", str(empty), home=tmp_path / "lab")
    assert proc.returncode == 1 and f"{empty}:1: a fleet file is a mapping" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "lab").exists()


@pytest.mark.parametrize(
    "state",
    [
        "{}",
        '{"runtime": "nosuch", "kubeconfig": "/nowhere"}',
        '{"runtime": "local"}',
        "not json at all",
        "[1, 2]",
        '{"runtime": "local", "kubeconfig": "/nowhere", "kai_components": 5}',
        '{"runtime": "existing", "kubeconfig": "/nowhere", "lab_id": [1], "kwok_objects": "x"}',
        '{"runtime": "kind", "kubeconfig": "/nowhere", "complete": "no", "versions": 3}',
        '{"runtime": "local", "kubeconfig": "/nowhere", "prefix": 7, "total_gpus": "32"}',
    ],
)
@pytest.mark.parametrize("command", [["status"], ["kubeconfig"], ["queues"], ["down"]])
def test_stale_or_corrupt_lab_state_never_gives_a_traceback(tmp_path, state, command):
    home = tmp_path / "lab"
    home.mkdir()
    (home / ".kailab-lab").write_text("")
    (home / "lab.json").write_text(state)
    proc = kailab(*command, home=home)
    assert "Traceback" not in proc.stderr and "Unexpected error" not in proc.stderr, proc.stderr
    if command == ["down"]:
        # down always gets the user unstuck: the broken lab folder is removed.
        assert proc.returncode == 0, proc.stderr
        assert not home.exists()
    else:
        assert proc.returncode == 1
        assert "kailab down" in proc.stderr, proc.stderr


def test_lesson_handles_closed_stdin(tmp_path):
    proc = kailab_process("lesson", home=tmp_path / "lab", stdin="")
    assert proc.returncode == 0 and "Start one: kailab lesson NAME" in proc.stdout
