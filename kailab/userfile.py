"""Reading a file the user names: only a regular file, only up to a size limit, never a read that blocks.

A scenario, a fleet or queue file, a kubeconfig.

A FIFO, a device or a socket is refused from ``os.stat`` before it is opened (opening a FIFO waits for a
writer); the file is then opened with ``O_NONBLOCK`` and checked again, so one swapped in between is
refused too. Every refusal is a :class:`~kailab.errors.KailabError` (or the subclass given) that says what
the path is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kailab.errors import KailabError

MAX_BYTES = 4 * 1024 * 1024  # far above any scenario, fleet, queue file or kubeconfig kailab has met


def _what_it_is(mode: int) -> str:
    for test, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def read_bytes(
    path: Path | str, error: type[KailabError] = KailabError, hint: str | None = None, limit: int = MAX_BYTES
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; ``error`` (with ``hint``) otherwise."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise error(f"Cannot read {path}: {e.strerror or e}.", hint=hint) from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"Cannot read {path}: it is {_what_it_is(st.st_mode)}; kailab reads only regular files.", hint=hint)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise error(f"Cannot read {path}: {e.strerror or e}.", hint=hint) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise error(
                f"Cannot read {path}: it is {_what_it_is(st.st_mode)}; kailab reads only regular files.", hint=hint
            )
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise error(
            f"Cannot read {path}: it is larger than {limit // (1024 * 1024)} MiB, the most kailab reads from one file.",
            hint=hint,
        )
    return data
