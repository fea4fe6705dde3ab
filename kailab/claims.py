"""Published claims about KAI, each with its verdict on KAI v0.17.0 and the checks on the real scheduler that show it.

The claims are data (claims/claims.yaml); one scenario checks them all in one run (claims/scenario.yaml). A claim's
verdict is shown only when every check it names passed on the lab; otherwise kailab says it could not show it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from kailab.checks import Check, Verdict
from kailab.paths import CLAIMS

TABLE = CLAIMS / "claims.yaml"
SCENARIO = CLAIMS / "scenario.yaml"


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


def load(path: Path = TABLE) -> list[Claim]:
    """Every claim of the table, in its order."""
    return [Claim(**c) for c in yaml.safe_load(path.read_text())["claims"]]


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
