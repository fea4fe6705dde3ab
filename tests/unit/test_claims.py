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


def test_each_check_a_claim_names_is_an_expectation_of_the_scenario_or_its_crd_check():
    titles = {e.title for e in load_scenario(claims.SCENARIO).expectations}
    for c in CLAIMS:
        own = {c.schema_.title} if c.schema_ else set()
        assert set(c.checks) <= titles | own, (c.name, set(c.checks) - titles - own)
        assert own <= set(c.checks), f"{c.name}: its CRD check is not among the checks its verdict rests on"


@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.schema_], ids=lambda c: c.name)
def test_each_crd_check_holds_on_the_pinned_kais_own_crd(kai, claim):  # noqa: F811
    """The lab installs KAI's CRDs from the pinned chart (runtimes/local_kai.py): the check holds there."""
    import yaml

    check = claim.schema_
    crds = [yaml.safe_load(p.read_text()) for p in (kai / "deployments/kai-scheduler/crds").glob("*.yaml")]
    crd = next(c for c in crds if c and c["metadata"]["name"] == check.crd)
    assert claims.fields_at(crd, check.path) == sorted(check.fields), claim.name


class _Kube:
    def __init__(self, crd):
        self.crd = crd

    def get(self, api_version, kind, name, namespace=None):
        assert (api_version, kind) == ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        return self.crd if self.crd and self.crd["metadata"]["name"] == name else None


def _crd(level_fields):
    level = {"type": "object", "properties": {f: {"type": "string"} for f in level_fields}}
    schema = {"properties": {"spec": {"properties": {"levels": {"type": "array", "items": level}}}}}
    return {
        "metadata": {"name": "topologies.kai.scheduler"},
        "spec": {"versions": [{"name": "v1alpha1", "storage": True, "schema": {"openAPIV3Schema": schema}}]},
    }


def test_a_crd_check_fails_on_a_field_more_or_less_and_on_a_missing_crd_or_path():
    check = next(c.schema_ for c in CLAIMS if c.schema_ and c.schema_.crd == "topologies.kai.scheduler")
    assert claims.schema_check(check, _Kube(_crd(["alias", "nodeLabel"]))).passed
    more = claims.schema_check(check, _Kube(_crd(["alias", "nodeLabel", "nvlinkDomain"])))
    assert not more.passed and "nvlinkDomain" in more.observed
    assert not claims.schema_check(check, _Kube(_crd(["nodeLabel"]))).passed
    gone = claims.schema_check(check, _Kube(None))
    assert not gone.passed and "no CRD topologies.kai.scheduler" in gone.observed
    no_path = _crd([])
    del no_path["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["levels"]
    assert "has no spec.levels[]" in claims.schema_check(check, _Kube(no_path)).observed


def test_a_claim_resting_on_a_crd_check_is_shown_only_with_it():
    c = next(x for x in CLAIMS if x.schema_)
    ran = Verdict("claims", "t", checks=[Check("something else", "1", "1", True)])
    assert claims.shown(c, ran).verdict == ""
    with_it = claims.with_schema_checks([c], ran, _Kube(_crd(c.schema_.fields)))
    assert claims.shown(c, with_it).verdict == c.verdict


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
