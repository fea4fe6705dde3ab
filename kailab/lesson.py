"""``kailab lesson``: one exercise as a classroom walk-through — concept, predictions, run, result, why.

The words come from the exercise's lesson file (``exercises/NAME.md``), whose paragraphs start
with **Concept.**, **Predict.**, **Run.**, **What you should see.** and **Why.**, and may end with
**What a fake fleet cannot show.** The graded questions are the scenario's ``predictions:``
(kailab/predictions.py grades them); the one-line summary is the exercise's row in exercises/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kailab.paths import EXERCISES

SECTIONS = ("Concept", "Predict", "Run", "What you should see", "Why")  # every lesson has them
CLOSING = "What a fake fleet cannot show"  # where it applies: what KWOK's fake GPUs cannot teach

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
    # The workloads people run under KAI, with their real operators (issue 39)
    "ray-gang",
    "ray-sharing",
    "ray-autoscale",
    "pytorchjob",
    "jobset-lws",
    "not-a-gang",
    # KAI's time-based fair share (issue 26): a real Prometheus holds the usage
    "time-fairshare",
    "baseline",
)


@dataclass
class Lesson:
    name: str
    title: str
    sections: dict[str, str]
    summary: str = ""  # the exercise's row in exercises/README.md, if it has one

    @property
    def one_line(self) -> str:
        """The lesson in a line, as plain text: its exercises/README.md row, else its concept's first sentence."""
        if self.summary:
            return self.summary
        concept = self.sections.get("Concept", "")
        first = re.split(r"(?<=[.!?])\s+(?=[A-Z])", concept, maxsplit=1)[0].rstrip(".") + "." if concept else ""
        return _plain(first)


def _plain(text: str) -> str:
    return text.replace("*", "").replace("`", "")


def summaries(root: Path = EXERCISES) -> dict[str, str]:
    """Exercise → what it shows, in one line: the table of exercises/README.md, as plain text."""
    readme = root / "README.md"
    if not readme.exists():
        return {}
    rows = re.findall(r"^\| \[([a-z0-9-]+)\]\(\1\.md\) \| (.+?) \|$", readme.read_text(), re.MULTILINE)
    return {name: _sentence(_plain(text.strip())) for name, text in rows}


def _sentence(text: str) -> str:
    """A table cell as a line that reads whole: it ends with a full stop."""
    return text if text.endswith((".", "!", "?")) else text + "."


def load_lesson(name: str, root: Path = EXERCISES) -> Lesson:
    text = (root / f"{name}.md").read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    pattern = r"\*\*(" + "|".join(map(re.escape, (*SECTIONS, CLOSING))) + r")\.\*\*"
    parts = re.split(pattern, text)
    sections = {
        parts[i]: " ".join(parts[i + 1].split()) if parts[i] != "Predict" else parts[i + 1].strip()
        for i in range(1, len(parts) - 1, 2)
    }
    return Lesson(name, title, sections, summaries(root).get(name, ""))


def variations(name: str, root: Path = EXERCISES) -> list[Path]:
    """Lesson ``name``'s variations: scenarios in exercises/variations/ that run one of its "what if" questions
    (their ``lesson:`` is exercises/NAME.md), each with a golden recording and a fleet test of its own, as a lesson
    has. ``kailab demo VARIATION`` runs one; the lesson's text may state what they show."""
    import yaml

    return [
        path
        for path in sorted((root / "variations").glob("*.yaml"))
        if (yaml.safe_load(path.read_text()) or {}).get("lesson") == f"exercises/{name}.md"
    ]


def variation_names(root: Path = EXERCISES) -> list[str]:
    """Every variation's name (its file's), in lesson order."""
    return [p.stem for name in lesson_names(root) for p in variations(name, root)]


def scenario_file(name: str, root: Path = EXERCISES) -> Path:
    """The scenario of an exercise (exercises/NAME.yaml) or of a variation (exercises/variations/NAME.yaml)."""
    own = root / f"{name}.yaml"
    return own if own.exists() else root / "variations" / f"{name}.yaml"


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
    session,
    predict: Callable[[], tuple[dict, str]],
    frame: Callable[[], object],
) -> int:
    """The walk-through of ``les``: concept, the scenario's graded questions and a free-text prediction
    (``predict`` gives both: answers by key, and the text), the ``scenario`` run in the lab's ``session``
    (kailab/session.py), what the cluster looks like then (``frame``), the result, the predictions graded against what
    KAI did, and why; kept by the session (evidence; a class's learner: in the cluster too). Its exit status
    (checks.Verdict.exit_code): 0 if KAI did what the lesson teaches (or the lesson does not apply to this cluster),
    1 if not, 3 if the host was too busy to tell. ``kailab lesson`` (kailab/commands/lessons.py) binds it to a lab."""
    from rich.markdown import Markdown
    from rich.panel import Panel
    from rich.text import Text

    from kailab import render
    from kailab.applied import kai_lines
    from kailab.predictions import graded, how_to_answer, tally

    out = render.stdout

    def panel(body, title: str) -> None:
        out.print(Panel(body, title=Text(title), title_align="left"), soft_wrap=False)

    expected = les.sections.get("What you should see", "")
    panel(les.sections.get("Concept", ""), les.title)
    out.print(render.applied_table(kai_lines(scenario)))
    panel(Markdown(les.sections.get("Predict", "")), "Predict")
    if scenario.predictions:
        panel(
            Text("\n").join(
                Text.assemble((p.key, "bold"), f"  {p.ask} ({how_to_answer(p)})") for p in scenario.predictions
            ),
            f"Graded predictions (kailab lesson {les.name} --predict KEY=VALUE answers one without a prompt)",
        )
    given, prediction = predict()
    verdict = session.play(scenario)
    grades = graded(scenario.predictions, given, verdict.answers)
    out.print(frame())  # queues, and who holds each GPU
    out.print(render.verdict_table(verdict))
    if grades:
        out.print(render.predictions_table(grades))
    panel(
        f"You predicted: {prediction}\nThe lesson expects: {expected}\nKAI did: {_what_kai_did(verdict)}",
        "Prediction and result",
    )
    panel(les.sections.get("Why", ""), "Why")
    if les.sections.get(CLOSING):
        panel(les.sections[CLOSING], CLOSING)
    marks = [g.to_dict() for g in grades]
    lesson = {
        "prediction": prediction,
        "expected": expected,
        "passed": verdict.passed,
        "predictions": marks,
        "right": tally(marks),
    }
    session.keep(verdict, lesson=lesson, prediction=prediction, graded=marks)
    out.print("Recorded for your evidence: kailab evidence")
    return verdict.exit_code


def _what_kai_did(verdict) -> str:
    if verdict.passed:
        return "what the lesson expects"
    if verdict.undecided:
        return "what could not be told: the host was too busy (see the UNDECIDED rows)"
    if verdict.not_applicable:
        return f"nothing — the lesson is not applicable {verdict.not_applicable}"
    return "something else — see the FAIL rows"


DEMO_ONLY_HINT = "Your instructor shows it on the projector: kailab class demo {name} --learner NAME, on their machine."


def demo_only(lab, scenario) -> str:
    """For a class's learner, why a lesson is the instructor's demo and not theirs to run (what their slice cannot
    do: time-fairshare turns on KAI's usage database, which only the instructor's lab runs); "" where it runs. Said
    before anything is asked or applied: it is no failure of theirs, and no verdict is kept."""
    if lab.learner is None:
        return ""
    from kailab.checks import unable

    return unable(scenario.needs, lab.cluster(lab.kube).abilities())
