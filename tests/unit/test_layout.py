"""The README's Layout is the code map, and it cannot go stale: every module under kailab/ is there, once, with the
first line of its docstring, and nothing is there that is not a module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent.parent
MODULES = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "kailab").rglob("*.py"))


def layout(readme: str) -> dict[str, str]:
    """The Layout section's code block: path → what the line says of it (paths under kailab/ only)."""
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 1)[1].split("```", 1)[0]
    rows = [re.match(r"^(kailab/\S+)\s+(.*)$", line) for line in block.splitlines()]
    paths = [m.group(1) for m in rows if m]
    assert len(paths) == len(set(paths)), "a module is in the Layout twice"
    return {m.group(1): m.group(2) for m in rows if m}


def first_line(path: str) -> str:
    doc = ast.get_docstring(ast.parse((REPO / path).read_text()))
    return (doc or "").strip().splitlines()[0] if doc else ""


MAP = layout((REPO / "README.md").read_text())


@pytest.mark.parametrize("module", MODULES)
def test_every_module_is_in_the_readme_layout_with_its_first_docstring_line(module):
    assert first_line(module), f"{module} has no docstring"
    assert module in MAP, f"{module} is not in the README's Layout"
    assert MAP[module] == first_line(module), f"the README's Layout says of {module}: {MAP[module]!r}"


def test_the_layout_names_no_module_that_is_gone():
    assert sorted(set(MAP) - set(MODULES)) == []


def test_the_layout_reader_sees_rows_and_refuses_a_module_twice():
    readme = "x\n## Layout\n\n```\nkailab/a.py   One.\nkailab/b.py  Two words.\nmanifests/   data\n```\n## Next\n"
    assert layout(readme) == {"kailab/a.py": "One.", "kailab/b.py": "Two words."}
    with pytest.raises(AssertionError, match="twice"):
        layout(readme.replace("kailab/b.py", "kailab/a.py"))
