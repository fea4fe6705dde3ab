"""A verdict's checks against the golden ones (tests/golden/<lesson>/verdict.json), for a lesson run under a prefix
(a class's learner, a partition of ``demo all`` side by side)."""

from __future__ import annotations

ROW = ("title", "expected", "observed", "passed", "scope", "measure")
# Lessons whose counts are read at a moment that moves from run to run: time-fairshare's fair shares come from the
# usage KAI reads again every 5 s. Their rows are compared without the observed value (bound and verdict still are).
MOMENTARY = frozenset({"time-fairshare"})


def rows(verdict: dict, prefix: str = "") -> list[dict]:
    """The verdict's checks as the golden file has them; the partition's prefix taken off names (queues, nodes)."""
    out = []
    momentary = verdict.get("scenario") in MOMENTARY
    for check in verdict["checks"]:
        row = {k: check[k] for k in ROW if not (momentary and k == "observed")}
        if prefix:
            row = {k: v.replace(f"{prefix}-", "") if isinstance(v, str) else v for k, v in row.items()}
        out.append(row)
    return out


def same_text(got: str, golden: str) -> bool:
    """Equal, or, where the verdict cut a long text at a fixed length ("…"), equal up to the shorter cut: the
    partition's prefix on the names in it moves the cut."""
    if got == golden:
        return True
    if not (got.endswith("…") or golden.endswith("…")):
        return False
    a, b = got.removesuffix("…"), golden.removesuffix("…")
    return a.startswith(b) if len(a) >= len(b) else b.startswith(a)


def same_rows(got: list[dict], golden: list[dict]) -> bool:
    return len(got) == len(golden) and all(
        g.keys() == w.keys()
        and all(same_text(g[k], w[k]) if isinstance(g[k], str) and isinstance(w[k], str) else g[k] == w[k] for k in g)
        for g, w in zip(got, golden, strict=True)
    )
