"""``kailab lesson``: one exercise as a classroom walk-through — concept, prediction, run, result, why.

The words come from the exercise's lesson file (``exercises/NAME.md``), whose paragraphs start
with **Concept.**, **Predict.**, **Run.**, **What you should see.** and **Why.**
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kailab.paths import EXERCISES

SECTIONS = ("Concept", "Predict", "Run", "What you should see", "Why")

# Every exercise, in teaching order — the one list: ``kailab demo all`` runs them in this order, ``kailab lesson``
# lists them so. Each is a scenario (exercises/NAME.yaml) beside its lesson (exercises/NAME.md); a test holds the
# folder, the README and exercises/README.md to this list.
EXERCISE_NAMES = (
    "quota",
    "borrow",
    "reclaim",
    "gang",
    "priority",
    "hierarchy",
    "fairshare",
    "placement",
    "topology",
    "consolidation",
    "fractions",
    "protection",
    # KAI's per-workload policies (issue 26)
    "preempt-delay",
    "elastic",
    "staleness",
    "baseline",
)


@dataclass
class Lesson:
    name: str
    title: str
    sections: dict[str, str]

    @property
    def one_line(self) -> str:
        """The concept's first sentence, as plain text (no Markdown emphasis): the lesson's summary in listings."""
        concept = self.sections.get("Concept", "")
        first = concept.split(". ")[0].rstrip(".") + "." if concept else ""
        return first.replace("*", "").replace("`", "")


def load_lesson(name: str, root: Path = EXERCISES) -> Lesson:
    text = (root / f"{name}.md").read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    pattern = r"\*\*(" + "|".join(map(re.escape, SECTIONS)) + r")\.\*\*"
    parts = re.split(pattern, text)
    sections = {
        parts[i]: " ".join(parts[i + 1].split()) if parts[i] != "Predict" else parts[i + 1].strip()
        for i in range(1, len(parts) - 1, 2)
    }
    return Lesson(name, title, sections)


def lesson_names(root: Path = EXERCISES) -> list[str]:
    """The exercises in teaching order, then any lesson an instructor added to the folder (NAME.md beside NAME.yaml)."""
    added = sorted(
        p.stem
        for p in root.glob("*.md")
        if p.stem not in ("README", *EXERCISE_NAMES) and (root / f"{p.stem}.yaml").exists()
    )
    return [*EXERCISE_NAMES, *added]


def run_lesson(
    les: Lesson,
    scenario,
    engine,
    ask: Callable[[], str],
    frame: Callable[[], object],
    keep: Callable[[object, str], None] | None = None,
) -> bool:
    """The walk-through of ``les``: concept, prediction (``ask``), ``scenario`` run by ``engine``, what the cluster
    looks like then (``frame``), the result and why; recorded for evidence. True if KAI did what the lesson teaches
    (or the lesson does not apply to this cluster). The caller binds it to a lab (``kailab lesson`` in cli.py);
    ``keep(verdict, prediction)`` keeps them somewhere more (a class's learner: in the cluster)."""
    from rich.markdown import Markdown
    from rich.panel import Panel
    from rich.text import Text

    from kailab import evidence, render
    from kailab.applied import kai_lines
    from kailab.paths import lab_home

    out = render.stdout

    def panel(body, title: str) -> None:
        out.print(Panel(body, title=Text(title), title_align="left"), soft_wrap=False)

    expected = les.sections.get("What you should see", "")
    panel(les.sections.get("Concept", ""), les.title)
    out.print(render.applied_table(kai_lines(scenario)))
    panel(Markdown(les.sections.get("Predict", "")), "Predict")
    prediction = ask()
    verdict = engine.run(scenario)
    out.print(frame())  # queues, and who holds each GPU
    out.print(render.verdict_table(verdict))
    panel(
        f"You predicted: {prediction}\nThe lesson expects: {expected}\nKAI did: {_what_kai_did(verdict)}",
        "Prediction and result",
    )
    panel(les.sections.get("Why", ""), "Why")
    record = verdict.to_record()
    record["lesson"] = {"prediction": prediction, "expected": expected, "passed": verdict.passed}
    evidence.record_verdict(lab_home(), record)
    if keep is not None:
        keep(verdict, prediction)
    out.print("Recorded for your evidence: kailab evidence")
    return verdict.ok


def _what_kai_did(verdict) -> str:
    if verdict.passed:
        return "what the lesson expects"
    if verdict.not_applicable:
        return f"nothing — the lesson is not applicable {verdict.not_applicable}"
    return "something else — see the FAIL rows"
