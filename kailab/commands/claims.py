"""``kailab claims``: published claims about KAI, listed with where they are said; checked on the real KAI by name."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.text import Text

from kailab import render
from kailab.commands.options import JsonOpt, QuietOpt
from kailab.errors import KailabError
from kailab.versions import KAI_VERSION


def claims(
    name: str | None = typer.Argument(None, help="A claim to check on the lab, or all; none lists them."),
    as_json: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Published claims about KAI: none lists them; NAME (or all) checks it on the lab's KAI and gives its verdict."""
    from kailab import claims as table

    found = table.load()
    if name is None:
        if as_json:
            render.print_json([c.model_dump(by_alias=True) for c in found])
            return
        render.named_lines([(c.name, f"{c.verdict:<6}{c.claim}") for c in found], max(len(c.name) for c in found) + 2)
        render.stdout.print("\nCheck one on your lab: kailab claims NAME (or all)", markup=False, highlight=False)
        return
    chosen = found if name == "all" else [c for c in found if c.name == name]
    if not chosen:
        raise KailabError(f"No claim named {name!r}.", hint=f"Choose one of: {', '.join(c.name for c in found)}, all.")
    _check(chosen, as_json, quiet)


def _check(chosen, as_json: bool, quiet: bool) -> None:
    """Run the claims' scenario on the lab, then each claim's verdict; exit 1 when one could not be shown."""
    from kailab import claims as table
    from kailab.lab import Lab
    from kailab.progress import Progress
    from kailab.scenarios.loader import load_scenario

    lab = Lab.open()
    (verdict,) = lab.session(Progress(quiet or as_json)).run_all(
        [lab.scenario(load_scenario(table.SCENARIO))], titles=not (quiet or as_json)
    )
    verdict = table.with_schema_checks(chosen, verdict, lab.kube)
    shown = [table.shown(c, verdict) for c in chosen]
    if as_json:
        render.print_json(
            [
                {**s.claim.model_dump(by_alias=True), "shown": s.verdict, "checks": [asdict(c) for c in s.checks]}
                for s in shown
            ]
        )
    else:
        for s in shown:
            _say(s)
    if any(not s.verdict for s in shown):
        raise typer.Exit(1)


def _say(s) -> None:
    c = s.claim
    out = render.stdout
    out.print(Text.assemble(("Claim: ", "bold"), c.claim))
    out.print(Text(f"  Said: {c.said} ({c.where})"))
    if s.verdict:
        style = "green" if s.verdict == "TRUE" else "red"
        out.print(Text.assemble("  ", (f"{s.verdict} on KAI {KAI_VERSION}", f"bold {style}"), f": {c.why}"))
        out.print(
            Text(f"  Rests on: {c.rests_on}; shown by: " + "; ".join(f"{k.title} = {k.observed}" for k in s.checks))
        )
    else:
        failed = [f"{k.title}: expected {k.expected}, observed {k.observed}" for k in s.checks if not k.passed]
        out.print(
            Text.assemble(
                "  ",
                ("Could not show it on this lab", "bold yellow"),
                ": " + ("; ".join(failed) or "its checks did not run"),
            )
        )
