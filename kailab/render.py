"""Formatters: verdicts, status, queues, explanations, bench runs and findings as rich tables or JSON.

Nothing here reads the cluster: each command hands over what its one call returned.

Text from users and clusters (titles, notes, names, messages) is data: :data:`stdout` has Rich markup off (colour
is given as a style or a :class:`~rich.text.Text`, never as ``[red]`` in a string) and takes every control and escape
sequence out of what it prints (:class:`kailab.termtext.PlainConsole`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from kailab.labels import DEFAULT_SCHEDULER_NAME, KAI_SCHEDULER_NAME
from kailab.termtext import PlainConsole

if TYPE_CHECKING:
    from kailab.checks import Verdict

stdout = PlainConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 140)


def verdict_table(v: Verdict) -> Table:
    from kailab.checks import UNDECIDED

    table = Table(title=f"{v.title} — {v.outcome}", title_justify="left", show_lines=False)
    table.add_column("expectation")
    table.add_column("expected", justify="right")
    table.add_column("observed", justify="right")
    table.add_column("verdict")
    marks = {"PASS": "green", "FAIL": "red", UNDECIDED: "yellow"}
    for c in v.checks:
        table.add_row(c.title, c.expected, c.observed, Text(c.outcome, style=marks[c.outcome]))
        if c.undecided:
            table.add_row(Text(f"  ↳ {UNDECIDED}: {c.undecided}", style="yellow"), "", "", "")
        for line in c.detail:
            table.add_row(Text(f"  ↳ {line}", style="dim"), "", "", "")
    return table


def predictions_table(grades) -> Table:
    """The lesson's graded predictions: the question, the learner's answer, KAI's, right or wrong."""
    table = Table(title="Your predictions against what KAI did", title_justify="left")
    table.add_column("prediction")
    table.add_column("you said", justify="right")
    table.add_column("KAI did", justify="right")
    table.add_column("")
    styles = {True: "green", False: "red", None: "dim"}
    for g in grades:
        table.add_row(
            Text(f"{g.key}: {g.ask}"),
            Text(g.given or "–"),
            Text(g.answer or "not measured (the run ended before it)"),
            Text(g.mark, style=styles[g.right]),
        )
    return table


def print_json(data: Any) -> None:
    """A command's result as JSON on stdout (indented, as every ``--json`` prints it)."""
    print(json.dumps(data, indent=2))


def print_verdicts(verdicts: list[Verdict], as_json: bool) -> None:
    from kailab.checks import UNDECIDED, tally

    if as_json:
        print_json({"passed": all(v.ok for v in verdicts), "verdicts": [v.to_dict() for v in verdicts]})
        return
    for v in verdicts:
        if v.not_applicable:
            stdout.print(Text.assemble(f"{v.title} — ", ("not applicable", "yellow"), f" {v.not_applicable}"))
            continue
        if v.load and len(verdicts) == 1:
            stdout.print(Text(f"At its start: {v.load}", style="yellow"))
        stdout.print(verdict_table(v))
        if v.error:
            stdout.print(Text.assemble(("Error:", "red"), f" {v.error}"))
        stdout.print(f"Verify: {v.verify}")
        stdout.print(f"{len(v.checks)} checks in {v.seconds:.1f}s\n", style="dim")
    if len(verdicts) > 1:
        counts = tally(verdicts)
        skipped = counts.get("NOT APPLICABLE", 0)
        undecided = counts.get(UNDECIDED, 0)
        stdout.print(
            f"{counts.get('PASS', 0)} of {len(verdicts) - skipped} exercises passed"
            + (f", {counts['FAIL']} failed" if counts.get("FAIL") else "")
            + (f", {undecided} undecided" if undecided else "")
            + (f" ({skipped} not applicable here)" if skipped else "")
            + ": "
            + ", ".join(f"{v.scenario} {v.outcome}" for v in verdicts)
        )
        if busy := [v.scenario for v in verdicts if v.load]:
            stdout.print(
                Text(
                    f"{len(busy)} started on a busy lab ({', '.join(busy)}): {verdicts_load(verdicts)}", style="yellow"
                )
            )
    if undecided_words(verdicts):
        stdout.print(Text(undecided_words(verdicts), style="yellow"))


