"""The one rule for files kailab writes: never over a file it did not create, never through a link out, never half.

Never over a file kailab did not create (unless the user says ``--force``), never through a symbolic link out of its
own folder, and complete or not at all.

Three places kailab writes, one function each:

- **its own folders** — the lab folder (``KAILAB_HOME``, marked by :data:`kailab.labdir.MARKER`) and the folders it
  makes elsewhere (a class page's pictures, marked by :data:`FOLDER_MARKER`): :func:`write_own` replaces a file there
  whole, :func:`append_own` adds a line. Whatever is at the path must be a regular file (a symbolic link, a FIFO or
  a folder there is refused and named: kailab makes none), and the path must not lead out of the folder.
- **a file at a place the user names** (``class evidence --out``, ``class up --out``'s kubeconfigs, the default
  ``class-report.md``): :func:`write_user_file`. A new file is created; an existing one is replaced only when kailab
  wrote it and nobody changed it since — its first line says so, with the hash of the rest (:func:`signed`) — or when
  the user says ``--force``. A symbolic link there is never followed (``--force`` replaces the link itself).
  :func:`check_user_file` says the same before a command starts its work.
- **something new** — a task's starting copy (:func:`create_new`), an evidence snapshot (:func:`new_folder`): made
  only where nothing is, never replacing anything.

Every file is written under a temporary name beside its place and renamed there (rename replaces a symbolic link
itself, and never leaves half a file); an ``OSError`` (a read-only folder, a full disk) becomes a
:class:`WriteRefused` that names the file. Reading follows the other rule, :mod:`kailab.userfile`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kailab.errors import KailabError
from kailab.userfile import peek, what_it_is

FOLDER_MARKER = ".kailab-made"  # in a folder kailab made outside its lab folder: what is in it is kailab's to replace
_SIGNATURE = re.compile(rb"written by kailab; kailab replaces it only while it is unchanged \(sha256 ([0-9a-f]{64})\)")


class WriteRefused(KailabError):
    """kailab will not, or cannot, write a file there; nothing was written."""


@dataclass(frozen=True)
class Comment:
    """How a text format writes a comment line (for the signature on a file's first line)."""

    start: str
    end: str = ""


MARKDOWN = HTML = Comment("<!-- ", " -->")
YAML = Comment("# ")


def signed(text: str, what: str, comment: Comment) -> str:
    """``text`` with a first line that says kailab wrote it (``what`` it is) and the hash of the rest: the file is
    kailab's to replace while that hash holds (:func:`kailab_wrote`)."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    line = f"{what}, written by kailab; kailab replaces it only while it is unchanged (sha256 {digest})"
    return f"{comment.start}{line}{comment.end}\n{text}"


def kailab_wrote(data: bytes) -> bool:
    """True when ``data`` (a file's bytes) is a file kailab wrote with :func:`signed` and nobody changed since."""
    first, newline, rest = data.partition(b"\n")
    found = _SIGNATURE.search(first)
    return bool(found and newline and hashlib.sha256(rest).hexdigest() == found.group(1).decode())


# -- its own folders ---------------------------------------------------------------------------------------------------


def _lstat(path: Path) -> os.stat_result | None:
    """What is at ``path`` itself (a link not followed); None when nothing is."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _refused(path, e) from None


def _link_words(path: Path) -> str:
    try:
        return f"a symbolic link (to {os.readlink(path)})"
    except OSError:
        return "a symbolic link"


def check_own(path: Path, root: Path | None, hint: str | None) -> None:
    """Refuse a path of kailab's own folder that is not a regular file (or nothing), or that leads out of ``root``."""
    if root is not None:
        inside, real_root = os.path.realpath(path.parent), os.path.realpath(root)
        if inside != real_root and not inside.startswith(real_root.rstrip(os.sep) + os.sep):
            raise WriteRefused(
                f"kailab will not write {path}: its folder leads out of {root} (a symbolic link on the way, "
                f"to {inside}).",
                hint=hint or f"Remove the link in {root}; kailab makes none there.",
            )
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISLNK(st.st_mode):
        raise WriteRefused(
            f"kailab will not write {path}: it is {_link_words(path)}, which kailab did not make; it does not write "
            "through it.",
            hint=hint or f"Remove the link ({path}), then run again.",
        )
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused(
            f"kailab will not write {path}: it is {what_it_is(st.st_mode)}, not a file kailab wrote.",
            hint=hint or f"Move it away ({path}), then run again.",
        )


def write_own(
    path: Path, data: str | bytes, root: Path | None = None, mode: int = 0o644, hint: str | None = None
) -> Path:
    """Write a file in kailab's own folder ``root`` (the lab folder, or a folder it made): whole, under a temporary
    name, then renamed to ``path``. What is at ``path`` must be a regular file or nothing (:class:`WriteRefused`
    otherwise, with ``hint``, or a hint to remove it)."""
    path = Path(path)
    check_own(path, root, hint)
    _replace(path, data if isinstance(data, bytes) else data.encode(), mode)
    return path


def append_own(path: Path, line: str, root: Path | None = None, hint: str | None = None) -> None:
    """Add ``line`` (a newline is added) to a file in kailab's own folder, in one write: never through a symbolic
    link, never into a FIFO or device; a write the disk cannot take whole is taken back."""
    path = Path(path)
    check_own(path, root, hint)
    data = (line.rstrip("\n") + "\n").encode()
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), _mode(0o644))
    except OSError as e:
        raise _refused(path, e) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WriteRefused(f"kailab will not write {path}: it is {what_it_is(st.st_mode)}.", hint=hint)
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, st.st_size)  # what was there before, and nothing of this line
            raise _refused(path, e) from None
    finally:
        os.close(fd)


