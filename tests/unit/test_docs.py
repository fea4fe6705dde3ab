"""The project's Markdown: no table split in two (a table's rows after a break lose their header)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent.parent
DOCS = sorted(
    [
        REPO / "README.md",
        *(REPO / "exercises").glob("*.md"),
        *(REPO / "runbooks").glob("*.md"),
        *(REPO / "docs").glob("*.md"),
    ]
)


def headless_tables(text: str) -> list[int]:
    """Lines where a block of table rows starts without a header and its ``| --- |`` line (outside code blocks)."""
    out, block, fenced = [], [], False
    for n, line in enumerate([*text.splitlines(), ""], 1):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            block.append((n, line))
            continue
        if block and (len(block) < 2 or not re.match(r"^\|\s*:?-{3,}", block[1][1])):
            out.append(block[0][0])
        block = []
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_table_is_split(doc):
    assert headless_tables(doc.read_text()) == []


def test_the_check_finds_a_split_table():
    text = "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n| 3 | 4 |\n"
    assert headless_tables(text) == [5]
    assert headless_tables("| a |\n| --- |\n| 1 |\n") == []
