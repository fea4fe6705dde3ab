"""Progress lines on stderr, kind-style: a spinner while a step runs, then ✓ or ✗ with its time.

Results go to stdout; progress goes here, so ``kailab ... --json | jq`` stays clean.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console

stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class Step:
    """A running step; ``note`` changes the text shown beside the spinner."""

    def __init__(self, title: str, status=None):
        self.title = title
        self._status = status
        self.detail = ""

    def note(self, detail: str) -> None:
        self.detail = detail
        if self._status is not None:
            self._status.update(f"{self.title} [dim]{detail}[/dim]")


class Progress:
    """Prints one line per step. ``quiet`` silences everything but failures."""

    def __init__(self, quiet: bool = False, console: Console | None = None):
        self.quiet = quiet
        self.console = console or stderr

    @contextmanager
    def step(self, title: str) -> Iterator[Step]:
        """Run a step: ✓ title (time) when the block ends, ✗ when it raises."""
        start = time.monotonic()
        live = self.console.is_terminal and not self.quiet
        status = self.console.status(title) if live else None
        if status is not None:
            status.start()
        step = Step(title, status)
        try:
            yield step
        except BaseException:
            if status is not None:
                status.stop()
            self.console.print(f"[red]✗[/red] {title} [dim]({time.monotonic() - start:.1f}s)[/dim]")
            raise
        if status is not None:
            status.stop()
        if not self.quiet:
            extra = f" — {step.detail}" if step.detail else ""
            self.console.print(f"[green]✓[/green] {title}{extra} [dim]({time.monotonic() - start:.1f}s)[/dim]")

    def info(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text)
