"""Evidence files: written whole or not at all, never over an earlier snapshot."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kailab import evidence


def test_snapshot_names_never_collide(tmp_path):
    now = datetime(2026, 11, 23, 5, 0, 0, tzinfo=UTC)
    first = evidence.snapshot_dir(tmp_path, now)
    first.mkdir()
    second = evidence.snapshot_dir(tmp_path, now)
    assert (first.name, second.name) == ("20261123T050000Z", "20261123T050000Z-2")


def test_existing_snapshot_is_never_overwritten(tmp_path):
    target = tmp_path / "snap"
    evidence.write_snapshot({"a.txt": "one"}, [], target)
    with pytest.raises(FileExistsError):
        evidence.write_snapshot({"a.txt": "two"}, [], target)
    assert (target / "a.txt").read_text() == "one"


def test_interrupted_capture_leaves_no_folder(tmp_path, monkeypatch):
    def boom(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(evidence, "timeline_png", boom)
    verdicts = [{"scenario": "x", "title": "x", "passed": True, "timeline": [[0, {"q": 1}]]}]
    with pytest.raises(KeyboardInterrupt):
        evidence.write_snapshot({"a.txt": "x"}, verdicts, tmp_path / "snap")
    assert list(tmp_path.iterdir()) == []


def test_before_after_from_timeline():
    v = {"timeline": [[0, {}], [1.0, {"prod": 32}], [5.0, {"prod": 24, "research": 8}]]}
    assert evidence.before_after(v) == [
        {"queue": "prod", "before": 0, "peak": 32, "after": 24},
        {"queue": "research", "before": 0, "peak": 8, "after": 8},
    ]


def test_timeline_png_has_one_line_per_queue(tmp_path):
    from PIL import Image

    v = {
        "scenario": "r",
        "title": "Reclaim",
        "passed": True,
        "timeline": [[0, {}], [1.0, {"prod": 32}], [5.0, {"prod": 24, "research": 8}]],
    }
    evidence.timeline_png([v], tmp_path / "t.png")
    with Image.open(tmp_path / "t.png") as img:
        assert img.format == "PNG" and img.size[0] > 400
