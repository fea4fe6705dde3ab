"""Typed errors: each says what went wrong and what to do, and is printed once by the CLI."""

from __future__ import annotations


class KailabError(Exception):
    """A failure the user can act on.

    Args:
        message: what went wrong, in plain words.
        hint: what to do about it.
        details: supporting text (a log tail, a command's output), shown under the message.
    """

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None, details: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details


class ToolMissing(KailabError):
    """A required program (go, docker, kind, helm, kubectl) is missing or too old."""


class ModuleUnavailable(KailabError):
    """The Go module proxy refuses a pinned module (it is not served there)."""


class ChecksumMismatch(KailabError):
    """A proxy served a module whose hash differs from the one kailab pins."""


class ScenarioError(KailabError):
    """A scenario file is malformed; the message names the file and line."""


class NotRunning(KailabError):
    """No lab is running where one is needed."""


class RosterError(KailabError):
    """A class's learners (or a run's partitions) cannot be had as asked; nothing was applied."""
