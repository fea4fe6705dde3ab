"""``kailab lesson``: one exercise as a classroom walk-through — concept, prediction, run, result, why.

The words come from the exercise's lesson file (``exercises/NAME.md``), whose paragraphs start
with **Concept.**, **Predict.**, **Run.**, **What you should see.** and **Why.**
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kailab.errors import KailabError
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


def run_lesson(name: str, ask: Callable[[], str]) -> bool:
    """The walk-through: concept, prediction (``ask``), the run on the lab, the result and why; True if KAI did what it teaches
    (or the lesson does not apply to this cluster)."""
    from rich.markdown import Markdown
    from rich.panel import Panel
    from rich.text import Text

    from kailab import evidence, lab, render
    from kailab.paths import lab_home
    from kailab.progress import Progress
    from kailab.scenarios.engine import Engine
    from kailab.scenarios.loader import load_scenario
    from kailab.status import all_pods
    from kailab.watch import current_frame

    if name not in lesson_names():
        raise KailabError(f"No lesson named {name!r}.", hint=f"Lessons: {', '.join(lesson_names())}.")
    les, scenario = load_lesson(name), lab.for_this_lab(load_scenario(EXERCISES / f"{name}.yaml"))
    kube = lab.connect()  # before asking for a prediction: no lab, no lesson
    evidence.check_recordable(lab_home())  # nor a lesson whose verdict could not be kept
    engine = Engine(lab.live_cluster(kube), Progress())
    engine.refuse_foreign([scenario])  # nor a lesson that would change another's queue
    out = render.stdout

    def panel(body, title: str) -> None:
        out.print(Panel(body, title=Text(title), title_align="left"), soft_wrap=False)

    expected = les.sections.get("What you should see", "")
    panel(les.sections.get("Concept", ""), les.title)
    panel(Markdown(les.sections.get("Predict", "")), "Predict")
    prediction = ask()
    verdict = engine.run(scenario)
    out.print(current_frame(kube, all_pods(kube), lab.fair_shares()))  # queues, and who holds each GPU
    out.print(render.verdict_table(verdict))
    panel(f"You predicted: {prediction}\nThe lesson expects: {expected}\n"
          f"KAI did: {_what_kai_did(verdict)}",
          "Prediction and result")
    panel(les.sections.get("Why", ""), "Why")
    record = verdict.to_record()
    record["lesson"] = {"prediction": prediction, "expected": expected, "passed": verdict.passed}
    evidence.record_verdict(lab_home(), record)
    out.print("Recorded for your evidence: kailab evidence")
    return verdict.ok


def _what_kai_did(verdict) -> str:
    if verdict.passed:
        return "what the lesson expects"
    if verdict.not_applicable:
        return f"nothing — the lesson is not applicable {verdict.not_applicable}"
    return "something else — see the FAIL rows"
