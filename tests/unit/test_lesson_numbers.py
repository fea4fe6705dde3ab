"""Every number a lesson states about its run is one the run checks or the recording shows.

A lesson says what KAI does in numbers ("team-ops keeps 16 GPUs", "0 of 10 bound"). Each such number must be
backed: set by the scenario (its queues, workloads, steps), wanted by one of its expectations (so a wrong sentence
fails the fleet test that runs it), or quoted from its golden recording (tests/golden/NAME/: what KAI reported,
the fair shares and usage it published, what each check observed) — or a fact of the lab's fleet or of KAI's
chart. Read here: each lesson's **Predict.** and **What you should see.**, its row in exercises/README.md and its
paragraph in docs/instructor.md. A lesson's variations (exercises/variations/*.yaml whose ``lesson:`` is the
lesson) back it too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kailab.lesson import EXERCISE_NAMES, load_lesson, summaries, variations
from kailab.paths import EXERCISES, MANIFESTS

REPO = Path(__file__).parent.parent.parent
GOLDEN = REPO / "tests" / "golden"
INSTRUCTOR = REPO / "docs" / "instructor.md"

# KAI v0.17.0's chart's priority classes (deployments/kai-scheduler/templates/priorityclasses/): lessons name
# their values ("build-preemptible (75)").
KAI_PRIORITY_VALUES = {50, 75, 100, 125}

# Numbers a lesson works out in the sentence itself, from backed ones; each with the sum it is.
DERIVED = {
    ("fractions", 1.2): "0.9 + 0.3, the two pods' fractions: more than one GPU",
    ("topology", 24.0): "the fleet's 32 GPUs less the 8-GPU pod's",
    ("fairshare", 24.0): "the fleet's 32 GPUs less the two quotas of 4: the spare GPUs",
    ("fairshare", 18.0): "3/4 of the 24 spare (weights 3 and 1); 4 + 18 = 22 is checked",
    ("fairshare", 6.0): "1/4 of the 24 spare; 4 + 6 = 10 is checked",
    ("fairshare", 12.0): "team-heavy reclaimed from 22 to 10, both checked",
}
NUMBER = re.compile(r"(?<![\w./:#-])(\d+(?:\.\d+)?)(?![\w/])")


def stated(text: str) -> set[float]:
    """The numbers a sentence states: not inside backquotes (paths, labels, fields), not in a "…"-quoted message
    (each is checked against the recording word for word: tests/unit/test_lesson.py), not part of a name or an
    issue's number (#1968)."""
    return {float(n) for n in NUMBER.findall(re.sub(r"`[^`]*`|\"[^\"]*\"|“[^”]*”", " ", text))}


def _in(text: str) -> set[float]:
    return {float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)}


def _values(node, out: set[float]) -> set[float]:
    """Every number a scenario file sets or wants (not in its words for people: titles, questions, notes)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in ("title", "ask", "note", "lesson", "verify", "name"):
                _values(value, out)
    elif isinstance(node, list):
        for value in node:
            _values(value, out)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        out.add(float(node))
    elif isinstance(node, str):
        out |= _in(node)
    return out


def recorded(folder: Path) -> set[float]:
    """The numbers a golden recording holds: what each check expected and observed, how long each step took to hold,
    the fair shares and usage KAI published. (What KAI said is quoted, not stated: a quote is checked word for word.)"""
    verdict = json.loads((folder / "verdict.json").read_text())
    out = {float(t) for t in (verdict.get("timings") or {}).values()}  # seconds until each step held
    for check in verdict["checks"]:
        out |= _in(f"{check['expected']} {check['observed']}")
    for line in (folder / "changes.jsonl").read_text().splitlines():
        change = json.loads(line)
        share = change.get("fairShare")
        if share:
            out |= {float(share["gpu"]), float(share.get("usage", 0.0))}
    return out


def fleet_facts() -> set[float]:
    """The lab's fleet (manifests/fleet.yaml): nodes and GPUs per pool, per node, in all."""
    pools = yaml.safe_load((MANIFESTS / "fleet.yaml").read_text())["pools"]
    out = {float(p["nodes"]) for p in pools} | {float(p["gpusPerNode"]) for p in pools}
    out |= {float(p["nodes"] * p["gpusPerNode"]) for p in pools}
    out |= {float(sum(p["nodes"] for p in pools)), float(sum(p["nodes"] * p["gpusPerNode"] for p in pools))}
    return out


