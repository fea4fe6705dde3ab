"""Each runbook quotes, word for word, the reasons its scenario checks against the real KAI."""

from __future__ import annotations

import re

from kailab.paths import RUNBOOKS
from kailab.scenarios.loader import load_scenario

RUNBOOK_OF = {
    "pending-forever.yaml": "pod-pending-forever.md",
    "borrow-blocked.yaml": "borrowing-not-happening.md",
    "gang-stuck.yaml": "gang-not-binding.md",
    "reclaim-blocked.yaml": "reclaim-not-happening.md",
}


def test_every_runbook_scenario_loads_and_has_a_runbook():
    scenarios = sorted(p.name for p in (RUNBOOKS / "scenarios").glob("*.yaml"))
    assert scenarios == sorted(RUNBOOK_OF)
    for name, runbook in RUNBOOK_OF.items():
        text = (RUNBOOKS / runbook).read_text()
        assert f"runbooks/scenarios/{name}" in text
        load_scenario(RUNBOOKS / "scenarios" / name)


def test_runbooks_quote_the_reasons_their_scenarios_verify():
    for name, runbook in RUNBOOK_OF.items():
        text = " ".join((RUNBOOKS / runbook).read_text().split())
        s = load_scenario(RUNBOOKS / "scenarios" / name)
        reasons = [e.want for e in s.expectations if e.measure == "reason"]
        for reason in reasons:
            assert reason in text, f"{runbook} does not quote {reason!r}, which {name} checks against KAI"


def test_runbook_index_lists_every_runbook():
    index = (RUNBOOKS / "README.md").read_text()
    for md in RUNBOOKS.glob("*.md"):
        if md.name != "README.md":
            assert re.search(rf"\]\({re.escape(md.name)}\)", index), md.name
