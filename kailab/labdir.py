"""The lab folder (``KAILAB_HOME``) is kailab's only when kailab made it: a marker file says so.

kailab writes the marker when it creates the folder (or finds it empty), and removes only
the entries it names itself — never a folder or file it did not write. Verdicts a learner
has not yet captured as evidence are kept across ``down`` and the next ``up``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from kailab import outfile
from kailab.errors import KailabError
from kailab.progress import Progress

MARKER = ".kailab-lab"
VERDICTS = "verdicts-since-capture.jsonl"  # what `kailab evidence` has not captured yet


def is_ours(home: Path) -> bool:
    """True when ``home`` holds kailab's marker: a regular file (a symbolic link there is not kailab's)."""
    try:
        return stat.S_ISREG(os.lstat(home / MARKER).st_mode)
    except OSError:
        return False


def check_home(home: Path) -> None:
    """Refuse a lab folder that is there but is not a folder (a file, a FIFO, a device, a link to one), in words."""
    from kailab.userfile import what_it_is

    try:
        mode = os.stat(home).st_mode
    except OSError:
        return  # not there (a new lab), or a link to nothing: what comes next says so
    if not stat.S_ISDIR(mode):
        what = "a file" if stat.S_ISREG(mode) else what_it_is(mode)
        raise KailabError(
            f"The lab folder {home} is {what}, not a folder.",
            hint="Point KAILAB_HOME at a folder: a new one, or a lab kailab made.",
        )


def claim(home: Path) -> Path:
    """Make ``home`` the lab folder: create it (or adopt it while empty) and mark it as kailab's.

    Refuses a folder that holds anything kailab did not write, and one it cannot write.
    """
    if is_ours(home):
        return home
    check_home(home)
    if home.is_dir() and any(home.iterdir()):
        raise KailabError(
            f"The lab folder {home} already holds files that kailab did not write.",
            hint="kailab only uses a new or empty folder for its lab. Point KAILAB_HOME at one, "
            "e.g. KAILAB_HOME=~/.local/state/kailab",
        )
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KailabError(
            f"The lab folder {home} cannot be written: {e.strerror or e}.",
            hint="Point KAILAB_HOME at a folder you can write.",
        ) from e
    try:
        outfile.write_own(home / MARKER, "This folder was made by kailab for its lab; `kailab down` removes it.\n")
    except outfile.WriteRefused as e:
        raise KailabError(
            f"The lab folder {home} cannot be written: {e.message}", hint="Point KAILAB_HOME at a folder you can write."
        ) from e
    return home


def refuse_unless_ours(home: Path) -> None:
    """Raise when ``home`` exists but kailab did not make it (nothing is touched then)."""
    check_home(home)
    if home.exists() and not is_ours(home):
        raise KailabError(
            f"{home} is not a lab folder made by kailab (it has no {MARKER} file), so kailab leaves it alone.",
            hint="Point KAILAB_HOME at the lab you want to remove, or unset it for the default lab.",
        )


def remove(home: Path, entries: list[str]) -> list[str]:
    """Remove the named entries kailab wrote in its lab folder, then the folder if nothing else is left.

    Keeps uncaptured verdicts (and the marker with them). Returns the names left in the folder.
    """
    refuse_unless_ours(home)
    if not home.exists():
        return []
    for name in entries:  # each on its own: one that cannot be removed leaves the rest removed, and is said (left)
        path = home / name
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        except OSError:
            pass
    with contextlib.suppress(OSError):
        if not os.path.lexists(home / VERDICTS):
            (home / MARKER).unlink(missing_ok=True)
    try:
        left = sorted(p.name for p in home.iterdir())
    except OSError:
        return []
    if not left:
        with contextlib.suppress(OSError):
            home.rmdir()
    return left


def report_left(home: Path, left: list[str], progress: Progress) -> None:
    """Say what ``down`` kept in the lab folder: uncaptured verdicts, and files kailab did not write."""
    if VERDICTS in left:
        progress.info(
            f"Kept the verdicts not yet captured as evidence: {home / VERDICTS} "
            "(the next `kailab evidence` includes them)."
        )
    strangers = [n for n in left if n not in (VERDICTS, MARKER)]
    if strangers:
        progress.info(f"Left {len(strangers)} file(s) in {home} that kailab did not write: {', '.join(strangers[:5])}")
