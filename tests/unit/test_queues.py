"""One Queue shape: kailab.queues builds every Queue kailab writes; nothing else spells one out."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

import kailab
from kailab.paths import MANIFESTS
from kailab.queues import queue_object, queue_ref, resource
from kailab.scenarios.loader import LESSON_QUEUES, load_queue_file
from kailab.scenarios.manifests import queue_object as scenario_queue

PACKAGE = Path(kailab.__file__).parent


def queue_literals(path: Path) -> list[int]:
    """Lines where a dict literal says ``"kind": "Queue"``."""
    return [
        n.lineno
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Dict)
        and any(
            isinstance(k, ast.Constant) and k.value == "kind" and isinstance(v, ast.Constant) and v.value == "Queue"
            for k, v in zip(n.keys, n.values, strict=True)
        )
    ]


def test_only_kailab_queues_builds_a_queue():
    found = {str(p.relative_to(PACKAGE)): queue_literals(p) for p in PACKAGE.rglob("*.py")}
    assert {f: lines for f, lines in found.items() if lines} == {"queues.py": queue_literals(PACKAGE / "queues.py")}


def test_the_check_sees_a_queue_spelled_out(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('X = 1\nQ = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue"}\n')
    assert queue_literals(f) == [2]


def shape(q: dict) -> tuple:
    res = q["spec"]["resources"]
    return q["apiVersion"], q["kind"], tuple(sorted(res)), tuple(tuple(sorted(res[r])) for r in sorted(res))


def test_every_queue_kailab_writes_has_the_same_shape_as_kais_chart_queues():
    chart = [d for d in yaml.safe_load_all((MANIFESTS / "kai-default-queues.yaml").read_text()) if d]
    lesson = [scenario_queue(q) for q in load_queue_file(LESSON_QUEUES)]
    bench = queue_object("kailab-bench", gpu=resource(32))
    assert {shape(q) for q in [*chart, *lesson, bench]} == {shape(chart[0])}
    assert bench["spec"]["resources"]["cpu"] == {"quota": -1, "limit": -1, "overQuotaWeight": 1}, (
        "CPU and memory unlimited unless said: an unset limit is 0 to KAI"
    )
    assert queue_ref("q")["metadata"] == {"name": "q"} and queue_ref("q")["kind"] == bench["kind"]
