"""Each runbook quotes, word for word, the reasons its scenario checks against the real KAI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kailab.paths import RUNBOOKS
from kailab.scenarios.loader import load_scenario

RUNBOOK_OF = {
    "pending-forever.yaml": "pod-pending-forever.md",
    "operator-queue-on-template.yaml": "operator-queue-on-template.md",
    "operator-group-too-big.yaml": "operator-group-too-big.md",
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
    "completing-gang.yaml": "completing-gang-evicted.md",
    "gpu-memory-label.yaml": "gpu-memory-label.md",
    "non-preemptible-capped.yaml": "non-preemptible-capped.md",
    "pod-affinity.yaml": "pod-affinity.md",
    "unbound-volume.yaml": "unbound-volume.md",
    "pods-refused.yaml": "pods-refused.md",
    "topology-unmet.yaml": "topology-unmet.md",
    "kai-component-down.yaml": "kai-component-down.md",
    "queue-annotation.yaml": "queue-annotation.md",
    "pdb-not-honoured.yaml": "pdb-not-honoured.md",
    "partition-parent.yaml": "partition-parent.md",
    "quotas-past-fleet.yaml": "quotas-past-fleet.md",
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
    from kailab import explain, explain_operated, explain_words

    text = "".join(Path(m.__file__).read_text() for m in (explain, explain_words, explain_operated))
    named = set(re.findall(r"runbooks/([\w-]+\.md)", text))
    assert len(named) >= 12, named  # the search above finds them at all
    for md in named:
        assert (RUNBOOKS / md).is_file(), f"kailab/explain*.py names runbooks/{md}, which does not exist"
    triage = (RUNBOOKS / "why-pending.md").read_text()
    for md in RUNBOOKS.glob("*.md"):
        if md.name not in ("README.md", "why-pending.md"):
            assert f"]({md.name})" in triage, f"why-pending.md does not lead to {md.name}"


def test_each_runbook_cites_the_kai_source_it_rests_on():
    for md in RUNBOOKS.glob("*.md"):
        if md.name not in ("README.md", "why-pending.md"):
            assert re.search(r"`pkg/[\w/.-]+\.go`", md.read_text()), f"{md.name} cites no KAI source file"


# The runbooks of the causes kailab did not cover before (issue 40): each shows a run on the lab, and in it what
# `kailab explain` printed — naming that very runbook, so the way from the symptom to the page is shown working.
SHOWN_BY_EXPLAIN = (
    "completing-gang-evicted",
    "gpu-memory-label",
    "non-preemptible-capped",
    "pod-affinity",
    "unbound-volume",
    "pods-refused",
    "topology-unmet",
    "time-based-fairshare",
    "kai-component-down",
    "queue-annotation",
    "pdb-not-honoured",
    "partition-parent",
    "quotas-past-fleet",
)


@pytest.mark.parametrize("name", SHOWN_BY_EXPLAIN)
def test_a_runbook_shows_kailab_explain_naming_it(name):
    text = (RUNBOOKS / f"{name}.md").read_text()
    assert "<!-- OUT:" not in text, f"{name}.md still waits for its run's output"
    assert "$ kailab explain" in text, f"{name}.md shows no kailab explain"
    assert f"read: runbooks/{name}.md" in text, f"{name}.md does not show kailab explain naming it"


def test_every_runbook_says_how_to_reproduce_it_or_why_it_cannot_be():
    for md in RUNBOOKS.glob("*.md"):
        if md.name in ("README.md", "why-pending.md"):
            continue
        line = next((ln for ln in md.read_text().splitlines() if ln.startswith("Reproduce:")), "")
        assert line, f"{md.name} has no Reproduce: line"
        assert "`kailab " in line or "**not on the local runtime**" in line, (md.name, line)
