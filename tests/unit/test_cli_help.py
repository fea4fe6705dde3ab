"""The command line's help, shortcuts and shell completion, through Typer's own test runner (no lab needed)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kailab.cli import app
from kailab.commands import lessons
from kailab.lesson import EXERCISE_NAMES

runner = CliRunner()


def help_of(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], prog_name="kailab", env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.output


def test_help_shows_no_type_for_flags_on_any_command():
    assert "<bool>" not in help_of() and "--help" in help_of()
    up = help_of("up")
    assert "<bool>" not in up and "--retain" in up and "<path>" in up  # options that take a value keep their type
    for command in app.registered_commands:
        name = command.name or command.callback.__name__
        assert "<bool>" not in help_of(name), name


def test_demo_shortcuts_are_listed_once_and_each_runs_its_exercise(monkeypatch, tmp_path):
    top = help_of()
    assert top.count("demo-NAME") == 1 and "demo-fairshare" not in top
    monkeypatch.setenv("KAILAB_HOME", str(tmp_path))  # no lab here: the scenario is run as is
    ran = []
    monkeypatch.setattr(
        lessons, "run_and_report", lambda lab, scenarios, *a, **k: ran.extend(s.name for s in scenarios)
    )
    for name in EXERCISE_NAMES:
        result = runner.invoke(app, [f"demo-{name}", "--json"], prog_name="kailab")
        assert result.exit_code == 0, result.output
    assert ran == list(EXERCISE_NAMES)


def complete(line: str) -> list[str]:
    words = line.split(" ")
    env = {"_KAILAB_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
    result = runner.invoke(app, [], prog_name="kailab", env=env)
    assert result.exit_code == 0, result.output
    return result.output.split()


@pytest.mark.parametrize(
    "line, expected",
    [
        ("kailab dem", ["demo"]),
        ("kailab demo re", ["reclaim"]),
        ("kailab demo a", ["all"]),
        ("kailab lesson f", ["fairshare", "fractions"]),
    ],
)
def test_completion_of_commands_and_lesson_names(line, expected):
    assert complete(line) == expected


def test_completion_of_scenario_files(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text("name: mine\n")
    (tmp_path / "notes.md").write_text("")
    (tmp_path / "more").mkdir()
    monkeypatch.chdir(tmp_path)
    assert complete("kailab run m") == ["mine.yaml", "more"]  # scenario files and folders, not other files
    assert complete("kailab run more/") == []


def test_lesson_lists_every_exercise_in_teaching_order_with_a_whole_sentence():
    result = runner.invoke(app, ["lesson"], prog_name="kailab", env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    rows = [line.split(None, 1) for line in result.output.splitlines() if line and line.split()[0] in EXERCISE_NAMES]
    assert [name for name, _ in rows] == list(EXERCISE_NAMES)
    for name, summary in rows:
        assert summary.endswith(".") and 60 <= len(summary) <= 170 and "*" not in summary, (name, summary)


def test_kailabs_one_change_to_typer_is_made_once_and_only_for_flags():
    from typer.core import TyperOption

    from kailab.commands import typer_help

    assert typer_help.flags_without_a_type() is False  # made when kailab.cli was imported; not twice
    assert hasattr(TyperOption.display_type_rich, "__wrapped__")
    assert "<int range>" in help_of("bench")  # an option that takes a value keeps its type
