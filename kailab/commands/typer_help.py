"""The one change kailab makes to Typer: its rich help prints no type beside a flag ("--retain <bool>").

Typer 0.29's rich help prints a type beside every option, flags too, though a flag takes no value; its plain help
does not. :func:`flags_without_a_type` replaces Typer's ``TyperOption.display_type_rich`` so that flags get none,
on every command; options that take a value keep theirs. tests/unit/test_cli_help.py holds the help to it.
"""

from __future__ import annotations

import functools
from typing import Any


def flags_without_a_type() -> bool:
    """Patch Typer once; False when this Typer has no such method, or it is patched already."""
    from typer.core import TyperOption

    typed = getattr(TyperOption, "display_type_rich", None)
    if typed is None or hasattr(typed, "__wrapped__"):
        return False

    @functools.wraps(typed)
    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:  # ctx: a click Context (Typer vendors click)
        return None if self.is_flag else typed(self, ctx)

    # Replacing Typer's method is the point here; mypy's method-assign is there to catch it done by mistake.
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
    return True
