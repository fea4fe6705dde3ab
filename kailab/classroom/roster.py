"""Who is in a class: learner names, from a count, from ``--learner NAME`` or from a roster file.

A learner's name becomes their prefix (in front of their queues, namespaces and nodes), their KAI partition
(the ``kai.scheduler/node-pool`` label value) and their scheduler's process name, so it is checked once here:
a DNS label short enough to prefix every lesson's names, not given twice, and never the start of another
learner's name followed by ``-`` (``ann`` and ``ann-b`` would both own ``ann-b-team-a``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kailab.errors import RosterError
from kailab.scenarios.prefix import MAX_PREFIX, check_prefix
from kailab.userfile import read_text

# Each learner runs a scheduler of their own (76–84 MiB, measured by bench/class.py) beside a 5-node fleet.
MAX_LEARNERS = 40
MAX_ROSTER_BYTES = 64 * 1024


@dataclass(frozen=True)
class Roster:
    """The learners of a class, in the order given."""

    names: tuple[str, ...]

    def __post_init__(self):
        check_names(list(self.names))


def from_count(count: int) -> Roster:
    """``--learners N``: learner-1 … learner-N."""
    _check_count(count)
    return Roster(tuple(f"learner-{i}" for i in range(1, count + 1)))


def from_names(names: list[str]) -> Roster:
    """``--learner NAME`` given once per learner."""
    check_names(names, [f"--learner {n}" for n in names])
    return Roster(tuple(names))


def from_file(path: Path) -> Roster:
    """A roster file: one learner name a line; blank lines and ``#`` comments are skipped. Errors name file:line."""
    if not os.path.lexists(path):
        raise RosterError(f"No roster file {path}.", hint="Give a file with one learner name a line.")
    text = read_text(path, RosterError, "A roster is a text file with one learner name a line.", MAX_ROSTER_BYTES)
    names, lines = [], []
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), 1):  # a BOM: Windows editors save one
        name = line.split("#", 1)[0].strip()
        if name:
            names.append(name)
            lines.append(f"{path}:{number}")
    check_names(names, lines, where=str(path))
    return Roster(tuple(names))


def _check_count(count: int) -> None:
    if count < 1:
        raise RosterError(
            f"A class needs at least one learner, not {count}.",
            hint="Give --learners N, --learner NAME (repeated) or --roster FILE.",
        )
    if count > MAX_LEARNERS:
        raise RosterError(
            f"{count} learners is more than one lab holds: at most {MAX_LEARNERS} "
            "(each has a scheduler process and a 5-node fleet of their own).",
            hint="Split the class over several machines.",
        )


def check_names(names: list[str], lines: list[str] | None = None, where: str = "") -> None:
    """Refuse, with the first problem and where it is, a list of names that cannot be a class."""
    lines = lines or [f"learner {i}" for i in range(1, len(names) + 1)]
    if not names and where:
        raise RosterError(f"The roster {where} names no learner.", hint="Write one learner name a line.")
    _check_count(len(names))
    seen: dict[str, str] = {}
    for name, at in zip(names, lines, strict=True):
        try:
            check_prefix(name)
        except ValueError:
            raise RosterError(
                f"{at}: {name!r} cannot be a learner's name: use 1 to {MAX_PREFIX} lower-case letters, "
                "digits and '-', starting and ending with a letter or digit (it goes in front of "
                "their queue, namespace and node names).",
                hint="For example: ann, team-3.",
            ) from None
        if name in seen:
            raise RosterError(
                f"{at}: {name!r} is named twice (first at {seen[name]}).",
                hint="Give each learner one name of their own.",
            )
        seen[name] = at
    for name, at in zip(names, lines, strict=True):
        for other in seen:
            if other != name and other.startswith(name + "-"):
                raise RosterError(
                    f"{seen[other]}: {other!r} starts with {name!r} and a '-' ({at}): their names "
                    "would overlap once prefixed.",
                    hint=f"Rename one of them (for example {name}-1).",
                )