def open_own_log(path: Path, root: Path | None = None) -> BinaryIO:
    """A log of kailab's own, opened to add to (for a process's output): never through a symbolic link, never a FIFO
    or device."""
    path = Path(path)
    check_own(path, root, None)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), _mode(0o644))
    except OSError as e:
        raise _refused(path, e) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteRefused(f"kailab will not write its log {path}: it is not a regular file.")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


def own_folder(path: Path, what: str) -> Path:
    """A folder kailab makes outside its lab folder (``what`` it holds): made and marked, or one it made before
    (its marker there), or an empty one (then marked). Anything else at ``path`` is refused: kailab never writes
    into a folder it did not make, nor through a symbolic link."""
    path = Path(path)
    st = _lstat(path)
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise WriteRefused(
                f"kailab will not write {what} in {path}: it is {_link_words(path)}; kailab does not write through it.",
                hint=f"Remove the link or choose another place for {what}.",
            )
        if not stat.S_ISDIR(st.st_mode):
            raise WriteRefused(
                f"kailab will not write {what} in {path}: it is {what_it_is(st.st_mode)}, not a folder kailab made.",
                hint=f"Move it away or choose another place for {what}.",
            )
        marker = path / FOLDER_MARKER
        if not (marker.is_file() and not marker.is_symlink()):
            try:
                empty = not any(path.iterdir())
            except OSError as e:
                raise _refused(path, e) from None
            if not empty:
                raise WriteRefused(
                    f"kailab will not write {what} in {path}: the folder holds files kailab did not write.",
                    hint=f"Move it away or choose another place for {what}.",
                )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _refused(path, e) from None
    if not (path / FOLDER_MARKER).is_file():
        write_own(path / FOLDER_MARKER, f"This folder was made by kailab for {what}; kailab replaces what is in it.\n")
    return path


# -- a file at a place the user names ----------------------------------------------------------------------------------


def check_user_file(path: Path, force: bool = False, what: str = "it") -> None:
    """Refuse, before anything is done, to write ``path`` (a place the user names, for ``what``) when something is
    there that kailab may not replace: a folder, FIFO or device always; a symbolic link, or a file kailab did not
    write (or that was changed since), unless ``force``."""
    path = Path(path)
    check_folder(path.parent, path)
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISLNK(st.st_mode):
        if force:
            return  # the link itself is replaced, never what it points to
        raise WriteRefused(
            f"kailab will not write {path}: it is {_link_words(path)}, and kailab does not write through a link.",
            hint="Choose another place, or add --force to replace the link itself (never what it points to).",
        )
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused(
            f"kailab will not write {path}: it is {what_it_is(st.st_mode)}.",
            hint=f"Choose another place for {what}.",
        )
    if force:
        return
    data = peek(path)
    if data is None or not kailab_wrote(data):
        raise WriteRefused(
            f"kailab will not replace {path}: it is a file kailab did not write (or one changed since kailab wrote "
            "it). Nothing was written.",
            hint=f"Choose another place for {what}, or add --force to replace it.",
        )


