"""One command's run of scenarios on its lab: checked before anything runs, played, every verdict kept.

:meth:`kailab.lab.Lab.session` makes one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kailab.errors import NotRunning
from kailab.progress import Progress, stderr

if TYPE_CHECKING:
    from kailab.checks import Verdict
    from kailab.lab import Lab
    from kailab.scenarios.model import Scenario


class Session:
    """One command's run of scenarios on a lab: the lab answers and the lab folder can keep each verdict (checked
    before anything runs), the engine refuses another's objects and nodes the fleet lacks before anything is
    applied, and every verdict is kept for ``kailab evidence`` (a lesson's, in the cluster too)."""

    def __init__(self, lab: Lab, progress: Progress, record: Path | None = None):
        from kailab import evidence

        self.lab = lab
        self.kube = lab.kube
        evidence.check_recordable(lab.home)  # before the run: a verdict is never lost for want of a place to keep it
        self.progress = progress
        self.engine = lab.engine(self.kube, progress, record=record)

    def refuse(self, scenarios: list[Scenario]) -> None:
        """Refuse, before anything is applied, another's queue or priority class of the same name, and a node the
        fleet does not have."""
        self.engine.refuse_foreign(scenarios)
        self.engine.refuse_unknown_nodes(scenarios)

    def play(self, scenario: Scenario) -> Verdict:
        """Run one scenario; the caller keeps its verdict (:meth:`keep`)."""
        return self.engine.run(scenario)

    def keep(self, verdict: Verdict, lesson: dict | None = None, prediction: str = "", graded: list | None = None):
        """Keep the verdict for ``kailab evidence`` (with a lesson's predictions); a lesson's, in its record in the
        cluster too (for the pages, and a learner's instructor)."""
        from kailab import evidence

        record = verdict.to_record()
        if lesson is not None:
            record["lesson"] = lesson
        evidence.record_verdict(self.lab.home, record)
        if lesson is not None:
            self.lab.keep(verdict, prediction, graded or [])

    def run(self, scenario: Scenario) -> Verdict:
        """Run one scenario and keep its verdict."""
        verdict = self.play(scenario)
        self.keep(verdict)
        return verdict

    def run_all(self, scenarios: list[Scenario], evidence: bool = False, titles: bool = True) -> list[Verdict]:
        """Refuse what another owns, then run each scenario and keep its verdict; ``evidence``: a snapshot before and
        after; ``titles``: a rule with each scenario's title on stderr."""
        from rich.text import Text

        self.refuse(scenarios)
        if evidence:
            self.lab.capture(self.progress, "before the exercise", allow_empty=True)
        verdicts = []
        for s in scenarios:
            if titles:
                stderr.rule(Text(f"{s.title} ({s.path})"))
            verdicts.append(self.run(s))
        if evidence:
            self.lab.capture(self.progress, "after the exercise")
        return verdicts

    def side_by_side(self, names: list[str], at_once: int) -> list[Verdict]:
        """The built-in exercises ``at_once`` at a time, each in a partition of its own (kailab/parallel.py); the
        lessons that run in the lab itself (without KAI, or in default-queue) after them. Every verdict kept."""
        from kailab.fleet import load_fleet
        from kailab.kube import Kube
        from kailab.parallel import SideBySide

        host = self.lab.capabilities.partitions
        if host is None:
            raise NotRunning("No lab is running.", hint="Start one: kailab up")
        kubeconfig, context = self.lab.kubeconfig(), self.lab.context()
        run = SideBySide(
            host, load_fleet(), lambda: Kube(kubeconfig, context), self.progress, at_once, own=self.lab.cluster
        )
        verdicts = run.run(names)
        for v in verdicts:
            self.keep(v)
        return verdicts
