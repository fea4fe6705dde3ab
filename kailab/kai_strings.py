"""What KAI says, in one place: the labels, annotations, fields, reasons, messages and metric names kailab quotes.

Each is a row of kailab/kai_strings.yaml, with the file of KAI v0.17.0 that defines it; code reads a row by its key
(``get("reason.over-limit")``), and a KAI message with format verbs becomes a pattern for kailab's readers
(``pattern("message.queue-missing", "queue")``). tests/unit/test_kai_strings.py finds each row in the pinned KAI
module's source and names every kailab file and line that quotes a row KAI no longer says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

TABLE = Path(__file__).with_name("kai_strings.yaml")
# Go's format verbs (fmt): %s, %v, %d, %q, %.2f …; "%%" is a literal percent sign
_VERB = re.compile(r"%[-+# 0]*(?:\d+|\*)?(?:\.\d+)?[a-zA-Z]|%%")


@dataclass(frozen=True)
class KaiString:
    """One row: a string KAI writes or reads, where KAI defines it, and the key kailab reads it by."""

    key: str
    text: str
    kind: str
    defined: str
    source: str = ""  # the literal in ``defined`` when it differs from ``text`` (a metric without its namespace)
    docs: str = ""  # the KAI doc that documents it for users


@cache
def rows() -> dict[str, KaiString]:
    """Every row of the table by its key (read once)."""
    return {r["key"]: KaiString(**r) for r in yaml.safe_load(TABLE.read_text())["strings"]}


def get(key: str) -> str:
    """The text of one row; a KeyError naming the table when no row has that key."""
    try:
        return rows()[key].text
    except KeyError:
        raise KeyError(f"{TABLE.name} has no row {key!r}") from None


def pattern(key: str, *groups: str) -> str:
    """A regular expression for a KAI message: its literal parts as written, each format verb a group of the text
    KAI put there — named by ``groups`` in order (unnamed once they run out). A verb at either end takes a word."""
    text = get(key)
    parts = _VERB.split(text)
    verbs = _VERB.findall(text)
    out = [re.escape(parts[0])]
    for i, (verb, after) in enumerate(zip(verbs, parts[1:], strict=True)):
        if verb == "%%":
            out.append("%")
        else:
            body = r"\S+" if not after or (i == 0 and not parts[0]) else ".+?"
            out.append(f"(?P<{groups[i]}>{body})" if i < len(groups) else f"(?:{body})")
        out.append(re.escape(after))
    return "".join(out)


def fragments(text: str) -> list[str]:
    """A KAI text's literal parts between its format verbs (what a quote of its output must contain)."""
    return [p for p in _VERB.split(text) if p.strip()]
