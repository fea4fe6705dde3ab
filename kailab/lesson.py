"""``kailab lesson``: one exercise as a classroom walk-through — concept, prediction, run, result, why.

The words come from the exercise's lesson file (``exercises/NAME.md``), whose paragraphs start
with **Concept.**, **Predict.**, **Run.**, **What you should see.** and **Why.**
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kailab.paths import EXERCISES

SECTIONS = ("Concept", "Predict", "Run", "What you should see", "Why")


@dataclass
class Lesson:
    name: str
    title: str
    sections: dict[str, str]

    @property
    def one_line(self) -> str:
        concept = self.sections.get("Concept", "")
        return concept.split(". ")[0].rstrip(".") + "." if concept else ""


def load_lesson(name: str, root: Path = EXERCISES) -> Lesson:
    text = (root / f"{name}.md").read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    pattern = r"\*\*(" + "|".join(map(re.escape, SECTIONS)) + r")\.\*\*"
    parts = re.split(pattern, text)
    sections = {parts[i]: " ".join(parts[i + 1].split()) if parts[i] != "Predict" else parts[i + 1].strip()
                for i in range(1, len(parts) - 1, 2)}
    return Lesson(name, title, sections)


def lesson_names(root: Path = EXERCISES) -> list[str]:
    return sorted(p.stem for p in root.glob("*.md") if p.stem != "README" and (root / f"{p.stem}.yaml").exists())
