"""``kailab claims`` (issue 40, item 3): each claim is whole (where it is said, its verdict, the line of KAI's source
that decides it), that line is in the pinned module, and the checks it names are expectations of claims/scenario.yaml.
Its run on the real KAI: tests/fleet/test_claims_on_kai.py."""

from __future__ import annotations

import pytest
from test_kai_strings import kai  # noqa: F401 (the pinned KAI module, fetched as kailab's build fetches it)

from kailab import claims
from kailab.checks import Check, Verdict
from kailab.scenarios.loader import load_scenario

CLAIMS = claims.load()


def test_the_claims_are_many_unique_and_both_true_and_false():
    names = [c.name for c in CLAIMS]
    assert len(names) == len(set(names)) and len(names) >= 8
    assert {c.verdict for c in CLAIMS} == {"TRUE", "FALSE"}


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.name)
def test_each_claims_source_line_is_code_in_the_pinned_kai(kai, claim):  # noqa: F811
    path, line = claim.rests_on.rsplit(":", 1)
    lines = (kai / path).read_text().splitlines()
    assert 0 < int(line) <= len(lines), claim.rests_on
    code = lines[int(line) - 1].strip()
    assert code and not code.startswith("//"), f"{claim.rests_on} is not a line of code: {code!r}"


def test_each_check_a_claim_names_is_an_expectation_of_the_scenario():
    titles = {e.title for e in load_scenario(claims.SCENARIO).expectations}
    for c in CLAIMS:
        assert set(c.checks) <= titles, (c.name, set(c.checks) - titles)


def test_a_claim_is_shown_only_when_every_check_it_names_passed():
    c = next(x for x in CLAIMS if len(x.checks) == 2)
    first, second = c.checks
    ok = Verdict("claims", "t", checks=[Check(first, "0", "0", True), Check(f"{second} (running)", "1", "1", True)])
    assert claims.shown(c, ok).verdict == c.verdict and len(claims.shown(c, ok).checks) == 2
    one_failed = Verdict("claims", "t", checks=[Check(first, "0", "1", False), Check(second, "1", "1", True)])
    assert claims.shown(c, one_failed).verdict == ""
    one_missing = Verdict("claims", "t", checks=[Check(first, "0", "0", True)])
    assert claims.shown(c, one_missing).verdict == ""


def test_kailab_claims_lists_every_claim_with_its_verdict(tmp_path):
    from cli_run import kailab

    out = kailab("claims", home=tmp_path).stdout
    for c in CLAIMS:
        assert c.name in out and c.claim[:40] in out
    assert "FALSE " in out and "TRUE " in out
