"""Reading each queue's fair share from KAI's metrics text."""

from kailab.fairshare import FairShare, parse

TEXT = """# HELP kai_queue_fair_share_gpu GPU Fair share of queue, as a gauge. Values in GPU devices
# TYPE kai_queue_fair_share_gpu gauge
kai_queue_fair_share_gpu{queue_display_name="",queue_metadata_name="1b2c",queue_name="team-a"} 24
kai_queue_fair_share_gpu{queue_display_name="",queue_metadata_name="3d4e",queue_name="team-b"} 8.5
kai_queue_fair_share_cpu_cores{queue_display_name="",queue_metadata_name="1b2c",queue_name="team-a"} 1.5
kai_queue_gpu_usage{queue_display_name="",queue_metadata_name="1b2c",queue_name="team-a"} 0.95
go_goroutines 42
"""


def test_fair_share_per_queue():
    shares = parse(TEXT)
    assert shares == {
        "team-a": FairShare("team-a", gpu=24, cpu=1.5, usage=0.95),  # its recent usage: time-based fair share
        "team-b": FairShare("team-b", gpu=8.5),
    }


def test_no_metrics_no_shares():
    assert parse("") == {} and parse('kai_queue_fair_share_gpu{queue_name="x"} NaNish') == {}
