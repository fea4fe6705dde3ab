"""Waiting in fleet tests: poll a check until it answers, or fail with what was awaited."""

from __future__ import annotations

import time


def until(what: str, check, timeout: float = 60, every: float = 0.3):
    """``check()``'s first truthy answer, polled every ``every`` seconds; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(every)
