"""kailab watch on the running lab: a frame of the real cluster, and a live loop that stops cleanly."""

from __future__ import annotations

import threading

from rich.console import Console

from kailab import watch


def test_watch_frame_of_the_running_lab(lab):
    assert lab.cli("demo", "baseline", "-q").returncode == 0
    text = lab.cli("watch", "--once", check=True).stdout
    rows = [line for line in text.splitlines() if line.startswith("│ kwok-")]
    assert len(rows) == 5 and sum(r.count("■") for r in rows) == 32  # baseline fills all 32 GPUs
    assert "(no queue)" in text  # the default scheduler's pods carry no KAI queue


def test_live_watch_redraws_and_stops(lab):
    console = Console(record=True, width=140, force_terminal=False)
    stop = threading.Event()
    t = threading.Thread(target=watch.run, args=(lab.kube, console, stop))
    t.start()
    stop.wait(1.0)
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert "GPUs per node" in console.export_text()
