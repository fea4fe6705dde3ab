"""``kailab watch``: a live view of queues and GPUs, redrawn whenever a pod changes.

:func:`frame` is pure (rows in, a rich renderable out), so a frame is tested without a terminal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kailab import gpus
from kailab.gpus import GpuInUse
from kailab.kube import Kube, wait_until, watch_pods
from kailab.pods import PodView, pod_view
from kailab.render import num, queue_table
from kailab.status import MAX_NODE_ROWS, nodes_and_gpus, pool_rows, queues

COLOURS = ["cyan", "magenta", "yellow", "green", "blue", "red", "bright_cyan", "bright_magenta"]
FREE = "·"
WHOLE = "■"
SHARED = "◐"  # a GPU shared by fractional pods, shown once


def colour_order(queue_rows: list[dict], cells: dict[str, list[GpuInUse]]) -> dict[str, int]:
    """Each queue shown (and every queue a GPU is held for) → its colour's number, by name: a queue has the same
    colour in the terminal and on the page (kailab/web), and in every frame while the queues stay the same."""
    names = sorted({g.queue for used in cells.values() for g in used} | {q["name"] for q in queue_rows})
    return {n: i for i, n in enumerate(names)}


def frame(queue_rows: list[dict], node_rows: list[dict], cells: dict[str, list[GpuInUse]]) -> Group:
    """One screen: a queue table, then one row of GPU cells per node (``cells``: :func:`kailab.gpus.in_use`),
    coloured by queue."""
    order = colour_order(queue_rows, cells)
    names = list(order)
    colour = {n: COLOURS[i % len(COLOURS)] for n, i in order.items()}
    qt = queue_table(queue_rows, style_of=lambda name: colour.get(name, ""))
    if len(node_rows) > MAX_NODE_ROWS:  # a big fleet: one row per pool, GPUs used of all
        pt = Table(title=f"GPUs per pool ({len(node_rows)} nodes)", title_justify="left")
        for col in ("pool", "nodes", "used", "GPUs", "use"):
            pt.add_column(col, justify="left" if col in ("pool", "use") else "right")
        for p in pool_rows(node_rows):
            share = p["used"] / p["gpus"] if p["gpus"] else 0
            pt.add_row(
                p["pool"],
                str(p["nodes"]),
                num(p["used"]),
                num(p["gpus"]),
                "█" * round(share * 30) + "·" * (30 - round(share * 30)),
            )
        return Group(qt, pt)
    nt = Table(
        title=f"GPUs per node (one cell per GPU, coloured by queue; {SHARED} is shared by fractions, {FREE} is free)",
        title_justify="left",
    )
    for col in ("node", "pool", "used", "GPUs"):
        nt.add_column(col)
    for n in node_rows:
        used = cells.get(n["name"], [])[: n["gpus"]]
        row = Text()
        for g in used:
            row.append(f"{SHARED if g.shared else WHOLE} ", style=colour.get(g.queue, ""))
        row.append(f"{FREE} " * max(0, n["gpus"] - len(used)))
        nt.add_row(n["name"], n["pool"], f"{len(used)}/{n['gpus']}", row)
    legend = Text()
    for name in names:
        legend.append(f"{WHOLE} {name}  ", style=colour[name])
    return Group(qt, nt, legend)


def current_frame(
    kube: Kube,
    pods: list[PodView],
    fair_shares: dict[str, float] | None = None,
    queue_selector: str = "",
    node_selector: str = "",
) -> Group:
    """One frame; the selectors narrow it to a slice (a class learner's queues and nodes)."""
    return frame(
        queues(kube, pods, fair_shares, queue_selector), nodes_and_gpus(kube, pods, node_selector), gpus.in_use(pods)
    )


def run(
    kube: Kube,
    console,
    stop: threading.Event | None = None,
    fair_shares: Callable[[], dict[str, float] | None] = lambda: None,
    namespaces: list[str] | None = None,
    selectors: tuple[str, str] = ("", ""),
) -> None:
    """Redraw on every pod change (and every 2 s, for fair shares) until Ctrl-C (or ``stop``).

    ``namespaces``: watch the pods of these only (a class learner may not watch the cluster's); None: every pod.
    ``selectors``: the (queues, nodes) a frame shows, as :func:`current_frame`."""
    from rich.live import Live

    cond = threading.Condition()
    watches = []
    try:
        for ns in [None] if namespaces is None else namespaces:
            watches.append(watch_pods(kube, ns, cond))
    except BaseException:
        for w in watches:
            w.stop()
        raise
    stop = stop or threading.Event()

    def version() -> tuple[int, ...]:
        return tuple(w.version for w in watches)

    seen = [version()]

    def changed() -> bool:
        return stop.is_set() or version() != seen[0]

    def now() -> Group:
        pods = [pod_view(p) for w in watches for p in w.snapshot()]
        return current_frame(kube, pods, fair_shares(), *selectors)

    try:
        with Live(now(), console=console, refresh_per_second=4) as live:
            while not stop.is_set():
                wait_until(cond, changed, 2.0)
                seen[0] = version()
                live.update(now())
    except KeyboardInterrupt:
        pass
    finally:
        for w in watches:
            w.stop()
