"""kailab as a user gets it: a wheel built from this tree, installed in a venv of its own, run from another folder.

The venv holds kailab's declared dependencies only, installed from the package index once per set of them (about a
minute) and kept outside the tree (the temporary folder's ``kailab-wheel-venv-<key>``, one test run at a time);
every run builds the wheel again and installs it there. It
never skips (CI included). The same venv then takes the tree as an editable install, which must read the
repository's folders in place, through the same importlib.resources route.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DATA = ("manifests", "exercises", "runbooks")  # top-level folders shipped as kailab.data.<folder>
# The build reads a copy, so it writes no build/ or *.egg-info into the working tree.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", ".pytest-kind", "evidence"
)

# Run by the venv's python: where kailab and its folders are, and every lesson and runbook scenario loaded.
CHECK = r"""
import importlib.resources, json, sys, sysconfig
import kailab, kailab.paths as paths
from kailab.lesson import EXERCISE_NAMES, load_lesson
from kailab.scenarios.loader import load_scenario

folders = {"manifests": paths.MANIFESTS, "exercises": paths.EXERCISES, "runbooks": paths.RUNBOOKS}
lessons = list(EXERCISE_NAMES)
for name in lessons:
    load_lesson(name)
    load_scenario(paths.EXERCISES / f"{name}.yaml")
runbook_scenarios = sorted(p.name for p in (paths.RUNBOOKS / "scenarios").glob("*.yaml"))
for name in runbook_scenarios:
    load_scenario(paths.RUNBOOKS / "scenarios" / name)
json.dump({
    "prefix": sys.prefix,
    "purelib": sysconfig.get_paths()["purelib"],
    "kailab": kailab.__file__,
    "folders": {k: str(v) for k, v in folders.items()},
    "types": sorted({type(v).__name__ for v in folders.values()}),
    "resources": {k: str(importlib.resources.files(f"kailab.data.{k}")) for k in folders},
    "files": {k: sorted(str(p.relative_to(v)) for p in v.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
              for k, v in folders.items()},
    "lessons": lessons,
    "runbook_scenarios": runbook_scenarios,
}, sys.stdout)
"""


def run(argv: list, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"$ {' '.join(map(str, argv))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def files_in(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def shipped_files(root: Path) -> set[str]:
    """Every file of the package and of the data folders, named as the wheel names it."""
    names = {f"kailab/{name}" for name in files_in(root / "kailab")}
    for folder in DATA:
        names |= {f"kailab/data/{folder}/{name}" for name in files_in(root / folder)}
    return names


def dependencies_key() -> str:
    """What the venv's packages depend on: kailab's declared dependencies and this Python's version."""
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return hashlib.sha256(json.dumps([sorted(declared), sys.version]).encode()).hexdigest()[:16]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(source copy, wheel, venv, a folder outside both): the wheel built from the copy, installed in the venv (made,
    with the dependencies from the index, the first time for these dependencies; used by one test run at a time)."""
    top = tmp_path_factory.mktemp("wheel")
    src, dist, elsewhere = top / "src", top / "dist", top / "elsewhere"
    shutil.copytree(REPO, src, ignore=NOT_SOURCE)
    elsewhere.mkdir()
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, src], cwd=elsewhere)
    (wheel,) = dist.glob("kailab-*.whl")
    venv = Path(tempfile.gettempdir()) / f"kailab-wheel-venv-{dependencies_key()}"
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            run([sys.executable, "-m", "venv", venv], cwd=elsewhere)
            run([venv / "bin" / "python", "-m", "pip", "install", wheel], cwd=elsewhere)
            (venv / "complete").write_text("")
        else:  # the dependencies are there: this tree's wheel in place of the last one
            run(
                [venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--force-reinstall", wheel],
                cwd=elsewhere,
            )
        yield src, wheel, venv, elsewhere


def check(venv: Path, cwd: Path) -> dict:
    """kailab's own commands that need no lab, then CHECK; returns what CHECK found."""
    assert "Usage: kailab demo" in run([venv / "bin" / "kailab", "demo", "--help"], cwd=cwd).stdout
    found = json.loads(run([venv / "bin" / "python", "-c", CHECK], cwd=cwd).stdout)
    listed = run([venv / "bin" / "kailab", "lesson"], cwd=cwd).stdout  # lists the lessons from EXERCISES
    assert found["lessons"] and all(name in listed for name in found["lessons"])
    assert {"quota", "borrow", "reclaim", "gang", "priority", "baseline"} <= set(found["lessons"])
    assert found["runbook_scenarios"]
    assert found["types"] == ["PosixPath"]
    # Read through importlib.resources, not the fallback for an uninstalled checkout.
    assert found["resources"] == found["folders"]
    return found


def test_the_wheel_carries_every_file_and_kailab_runs_from_it(installed):
    src, wheel, venv, elsewhere = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    assert sorted(shipped_files(src) - names) == [], "in the tree but missing from the wheel"
    # What a class's learners install holds no hidden check and no solution (instructor/ stays in the repository)
    hidden = {p.name for p in (src / "instructor").rglob("*.yaml")}
    assert hidden and not [n for n in names if n.rsplit("/", 1)[-1] in hidden or "instructor/" in n]
    assert {n.split("/")[0] for n in names} == {"kailab", wheel.name.split("-py")[0] + ".dist-info"}

    # The wheel again, in case the editable test ran first in this venv.
    run([venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--force-reinstall", wheel], cwd=elsewhere)
    found = check(venv, elsewhere)
    refused = subprocess.run(
        [venv / "bin" / "kailab", "lesson", "quota", "--task", "1"], cwd=elsewhere, capture_output=True, text=True
    )
    assert refused.returncode == 1 and "carries no tasks" in refused.stderr, refused.stderr
    assert not (elsewhere / "kailab-tasks").exists()
    purelib = Path(found["purelib"])
    assert Path(found["prefix"]) == venv
    assert Path(found["kailab"]).is_relative_to(purelib / "kailab")
    for folder, path in found["folders"].items():
        assert Path(path) == purelib / "kailab" / "data" / folder  # the installed copy, not the repository
        assert not Path(path).is_relative_to(REPO) and not Path(path).is_relative_to(src)
        assert set(found["files"][folder]) == files_in(src / folder)


def test_an_editable_install_reads_the_repository_folders(installed):
    src, _, venv, elsewhere = installed
    run([venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--force-reinstall", "-e", src], cwd=elsewhere)
    found = check(venv, elsewhere)
    assert Path(found["kailab"]) == src / "kailab" / "__init__.py"
    assert found["folders"] == {folder: str(src / folder) for folder in DATA}
