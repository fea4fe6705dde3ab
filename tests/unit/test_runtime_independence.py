"""Exercises, checks and evidence are the same on every runtime: they never look at which one runs."""

from __future__ import annotations

import ast
from pathlib import Path

import kailab

SHARED = ["scenarios/engine.py", "scenarios/loader.py", "scenarios/manifests.py", "scenarios/model.py",
          "checks.py", "evidence.py", "explain.py", "watch.py", "lesson.py", "kube.py", "fleet.py"]
PACKAGE = Path(kailab.__file__).parent


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_shared_layers_do_not_import_a_runtime():
    offenders = {f: sorted(m for m in imported_modules(PACKAGE / f) if m.startswith("kailab.runtimes") or m == "kailab.lab")
                 for f in SHARED}
    assert {f: m for f, m in offenders.items() if m} == {}



def test_every_exercise_is_one_scenario_file_for_all_runtimes():
    """No runtime-specific copies of an exercise: one file each, loaded the same way."""
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario

    files = sorted(EXERCISES.glob("*.yaml"))
    assert {f.stem for f in files} >= {"quota", "borrow", "reclaim", "gang", "priority", "baseline"}
    assert not [f for f in files if "kind" in f.stem or "local" in f.stem]
    assert all(load_scenario(f).steps for f in files)
