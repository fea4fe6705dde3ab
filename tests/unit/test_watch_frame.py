"""A watch frame, rendered headless: queues and one cell per GPU, coloured by queue."""

from rich.console import Console

from kailab import gpus
from kailab.gpus import GpuInUse
from kailab.pods import PodView
from kailab.watch import frame

QUEUES = [
    {
        "name": "team-prod",
        "parent": "ai-factory",
        "priority": 100,
        "quota": 8,
        "limit": -1,
        "weight": 1,
        "allocated": 10,
        "pending": 2,
    }
]
NODES = [
    {"name": "kwok-a100-0", "pool": "a100", "gpus": 8, "used": 8, "free": 0},
    {"name": "kwok-l40s-0", "pool": "l40s", "gpus": 4, "used": 2, "free": 2},
]
CELLS = {"kwok-a100-0": [GpuInUse(("team-prod",))] * 8, "kwok-l40s-0": [GpuInUse(("team-prod",)), GpuInUse(())]}


def render():
    console = Console(record=True, width=140, color_system="truecolor", force_terminal=True)
    console.print(frame(QUEUES, NODES, CELLS))
    return console.export_text(clear=False), console.export_text(styles=True)


def test_frame_shows_queues_and_gpu_cells():
    text, _ = render()
    assert "team-prod" in text and "ai-factory" in text and "∞" in text
    a100 = next(line for line in text.splitlines() if "kwok-a100-0" in line)
    l40s = next(line for line in text.splitlines() if "kwok-l40s-0" in line)
    assert a100.count("■") == 8 and "8/8" in a100
    assert l40s.count("■") == 2 and l40s.count("·") == 2 and "2/4" in l40s


def test_cells_are_coloured_per_queue():
    _, styled = render()
    l40s = next(line for line in styled.splitlines() if "kwok-l40s-0" in line)
    codes = {seg.split("m")[0] for seg in l40s.split("\x1b[")[1:] if "■" in seg}
    assert len(codes) == 2  # team-prod and (no queue) in two colours


def test_a_big_fleet_is_shown_per_pool():
    nodes = [
        {"name": f"kwok-a100-{i}", "pool": "a100", "gpus": 8, "used": 8 if i < 500 else 0, "free": 0 if i < 500 else 8}
        for i in range(1000)
    ]
    console = Console(record=True, width=140)
    console.print(frame(QUEUES, nodes, {}))
    text = console.export_text()
    assert "GPUs per pool (1000 nodes)" in text and "kwok-a100-999" not in text
    row = next(line for line in text.splitlines() if "a100" in line and "█" in line)
    assert "1000" in row and "4000" in row and "8000" in row


def test_fractions_on_one_gpu_are_one_shared_cell():
    # two halves and KAI's reservation pod on one GPU, a 0.9 on another, a whole-GPU pod: 3 GPUs of 8 in use
    pods = [
        PodView("half-1", queue="team-frac", phase="Running", node="kwok-a100-0", gpus=0.5, gpu_group="g1"),
        PodView("half-2", queue="team-frac", phase="Running", node="kwok-a100-0", gpus=0.5, gpu_group="g1"),
        PodView(
            "kwok-a100-0-g1",
            namespace="kai-resource-reservation",
            phase="Running",
            node="kwok-a100-0",
            gpus=1,
            gpu_group="g1",
        ),
        PodView("big", queue="team-frac", phase="Running", node="kwok-a100-0", gpus=0.9, gpu_group="g2"),
        PodView("one", queue="team-prod", phase="Running", node="kwok-a100-0", gpus=1),
    ]
    nodes = [{"name": "kwok-a100-0", "pool": "a100", "gpus": 8, "used": 3, "free": 5}]
    console = Console(record=True, width=140)
    console.print(frame(QUEUES, nodes, gpus.in_use(pods)))
    row = next(line for line in console.export_text().splitlines() if "kwok-a100-0" in line)
    assert row.count("◐") == 2 and row.count("■") == 1 and row.count("·") == 5 and "3/8" in row
