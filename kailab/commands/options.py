"""What several commands share: their common options, shell completions and the prompts of a lesson."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.text import Text

from kailab.lesson import EXERCISE_NAMES
from kailab.progress import stderr

QuietOpt = typer.Option(False, "--quiet", "-q", help="Print results only, no progress lines.")
JsonOpt = typer.Option(False, "--json", help="Print JSON.")
VerdictsJsonOpt = typer.Option(False, "--json", help="Print the verdicts as JSON.")


def complete_lessons(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion: the exercises (in teaching order), with their one-line summaries."""
    from kailab.lesson import load_lesson

    return [(n, load_lesson(n).one_line) for n in EXERCISE_NAMES if n.startswith(incomplete)]


def complete_demos(incomplete: str) -> list[tuple[str, str]]:
    return complete_lessons(incomplete) + [("all", "every exercise, in order")]


def complete_scenario_files(incomplete: str) -> list[str]:
    """Shell completion: scenario files (.yaml, .yml) and folders under what is typed so far."""
    folder, _, stem = incomplete.rpartition("/")
    base = Path(folder or ".")
    if not base.is_dir():
        return []
    found = sorted(
        p
        for p in base.iterdir()
        if p.name.startswith(stem) and not p.name.startswith(".") and (p.is_dir() or p.suffix in (".yaml", ".yml"))
    )
    return [f"{folder}/{p.name}" if folder else p.name for p in found]


def ask(question: str) -> str:
    """A prompt that reads a closed or non-interactive stdin as 'no answer', not as an error."""
    if not sys.stdin or not sys.stdin.isatty():
        line = sys.stdin.readline() if sys.stdin else ""
        return line.strip() or "(no prediction given)"
    return typer.prompt(question, default="(no prediction given)", show_default=False)


def ask_prediction(p):
    """A graded prediction's answer from the terminal, asked again until it is one; None if left empty."""
    from kailab.predictions import how_to_answer, parse
    from kailab.termtext import plain

    while True:
        ask = plain(f"{p.ask} ({how_to_answer(p)}; Enter skips)")  # a scenario's text: never a terminal's command
        text = typer.prompt(ask, default="", show_default=False)
        if not text.strip():
            return None
        try:
            return parse(p, text)
        except ValueError as e:
            stderr.print(Text.assemble(("✗", "red"), f" {e}"))
