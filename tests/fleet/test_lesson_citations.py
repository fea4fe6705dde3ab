"""What the lessons cite is there: every KAI file a lesson names is in the pinned KAI module (v0.17.0), every name it
says is in a file is in that file, and every kailab file it names is in this repository."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kailab.lesson import EXERCISE_NAMES
from kailab.paths import EXERCISES

REPO = Path(__file__).parent.parent.parent
KAI_TOP = ("pkg/", "cmd/", "docs/", "deployments/")
OURS_TOP = ("tests/", "manifests/", "runbooks/", "kailab/", "exercises/")

pytestmark = pytest.mark.kai


@pytest.fixture(scope="module")
def kai_source(kai_reason):
    if kai_reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must check the lessons against KAI's source: {kai_reason}")
        pytest.skip(kai_reason)
    from kailab.runtimes.local_kai import module_dir

    return module_dir()


def cited(text: str) -> list[str]:
    """Paths a lesson names in backquotes (``pkg/...``, ``tests/...``)."""
    return [p for p in re.findall(r"`([A-Za-z0-9_./-]+/[A-Za-z0-9_./-]*)`", text) if p.startswith(KAI_TOP + OURS_TOP)]


@pytest.mark.parametrize("name", EXERCISE_NAMES)
def test_every_file_a_lesson_cites_exists(kai_source, name):
    text = (EXERCISES / f"{name}.md").read_text()
    paths = cited(text)
    assert paths or name == "baseline", f"{name} cites no file"  # baseline is about kube-scheduler, not KAI
    for path in paths:
        root = kai_source if path.startswith(KAI_TOP) else REPO
        assert (root / path).exists(), f"{name}.md cites {path}, which is not in {root}"


@pytest.mark.parametrize("name", EXERCISE_NAMES)
def test_every_name_a_lesson_places_in_a_kai_file_is_in_it(kai_source, name):
    """``CanReclaimResources`` in ``pkg/.../reclaimable.go``: the name is in that file of KAI v0.17.0."""
    text = " ".join((EXERCISES / f"{name}.md").read_text().split())
    for ident, path in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)` in `([^`]+)`", text):
        if path.startswith(KAI_TOP):
            assert ident in (kai_source / path).read_text(), f"{name}.md: {ident} is not in {path}"


def test_the_citation_reader_finds_paths_and_leaves_labels():
    text = "see `pkg/a/b.go` and `tests/golden/x/` but not `kai.scheduler/queue` or `nvidia.com/gpu`"
    assert cited(text) == ["pkg/a/b.go", "tests/golden/x/"]


RUNBOOK_PAGES = sorted(p.name for p in (REPO / "runbooks").glob("*.md"))


def _page(name: str) -> str:
    return (REPO / "docs" / "instructor.md" if name == "instructor.md" else REPO / "runbooks" / name).read_text()


@pytest.mark.parametrize("name", [*RUNBOOK_PAGES, "instructor.md"])
def test_every_file_a_runbook_or_the_instructors_guide_cites_exists(kai_source, name):
    """The runbooks and docs/instructor.md are held to the lessons' rule: a file they cite is there (``docs/``: KAI's
    or this repository's), and a name they place in a KAI file is in it."""
    text = _page(name)
    for path in cited(text):
        if re.search(r"[A-Z]{3,}", path):  # a placeholder: exercises/NAME.md
            continue
        roots = [kai_source, REPO] if path.startswith("docs/") else [kai_source if path.startswith(KAI_TOP) else REPO]
        assert any((root / path).exists() for root in roots), f"{name} cites {path}, which is in none of {roots}"
    flat = " ".join(text.split())
    for ident, path in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)` in `([^`]+)`", flat):
        if path.startswith(KAI_TOP) and (kai_source / path).is_file():
            assert ident in (kai_source / path).read_text(), f"{name}: {ident} is not in {path}"
