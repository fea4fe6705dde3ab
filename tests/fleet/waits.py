"""Waiting in fleet tests: poll a check until it answers, or fail with what was awaited."""

from __future__ import annotations

import os
import time

MOST = 5.0  # a wait's limit grows to at most this many times its timeout


def busy() -> float:
    """How many times more work the host has than cores (1 at least, :data:`MOST` at most): another worker's lab, a
    kind cluster and CI's own steps share the cores, and a lab's answers slow down with them."""
    return min(MOST, max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)))


def until(what: str, check, timeout: float = 60, every: float = 0.3):
    """``check()``'s first truthy answer, polled every ``every`` seconds; AssertionError once ``timeout`` (grown by
    how busy the host is, read as the wait goes on) has passed without one."""
    start = time.monotonic()
    limit = timeout
    while True:
        got = check()
        if got:
            return got
        waited = time.monotonic() - start
        limit = max(limit, timeout * busy())
        if waited > limit:
            raise AssertionError(
                f"not within {waited:.0f}s (timeout {timeout:.0f}s, grown with the host's load): {what}"
            )
        time.sleep(every)
