"""Text for a terminal: what users and clusters wrote, with every control and escape sequence taken out.

A scenario's title, a learner's lesson record, a pod's name, an event's message: any of them can hold bytes that a
terminal obeys rather than shows — CSI sequences (clear the screen, move the cursor, hide text), OSC sequences (set the
window title, write the clipboard with OSC 52, make a link), DCS and other string controls, C0 and C1 control
characters (a carriage return that overwrites a line, a backspace), and Unicode's bidirectional overrides and isolates
that show text in another order than it is stored. :func:`plain` removes them all; newlines and tabs stay.

Both of kailab's consoles (:data:`kailab.render.stdout`, :data:`kailab.progress.stderr`) are a :class:`PlainConsole`,
which passes every piece of text it prints through :func:`plain` — a table cell, a progress line, an error, a
``Text`` made in code — while its own styling (colours, the spinner's cursor moves) is added after and kept.
JSON output needs nothing more: ``json.dumps`` writes control characters and non-ASCII as ``\\uXXXX``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

# ESC-introduced sequences, whole: a string control (OSC ], DCS P, SOS X, PM ^, APC _) up to its terminator (BEL or
# ST, or the end of the text when it has none), a CSI up to its final byte, or any other two-character escape.
_ESCAPES = re.compile(
    r"""
    (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])  # a string control, 7-bit or 8-bit (C1)
        .*?(?:\x07|\x1b\\|\x9c|$)           # ... to BEL, ST (ESC \ or C1 ST), or the end
    | (?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?  # CSI: parameters, intermediates, the final byte
    | \x1b[\x20-\x2f]*[\x30-\x7e]?          # any other escape (ESC c resets the terminal)
    """,
    re.VERBOSE | re.DOTALL,
)
# What is left that a terminal obeys: C0 controls but tab and newline, DEL, C1 controls; bidi embeddings, overrides,
# isolates and marks (U+061C, U+200E–F, U+202A–E, U+2066–9).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: object) -> str:
    """``text`` as a terminal should show it: escape sequences and control characters removed (newline and tab
    kept), nothing else changed."""
    s = str(text)
    if s.isprintable():  # nearly always: nothing to take out (a newline or tab is not "printable": checked below)
        return s
    return _CONTROLS.sub("", _ESCAPES.sub("", s))


def one_line(text: object) -> str:
    """``text`` as :func:`plain`, on one line (line breaks and runs of spaces folded to one space)."""
    return " ".join(plain(text).split())


class PlainConsole(Console):
    """A rich Console that prints every text through :func:`plain`, whatever its source; rich's own control output
    (cursor moves of a spinner or a live view) and styles are kept. Markup is off: text is never read as ``[bold]``."""

    def __init__(self, **kwargs):
        kwargs.setdefault("markup", False)
        kwargs.setdefault("highlight", False)
        super().__init__(**kwargs)

    def render_str(self, text: str, **kwargs) -> Text:
        """A string to print (a cell, a line): made plain first, so that it is measured as it will show."""
        return super().render_str(plain(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        """What rich prints, each piece of text plain (a ``Text`` made in code, a title, a spinner's line)."""
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(plain(segment.text), segment.style)


def plain_library_output() -> None:
    """What libraries print on stderr by themselves made plain too: Python's warnings (matplotlib's of a missing
    glyph quotes the text it was drawing) and log records no handler took (logging's last resort)."""
    import logging
    import sys
    import warnings

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        try:
            (file or sys.stderr).write(plain(warnings.formatwarning(message, category, filename, lineno, line)))
        except (OSError, ValueError):  # a closed or full stderr: the warning is lost, as Python's own would be
            pass

    class PlainStderr(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                sys.stderr.write(plain(self.format(record)) + "\n")
            except Exception:  # noqa: BLE001 (logging's own rule: a handler never raises)
                self.handleError(record)

    warnings.showwarning = show
    logging.lastResort = PlainStderr(logging.WARNING)