def verdicts_load(verdicts: list[Verdict]) -> str:
    """What the lab's pace was at the start of the busiest-sounding lesson (the last one said)."""
    return next(v.load for v in reversed(verdicts) if v.load)


def undecided_words(verdicts: list[Verdict]) -> str:
    """What to do about UNDECIDED verdicts ("" when there are none): run fewer at once, or on a quieter host."""
    from kailab.checks import UNDECIDED

    n = sum(v.outcome == UNDECIDED for v in verdicts)
    if not n:
        return ""
    return (
        f"{n} {'verdict was' if n == 1 else 'verdicts were'} UNDECIDED: the host was too busy to tell (each row says "
        "what was seen, with times). KAI did not fail; run fewer lessons or learners at once (kailab demo all "
        "--parallel N, a smaller class), or again on a quieter machine."
    )


def applied_table(lines) -> Table:
    """``applied.kai_lines``: what a scenario applies, only the lines KAI reads. Cells are data, never markup."""
    from rich.text import Text

    table = Table(
        title="What kailab applies — the lines KAI reads",
        title_justify="left",
        caption="Every queue also gets cpu and memory {quota: -1, limit: -1} unless shown: "
        "KAI reads an unset limit as 0.",
        caption_justify="left",
    )
    for col in ("object", "where", "what"):
        table.add_column(col, overflow="fold")
    for line in lines:
        table.add_row(Text(line.obj), Text(line.where), Text(line.what))
    return table


def status_tables(status: dict) -> list[Table | Text]:
    comps = Table(title=f"Lab ({status['runtime']} runtime)", title_justify="left")
    comps.add_column("component")
    comps.add_column("health")
    comps.add_column("detail")
    for c in status["components"]:
        comps.add_row(
            c["name"], Text("healthy", style="green") if c["healthy"] else Text("down", style="red"), c["detail"]
        )
    from kailab.status import MAX_NODE_ROWS, pool_rows

    if len(status["nodes"]) > MAX_NODE_ROWS:
        nodes = Table(title=f"Nodes: {len(status['nodes'])}, by pool", title_justify="left")
        for col in ("pool", "nodes", "GPUs", "used", "free"):
            nodes.add_column(col, justify="left" if col == "pool" else "right")
        for p in pool_rows(status["nodes"]):
            nodes.add_row(p["pool"], str(p["nodes"]), num(p["gpus"]), num(p["used"]), num(p["free"]))
    else:
        nodes = Table(title="Nodes", title_justify="left")
        for col in ("node", "pool", "GPUs", "used", "free"):
            nodes.add_column(col, justify="right" if col in ("GPUs", "used", "free") else "left")
        for n in status["nodes"]:
            nodes.add_row(n["name"], n["pool"], num(n["gpus"]), num(n["used"]), num(n["free"]))
    tables: list[Table | Text] = [comps, nodes]
    if status.get("queues") is not None:
        table = queue_table(status["queues"])
        if status.get("warnings"):
            table.caption = Text("\n".join(f"⚠ {w}" for w in status["warnings"]), style="yellow")
            table.caption_justify = "left"
        tables.append(table)
    if load := status.get("load"):
        tables.append(Text(load["busy"], style="yellow") if load["busy"] else Text(f"Load: {load['said']}."))
    return tables


QUEUE_COLUMNS = (
    "queue",
    "parent",
    "priority",
    "GPU quota",
    "limit",
    "weight",
    "fair share",
    "allocated",
    "pending pods",
)


def queue_table(queues: list[dict], style_of: Callable[[str], str] = lambda name: "") -> Table:
    """Queues with quota, limit, weight, KAI's fair share, allocated and pending; ``style_of`` colours a queue's name."""
    t = Table(title="Queues", title_justify="left")
    for col in QUEUE_COLUMNS:
        t.add_column(col, justify="left" if col in ("queue", "parent") else "right")
    for q in queues:
        t.add_row(
            Text(q["name"], style=style_of(q["name"])),
            q["parent"] or "-",
            str(q["priority"]),
            num(q["quota"]),
            num(q["limit"]),
            num(q["weight"]),
            num(q.get("fair_share")),
            num(q["allocated"]),
            str(q["pending"]),
        )
    return t


