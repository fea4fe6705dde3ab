"""Where kailab finds its lesson files, keeps its state (the running lab) and its cache (built binaries)."""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path


def _shipped(folder: str) -> Path:
    """One of the repository's top-level folders (manifests, exercises, runbooks), as the package ``kailab.data.<folder>``.

    pyproject.toml maps each folder to that package, so a wheel carries it (site-packages/kailab/data/<folder>)
    and an editable install reads the repository folder itself. Either way it is a real directory: pip installs
    a wheel unzipped, and the editable finder points at the checkout. So ``files()`` gives a ``pathlib.Path``,
    which callers ``.glob`` and hand to subprocesses (``kubectl apply -f``, kwok's ``--config``).
    """
    try:
        found = files(f"kailab.data.{folder}")
    except ModuleNotFoundError:
        # A checkout run without installing it (PYTHONPATH=.), or an editable install made before this
        # mapping existed (pip install -e . again fixes it): the folder beside the package.
        checkout = Path(__file__).resolve().parent.parent / folder
        if (checkout / "__init__.py").is_file():
            return checkout
        raise
    if not isinstance(found, Path):  # a zip (no file to give kubectl), or a namespace package (no __init__.py)
        raise RuntimeError(
            f"kailab's {folder} folder is not one directory on disk ({found!r}): "
            f"is {folder}/__init__.py missing, or is kailab run from a zip?"
        )
    return found


def _instructor() -> Path | None:
    """The checkout's ``instructor/`` folder — the tasks' and challenges' files with their hidden checks, and the
    solutions — beside the package in an editable install (``pip install -e .``) or a checkout run in place; None in an
    installed wheel, which leaves it out (pyproject.toml): a class's learners never have it."""
    folder = Path(__file__).resolve().parent.parent / "instructor"
    return folder if (folder / "tasks").is_dir() else None


MANIFESTS = _shipped("manifests")
EXERCISES = _shipped("exercises")
RUNBOOKS = _shipped("runbooks")
CLAIMS = _shipped("claims")
INSTRUCTOR = _instructor()


def lab_home() -> Path:
    """The lab directory: logs, pids, kubeconfig. ``KAILAB_HOME`` overrides the XDG state dir."""
    if os.environ.get("KAILAB_HOME"):
        return Path(os.environ["KAILAB_HOME"]).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "kailab"


def cache_home() -> Path:
    """Built binaries, per pinned version. ``KAILAB_CACHE`` overrides the XDG cache dir."""
    if os.environ.get("KAILAB_CACHE"):
        return Path(os.environ["KAILAB_CACHE"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kailab"
