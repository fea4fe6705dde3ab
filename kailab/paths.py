"""Where kailab keeps its state (the running lab) and its cache (built binaries)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = PROJECT_ROOT / "manifests"
EXERCISES = PROJECT_ROOT / "exercises"
RUNBOOKS = PROJECT_ROOT / "runbooks"


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
