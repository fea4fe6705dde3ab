"""Each runbook quotes, word for word, the reasons its scenario checks against the real KAI."""

from __future__ import annotations

import re
from pathlib import Path

from kailab.paths import RUNBOOKS
from kailab.scenarios.loader import load_scenario

RUNBOOK_OF = {
    "pending-forever.yaml": "pod-pending-forever.md",
    "borrow-blocked.yaml": "borrowing-not-happening.md",
    "gang-stuck.yaml": "gang-not-binding.md",
    "reclaim-blocked.yaml": "reclaim-not-happening.md",
    "old-queue-label.yaml": "old-queue-label.md",
    "node-pool-unserved.yaml": "node-pool-unserved.md",
    "node-constraints.yaml": "node-constraints.md",
    "scheduling-gate.yaml": "scheduling-gate.md",
    "too-big.yaml": "too-big.md",
    "misspelt-priority-class.yaml": "misspelt-priority-class.md",
    "stale-gang.yaml": "stale-gang.md",
    "preemption-policy-never.yaml": "preemption-policy-never.md",
    "gpu-sharing-reservation.yaml": "gpu-sharing-reservation.md",
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


def test_every_runbook_explain_names_exists_and_the_triage_leads_to_every_runbook():
    from kailab import explain

    named = set(re.findall(r"runbooks/([\w-]+\.md)", Path(explain.__file__).read_text()))
    assert len(named) >= 12, named  # the search above finds them at all
    for md in named:
        assert (RUNBOOKS / md).is_file(), f"kailab/explain.py names runbooks/{md}, which does not exist"
    triage = (RUNBOOKS / "why-pending.md").read_text()
    for md in RUNBOOKS.glob("*.md"):
        if md.name not in ("README.md", "why-pending.md"):
            assert f"]({md.name})" in triage, f"why-pending.md does not lead to {md.name}"


def test_each_runbook_cites_the_kai_source_it_rests_on():
    for md in RUNBOOKS.glob("*.md"):
        if md.name not in ("README.md", "why-pending.md"):
            assert re.search(r"`pkg/[\w/.-]+\.go`", md.read_text()), f"{md.name} cites no KAI source file"