def backing(name: str) -> set[float]:
    """Every number that backs what lesson ``name`` states."""
    files = [EXERCISES / f"{name}.yaml", *variations(name)]
    out = fleet_facts() | {float(v) for v in KAI_PRIORITY_VALUES}
    for path in files:
        out |= _values(yaml.safe_load(path.read_text()), set())
        out |= recorded(GOLDEN / path.stem)
    return out | {n for (lesson, n) in DERIVED if lesson == name}


def instructor_paragraph(name: str) -> str:
    """The lesson's paragraph under *Per lesson* in docs/instructor.md (with its exit questions)."""
    text = INSTRUCTOR.read_text()
    m = re.search(rf"^\*\*{re.escape(name)}\.\*\*(.*?)(?=^\*\*[a-z-]+\.\*\*|^## )", text, re.MULTILINE | re.DOTALL)
    return m.group(1) if m else ""


def statements(name: str) -> dict[str, str]:
    les = load_lesson(name)
    return {
        f"exercises/{name}.md, Predict": les.sections["Predict"],
        f"exercises/{name}.md, What you should see": les.sections["What you should see"],
        "its row in exercises/README.md": summaries().get(name, ""),
        "docs/instructor.md": instructor_paragraph(name),
    }


def _backed(n: float, backed: set[float]) -> bool:
    """``n`` is one of them, or one of them rounded as ``n`` is written (a usage of 0.9591… stated as 0.96)."""
    places = len(f"{n:g}".partition(".")[2])
    return n in backed or any(round(b, places) == n for b in backed)


def unbacked(name: str, texts: dict[str, str]) -> list[str]:
    backed = backing(name)
    return [
        f"{name}: {where} states {n:g}, which neither the scenario sets or checks nor its recording shows"
        for where, text in texts.items()
        for n in sorted(stated(text))
        if not _backed(n, backed)
    ]


@pytest.mark.parametrize("name", EXERCISE_NAMES)
def test_every_number_a_lesson_states_is_checked_or_recorded(name):
    assert unbacked(name, statements(name)) == []


def test_every_lesson_states_numbers_and_has_a_paragraph_for_the_instructor():
    for name in EXERCISE_NAMES:
        assert stated(load_lesson(name).sections["What you should see"]) or name == "placement", name
        assert instructor_paragraph(name).strip(), f"docs/instructor.md has no **{name}.** paragraph"


def test_a_number_the_run_never_shows_is_caught():
    """The quota lesson saying team-ops keeps 17 GPUs (it keeps 16): no expectation, no recording backs 17."""
    said = load_lesson("quota").sections["What you should see"]
    assert "team-ops keeps 16" in said
    wrong = said.replace("team-ops keeps 16", "team-ops keeps 17")
    assert unbacked("quota", {"What you should see": wrong}) == [
        "quota: What you should see states 17, which neither the scenario sets or checks nor its recording shows"
    ]


def test_numbers_in_names_paths_and_code_are_not_statements():
    text = '`kai.scheduler/batch-min-member: "10"` on rack-a1, v0.17.0, 8-GPU pods, 3 pods and 2.5 GPUs'
    assert stated(text) == {8.0, 3.0, 2.5}


def test_a_variation_backs_its_lesson():
    """The quota lesson's variation (teams' quotas 0) is read with the lesson: its run backs the lesson's 0s."""
    assert [p.name for p in variations("quota")] == ["quota-zero.yaml"]
    assert variations("gang") == []
