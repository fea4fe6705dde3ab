"""Waiting for something kailab cannot watch: ask again every so often, until it holds or the time is up.

Where a watch exists (pods, nodes, namespaces: :mod:`kailab.kube`), kailab waits on the watch
(:func:`kailab.kube.wait_until`); :func:`until` is for the polling that remains — a process's health URL, a
Deployment's readiness read through another tool, a CRD's condition.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kailab.errors import KailabError

T = TypeVar("T")


class Pending:
    """A condition's answer while it does not hold: false, and it says what was seen (for the timeout's message)."""

    def __init__(self, seen: str):
        self.seen = seen

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Pending({self.seen!r})"


def seen(answer: object) -> str:
    """What a condition's answer says was seen: a :class:`Pending` answer's ``seen``, else ""."""
    return answer.seen if isinstance(answer, Pending) else ""


class TimedOut(KailabError):
    """What :func:`until` waited for did not happen in time."""


def timed_out(e: BaseException) -> bool:
    """Was ``e`` raised because a wait ran out of time (itself, or its cause, a :class:`TimedOut`)?"""
    return isinstance(e, TimedOut) or isinstance(e.__cause__, TimedOut)


def until(
    condition: Callable[[], T],
    timeout: float,
    interval: float = 0.2,
    what: str = "",
    *,
    fail: Callable[[T], BaseException] | None = None,
    hint: str | None = None,
) -> T:
    """``condition()``'s first true answer, asked every ``interval`` seconds (at once, and once more at the end).

    After ``timeout`` seconds raise ``fail(last answer)``, or by default :class:`TimedOut` saying ``what`` was awaited
    and what was last seen (a :class:`Pending` answer's ``seen``) with ``hint``. The condition may raise to stop early
    (a process that exited will never become healthy).
    """
    deadline = time.monotonic() + timeout
    while True:
        answer = condition()
        if answer:
            return answer
        left = deadline - time.monotonic()
        if left <= 0:
            last = f"; last seen: {seen(answer)}" if seen(answer) else ""
            ran_out = TimedOut(f"Not within {timeout:.0f}s: {what or 'the condition'}{last}.", hint=hint)
            if fail is not None:
                raise fail(answer) from ran_out  # the cause says it was time that ran out (timed_out)
            raise ran_out
        time.sleep(min(interval, left))
