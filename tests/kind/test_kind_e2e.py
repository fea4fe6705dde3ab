"""End to end on the kind runtime: create the cluster and run every exercise. Needs a Docker engine.

Run it where Docker works:  python -m pytest tests/kind -m kind
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kailab.runtimes.kind import KindRuntime

ok, why = KindRuntime.available()
pytestmark = [pytest.mark.kind, pytest.mark.skipif(not ok, reason=f"kind end-to-end needs a Docker engine: {why}")]


def kailab(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kailab", *args], capture_output=True, text=True, env=env, timeout=3600)


def test_kind_lab_runs_every_exercise(tmp_path):
    env = {**os.environ, "KAILAB_HOME": str(tmp_path / "lab")}
    up = kailab("up", "--runtime", "kind", env=env)
    try:
        assert up.returncode == 0, up.stderr
        demo = kailab("demo", "all", "--json", env=env)
        result = json.loads(demo.stdout or "{}")
        assert demo.returncode == 0 and result.get("passed"), demo.stderr[-3000:]
    finally:
        kailab("down", env=env)