def check_folder(folder: Path, file: Path | None = None) -> None:
    """Refuse a folder kailab could not write a file (``file``) in: the nearest part of it that exists must be a folder
    this user may write (the rest is made)."""
    folder = Path(os.path.abspath(folder))
    at = folder
    while not os.path.lexists(at) and at.parent != at:
        at = at.parent
    what = file or folder
    if not at.is_dir():
        raise WriteRefused(
            f"Cannot write {what}: {at} is not a folder.", hint="A file is in the way: choose another place."
        )
    if not os.access(at, os.W_OK | os.X_OK):
        raise WriteRefused(f"Cannot write {what}: {at} is read-only for you.", hint="Choose a place you can write.")


def write_user_file(path: Path, text: str, what: str, comment: Comment, force: bool = False, mode: int = 0o644) -> Path:
    """Write ``text`` (``what`` it is) to ``path``, a place the user names, signed as kailab's (:func:`signed`):
    new, or over a file kailab wrote there and nobody changed, or over anything but a folder with ``force``.
    Missing folders on the way are made."""
    path = Path(path)
    check_user_file(path, force, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _refused(path.parent, e) from None
    _replace(path, signed(text, what, comment).encode(), mode)
    return path


# -- something new -----------------------------------------------------------------------------------------------------


def create_new(path: Path, data: str | bytes, mode: int = 0o644) -> bool:
    """Write a new file at ``path`` (whole, or not at all); False, untouched, when anything is there already
    (a symbolic link too, wherever it points)."""
    path = Path(path)
    if os.path.lexists(path):
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _refused(path.parent, e) from None
    tmp = _temporary(path, data if isinstance(data, bytes) else data.encode(), mode)
    try:
        os.link(tmp, path)  # fails when anything is at path (a link too), and never follows one
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):  # a file system without hard links
            raise _refused(path, e) from None
        if os.path.lexists(path):
            return False
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return True


@contextlib.contextmanager
def new_folder(target: Path, what: str = "a folder kailab writes") -> Iterator[Path]:
    """A folder made whole: the block fills a temporary folder beside ``target``, which is then renamed to it —
    complete or absent. Raises FileExistsError (errno None) when anything is at ``target``: a folder of files
    written is never replaced."""
    target = Path(target)
    if os.path.lexists(target):
        raise FileExistsError(f"{target} exists; {what} is never overwritten")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, _mode(0o755))
        if os.path.lexists(target):
            raise FileExistsError(f"{target} exists; {what} is never overwritten")
        os.rename(tmp, target)  # the OS refuses a target that is a non-empty folder or not a folder
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# -- the one way a file is written -------------------------------------------------------------------------------------


def _mode(mode: int) -> int:
    """``mode`` as the user's umask leaves it."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return mode & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return mode & ~0o022


def _temporary(path: Path, data: bytes, mode: int) -> str:
    """``data`` written whole to a new file beside ``path`` (its name hidden and unique); its name."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    except OSError as e:
        raise _refused(path, e) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), _mode(mode))
            os.fsync(fh.fileno())
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise _refused(path, e) from None
        raise
    return tmp


def _replace(path: Path, data: bytes, mode: int) -> None:
    tmp = _temporary(path, data, mode)
    try:
        os.replace(tmp, path)  # replaces a symbolic link itself, never what it points to
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _refused(path, e) from None


def _refused(path: Path, e: OSError) -> WriteRefused:
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "Free some space or choose another place, then run again."
    elif isinstance(e, (FileExistsError, NotADirectoryError)):
        hint = "A file is in the way: choose another place."
    else:
        hint = "Choose a place you can write."
    return WriteRefused(f"Cannot write {path}: {e.strerror or e}.", hint=hint)
