"""The one rule for files kailab reads: a regular file only, bounded while reading, never a read that blocks.

At most so many bytes, counted while reading (never taken from ``stat``), and for anything else one message that
names the file.

Two kinds of file come through here:

- a file the user names — a scenario, fleet, queue or task file, a roster, a kubeconfig, a class credential
  (:func:`read_bytes`, :func:`read_text`): a symbolic link the user gave is followed, as they asked;
- a file of kailab's own in its lab folder — the lab's state, the class's, a joined learner's credential record,
  pid files, the verdicts not yet captured (:func:`read_own`): a symbolic link there is refused, never followed
  (kailab makes none), and a file that is missing is simply not there (``None``).

A FIFO, a device, a socket or a folder is refused from ``lstat``/``stat`` before it is opened (opening a FIFO waits
for a writer); the file is then opened with ``O_NONBLOCK`` (and ``O_NOFOLLOW`` for kailab's own) and checked again,
so one swapped in between is refused too. What kailab writes follows the other rule, :mod:`kailab.outfile`.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kailab.errors import KailabError

MAX_BYTES = 4 * 1024 * 1024  # far above any scenario, fleet, queue file or kubeconfig kailab has met
OWN_MAX_BYTES = 64 * 1024 * 1024  # kailab's own files: the verdicts not yet captured hold GPU timelines


class _Missing(Exception):
    """The file is not there."""


class _Refused(Exception):
    """The file cannot be read; ``args[0]`` says why, in words that follow "it is" or stand alone."""


def what_it_is(mode: int) -> str:
    """What a file of this mode is, in words: a folder, a named pipe (FIFO), a character device…"""
    for test, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def size_words(limit: int) -> str:
    """``4 MiB``, ``64 KiB``: a size limit as a person reads it."""
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"


def _not_regular(path: Path, mode: int) -> _Refused:
    if stat.S_ISLNK(mode):
        try:
            to = f" (to {os.readlink(path)})"
        except OSError:
            to = ""
        return _Refused(f"it is a symbolic link{to}, which kailab never makes there, so it does not follow it")
    return _Refused(f"it is {what_it_is(mode)}; kailab reads only regular files")


def _read(path: Path, limit: int, own: bool) -> bytes:
    try:
        st = os.lstat(path) if own else os.stat(path)
    except FileNotFoundError:
        raise _Missing from None
    except OSError as e:
        raise _Refused(e.strerror or str(e)) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (getattr(os, "O_NOFOLLOW", 0) if own else 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _Missing from None
    except OSError as e:  # ELOOP: a symbolic link swapped in after the lstat
        raise _Refused(e.strerror or str(e)) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise _not_regular(path, st.st_mode)
        try:
            data = fh.read(limit + 1)
        except OSError as e:
            raise _Refused(e.strerror or str(e)) from None
    if len(data) > limit:
        raise _Refused(f"it is larger than {size_words(limit)}, the most kailab reads from one file")
    return data


def read_bytes(
    path: Path | str, error: type[KailabError] = KailabError, hint: str | None = None, limit: int = MAX_BYTES
) -> bytes:
    """The bytes of the regular file ``path`` (a file the user names), at most ``limit`` of them; ``error`` (with
    ``hint``) that names the file otherwise."""
    path = Path(path)
    try:
        return _read(path, limit, own=False)
    except _Missing:
        raise error(f"Cannot read {path}: No such file or directory.", hint=hint) from None
    except _Refused as e:
        raise error(f"Cannot read {path}: {e.args[0]}.", hint=hint) from None


def decoded(path: Path | str, data: bytes, error: type[KailabError] = KailabError, hint: str | None = None) -> str:
    """``data`` read from ``path`` as UTF-8 text; ``error`` for binary data (bytes that are not UTF-8, NUL bytes)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{path} is not a text file (byte {e.start} is not UTF-8).", hint=hint) from None
    if "\0" in text:
        raise error(f"{path} is not a text file (it holds NUL bytes).", hint=hint)
    return text


def read_text(
    path: Path | str, error: type[KailabError] = KailabError, hint: str | None = None, limit: int = MAX_BYTES
) -> str:
    """The text (UTF-8) of the regular file ``path`` the user names, as :func:`read_bytes` reads it."""
    return decoded(path, read_bytes(path, error, hint, limit), error, hint)


def read_own(path: Path, damaged: Callable[[str], Exception], limit: int = OWN_MAX_BYTES, text: bool = True) -> Any:
    """A file of kailab's own (its text, or bytes when not ``text``); None when it is not there.

    Anything else — a symbolic link, a FIFO, a folder, a file larger than ``limit``, bytes that are not text — raises
    ``damaged(why)``: the caller's error, which names the file and the one command that clears it."""
    try:
        data = _read(Path(path), limit, own=True)
    except _Missing:
        return None
    except _Refused as e:
        raise damaged(e.args[0]) from None
    if not text:
        return data
    try:
        out = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise damaged(f"it is not text (byte {e.start} is not UTF-8)") from None
    if "\0" in out:
        raise damaged("it is not text (it holds NUL bytes)")
    return out


def read_own_json(path: Path, damaged: Callable[[str], Exception], limit: int = 1024 * 1024) -> Any:
    """A JSON file of kailab's own, parsed; None when it is not there; ``damaged(why)`` when it cannot be read or is
    not JSON."""
    text = read_own(path, damaged, limit)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise damaged("it is not JSON") from None
    except RecursionError:
        raise damaged("it nests too deep to be kailab's") from None


def peek(path: Path, limit: int = OWN_MAX_BYTES) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (a symbolic link is not followed) of at most ``limit`` bytes;
    None for anything else."""
    try:
        return _read(Path(path), limit, own=True)
    except (_Missing, _Refused):
        return None


def peek_text(path: Path, limit: int = 1024 * 1024) -> str | None:
    """The text of ``path`` when it is a regular file of kailab's own (a symbolic link is not followed) of at most
    ``limit`` bytes; None for anything else — for a record kailab treats as absent when it cannot be read (a pid file,
    a process's address)."""
    data = peek(path, limit)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def tail(path: Path, lines: int, limit: int = 256 * 1024) -> str:
    """The last ``lines`` lines of a log kailab keeps (at most its last ``limit`` bytes read); "" when it is not a
    regular file that can be read."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return ""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return ""
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - limit))
        data = fh.read(limit)
    return "\n".join(data.decode("utf-8", errors="replace").splitlines()[-lines:])
