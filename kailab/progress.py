"""Progress lines on stderr, kind-style: a spinner while a step runs, then ✓ or ✗ with its time.

Results go to stdout; progress goes here, so ``kailab ... --json | jq`` stays clean.

Every text given here is plain: a title, a note or a line that holds ``[bold]`` or ``[/]`` (a file name,
a scenario's title) is printed as it is, never read as Rich markup, and without the control and escape sequences it
may hold. Both consoles (this one and :data:`kailab.render.stdout`) are :class:`kailab.termtext.PlainConsole`s;
colour is given as a style, or with :class:`rich.text.Text`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text

from kailab.termtext import PlainConsole

stderr = PlainConsole(stderr=True, soft_wrap=True)


class Step:
    """A running step; ``note`` changes the text shown beside the spinner, ``fail`` ends it as ✗ (without raising)."""

    def __init__(self, title: str, status=None):
        self.title = title
        self._status = status
        self.detail = ""
        self.failed = False

    def note(self, detail: str) -> None:
        self.detail = detail
        if self._status is not None:
            self._status.update(Text.assemble(self.title, " ", (detail, "dim")))

    def fail(self, detail: str) -> None:
        """The step did not do what it says (a wait that did not hold): shown as ✗ with ``detail``, what was seen."""
        self.failed = True
        self.note(detail)


class Progress:
    """Prints one line per step. ``quiet`` silences everything but failures."""

    def __init__(self, quiet: bool = False, console: Console | None = None):
        self.quiet = quiet
        self.console = console or stderr

    @contextmanager
    def step(self, title: str) -> Iterator[Step]:
        """Run a step: ✓ title (time) when the block ends, ✗ when it raises or the step says it failed."""
        start = time.monotonic()
        live = self.console.is_terminal and not self.quiet
        status = self.console.status(Text(title)) if live else None
        if status is not None:
            status.start()
        step = Step(title, status)
        try:
            yield step
        except BaseException:
            if status is not None:
                status.stop()
            self._line("✗", "red", title, step.detail, start)
            raise
        if status is not None:
            status.stop()
        if step.failed:
            self._line("✗", "red", title, step.detail, start)
        elif not self.quiet:
            self._line("✓", "green", title, step.detail, start)

    def _line(self, mark: str, colour: str, title: str, detail: str, start: float) -> None:
        self.console.print(
            Text.assemble(
                (mark, colour),
                " ",
                title,
                f" — {detail}" if detail else "",
                (f" ({time.monotonic() - start:.1f}s)", "dim"),
            )
        )

    def info(self, text: str | Text, style: str = "") -> None:
        """A line of plain text (in ``style``, e.g. "yellow"), or a :class:`Text` as it is."""
        if not self.quiet:
            self.console.print(text if isinstance(text, Text) else Text(text, style=style))