def num(x) -> str:
    """A quota, limit, weight or count as a learner reads it: "-" unset, "∞" unlimited (-1), 8 not 8.0."""
    if x is None:
        return "-"
    if x == -1:
        return "∞"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def bench_table(runs) -> Table:
    """``kailab bench``'s result: one row per scheduler, each stage as watched, and KAI's time against kube-scheduler's."""
    from kailab.bench import STAGES

    t = Table(title="kailab bench", title_justify="left")
    for col in ("scheduler", "pods", "all bound", "all Running", "pods/s", *STAGES[1:], "peak memory"):
        t.add_column(col, justify="left" if col == "scheduler" else "right")
    for r in runs:
        t.add_row(
            r.scheduler,
            str(r.pods),
            f"{r.to_bound:.1f}s",
            f"{r.to_running:.1f}s" if r.finished else "not all",
            f"{r.pods_per_second:.1f}",
            *(f"{r.watched[k]:.1f}s" if k in r.watched else "-" for k in STAGES[1:]),
            f"{r.peak_memory_mib:,.0f} MiB" if r.peak_memory_mib is not None else "-",
        )
    caption = (
        "Stage columns: seconds after the Job was submitted until the last pod got there, as the watches saw it "
        "(grouped: KAI's pod-grouper put the pod in its PodGroup; bind request: KAI's scheduler decided where it "
        "goes). Peak memory: every lab process together."
    )
    if (times := ratio(runs)) is not None:
        caption = f"KAI took {times:.1f}× as long as kube-scheduler to bind every pod. " + caption
    t.caption = caption
    return t


def findings_table(findings: list) -> Table:
    """What ``kailab up --runtime existing`` found before adopting a cluster: one row per check."""
    marks = {"ok": Text("✓", style="green"), "warning": Text("!", style="yellow"), "problem": Text("✗", style="red")}
    table = Table(title="The cluster, before kailab adopts it", title_justify="left")
    for col in ("", "check", "found", "what to do"):
        table.add_column(col)
    for f in findings:
        table.add_row(marks.get(f.status, f.status), f.check, f.found, f.todo)
    return table


def ratio(runs) -> float | None:
    """KAI's time to all bound as a multiple of kube-scheduler's; None unless both ran."""
    by = {r.scheduler: r for r in runs}
    kai, default = by.get(KAI_SCHEDULER_NAME), by.get(DEFAULT_SCHEDULER_NAME)
    return kai.to_bound / default.to_bound if kai and default and default.to_bound else None


def bench_json(runs, nodes: int, gpus_per_node: int) -> dict:
    """``kailab bench --json``."""
    return {
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        "runs": [r.to_dict() for r in runs],
        "kai_vs_default": ratio(runs),
    }


def explanations(found: list) -> None:
    """``kailab explain``: each pod's state and summary, what the scheduler said, the details, the runbook."""
    for e in found:
        stdout.print(Text.assemble((e.pod, "bold"), f" — {e.state}: {e.summary}"))
        if e.reported:
            stdout.print(f"  the scheduler says: “{e.reported}”")
        for d in e.details:
            stdout.print(f"  {d}")
        if e.runbook:
            stdout.print(f"  read: {e.runbook}")


def doctor_table(findings: list) -> Table:
    """``kailab doctor``: each tool, what was found, which runtime needs it, how to fix it."""
    table = Table(title="kailab doctor", title_justify="left")
    for col in ("", "tool", "found", "needed for", "how to fix"):
        table.add_column(col)
    for f in findings:
        table.add_row(
            Text("✓", style="green") if f.ok else Text("✗", style="red"), f.tool, f.found, f.needed_for, f.fix
        )
    return table


def named_lines(rows: list[tuple[str, str]], width: int) -> None:
    """A list of names (bold, padded to ``width``) each with its one line."""
    for name, line in rows:
        stdout.print(Text.assemble((f"{name:<{width}}", "bold"), line))
