"""Published claims about KAI, each with its verdict on KAI v0.17.0 and the checks on the real scheduler that show it.

The claims are data (claims/claims.yaml); one scenario checks them all in one run (claims/scenario.yaml), and a claim
about a field KAI does not have is checked on the lab's own copy of KAI's CRD (``schema``). A claim's verdict is shown
only when every check it names passed on the lab; otherwise kailab says it could not show it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from kailab.checks import Check, Verdict
from kailab.paths import CLAIMS

if TYPE_CHECKING:
    from kailab.kube import Kube

TABLE = CLAIMS / "claims.yaml"
SCENARIO = CLAIMS / "scenario.yaml"


class SchemaCheck(BaseModel):
    """A check on the lab's installed CRD: the fields an object of it may have at ``path``, exactly ``fields``.

    ``path`` is dotted through the storage version's schema; ``[]`` after a name steps into a list's items
    (``spec.levels[]``: the fields of one Topology level)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    crd: str
    path: str = Field(pattern=r"^[A-Za-z]\w*(\[\])?(\.[A-Za-z]\w*(\[\])?)*$")
    fields: list[str] = Field(min_length=1)


class Claim(BaseModel):
    """One published claim: what is said and where, KAI's verdict, the source line that decides it, its checks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    claim: str
    said: str
    where: str
    verdict: Literal["TRUE", "FALSE"]
    why: str
    rests_on: str = Field(pattern=r"^(pkg|cmd)/[\w/.-]+\.go:\d+$")
    checks: list[str] = Field(min_length=1)
    schema_: SchemaCheck | None = Field(None, alias="schema")


def load(path: Path = TABLE) -> list[Claim]:
    """Every claim of the table, in its order."""
    return [Claim(**c) for c in yaml.safe_load(path.read_text())["claims"]]


def fields_at(crd: dict, path: str) -> list[str]:
    """The property names a CRD's storage version allows at ``path`` (KeyError when the path is not in it)."""
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    node = version["schema"]["openAPIV3Schema"]
    for step in path.split("."):
        name, items = step.removesuffix("[]"), step.endswith("[]")
        node = node["properties"][name]
        if items:
            node = node["items"]
    return sorted(node.get("properties") or {})


def schema_check(check: SchemaCheck, kube: Kube) -> Check:
    """What the lab's copy of the CRD allows at the check's path, against the fields the claim's verdict rests on."""
    from kubernetes.client.exceptions import ApiException

    from kailab.api_errors import api_error_words, no_answer

    expected = ", ".join(sorted(check.fields))
    try:
        crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", check.crd)
    except ApiException as e:  # a learner without the right to read CRDs: said as the observation
        return Check(check.title, expected, f"could not read the CRD {check.crd}: {api_error_words(e)}", False)
    except Exception as e:  # noqa: BLE001 (no answer: said as the observation)
        return Check(check.title, expected, f"could not read the CRD {check.crd}: the cluster {no_answer(e)}", False)
    if crd is None:
        return Check(check.title, expected, f"no CRD {check.crd} on this cluster", False)
    try:
        found = fields_at(crd, check.path)
    except (KeyError, StopIteration):
        return Check(check.title, expected, f"{check.crd} has no {check.path}", False)
    return Check(check.title, expected, ", ".join(found) or "no fields", found == sorted(check.fields))


def with_schema_checks(claims: list[Claim], verdict: Verdict, kube: Kube) -> Verdict:
    """The run's verdict with the CRD checks of these claims added (each CRD check once)."""
    checks = {c.schema_.title: c.schema_ for c in claims if c.schema_ is not None}
    return replace(verdict, checks=[*verdict.checks, *(schema_check(s, kube) for s in checks.values())])


@dataclass(frozen=True)
class Shown:
    """A claim after a run: its verdict when every check it names passed ("" when not shown), and those checks."""

    claim: Claim
    verdict: str
    checks: tuple[Check, ...]


def checks_of(claim: Claim, verdict: Verdict) -> tuple[Check, ...]:
    """The run's checks a claim names (a check's title, or its title with the measure after it)."""
    return tuple(c for c in verdict.checks if any(c.title == t or c.title.startswith(f"{t} (") for t in claim.checks))


def shown(claim: Claim, verdict: Verdict) -> Shown:
    """What the run shows of a claim: its verdict only if each named check is there and passed."""
    found = checks_of(claim, verdict)
    named = {t for t in claim.checks if any(c.title == t or c.title.startswith(f"{t} (") for c in found)}
    ok = named == set(claim.checks) and all(c.passed for c in found) and not verdict.error
    return Shown(claim, claim.verdict if ok else "", found)
