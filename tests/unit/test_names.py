"""One name, one meaning: KAI's and kailab's names are spelled once, in kailab/labels.py, and used from there."""

from __future__ import annotations

import ast
from pathlib import Path

import kailab
from kailab import labels

PACKAGE = Path(kailab.__file__).parent
# Files other helpers rewrite in parallel; the lead points them at labels.py when merging (issue 23). None left.
NOT_YET: set[str] = set()
NAMES = {
    labels.KAI_SCHEDULER_NAME,
    labels.KAI_SCHEDULER_DEPLOYMENT,
    labels.RESERVATION_NAMESPACE,
    labels.DEFAULT_SCHEDULER_NAME,
    labels.QUEUE_API,
    labels.PODGROUP_API,
    labels.QUEUE_LABEL,
}


def spelled_out(path: Path, root: Path = PACKAGE) -> list[str]:
    """The names above written as string literals in a file (not in docstrings or comments)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        f"{path.relative_to(root)}:{n.lineno}: {n.value!r}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value in NAMES and id(n) not in docstrings
    ]


def test_each_name_is_spelled_only_in_labels():
    files = [p for p in PACKAGE.rglob("*.py") if p.name != "labels.py" and str(p.relative_to(PACKAGE)) not in NOT_YET]
    assert [hit for p in files for hit in spelled_out(p)] == []


def test_the_check_finds_a_name_spelled_out(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""Mentions kai-scheduler in words."""\nX = "kai-resource-reservation"\n')
    assert spelled_out(f, tmp_path) == ["m.py:2: 'kai-resource-reservation'"]
