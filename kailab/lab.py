"""The running lab, whatever runtime made it: which runtime, where its kubeconfig is, a client for it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kailab.errors import NotRunning
from kailab.kube import Kube
from kailab.paths import lab_home
from kailab.runtimes.base import Runtime, get_runtime


def state() -> dict | None:
    path = lab_home() / "lab.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def current_runtime() -> Runtime | None:
    """The runtime of the lab that is up (from its state file), or None."""
    s = state()
    if s is None:
        return None
    return get_runtime(s["runtime"])()


def kubeconfig() -> Path:
    """The lab's kubeconfig; ``KAILAB_KUBECONFIG`` points kailab at any other cluster."""
    if os.environ.get("KAILAB_KUBECONFIG"):
        return Path(os.environ["KAILAB_KUBECONFIG"])
    s = state()
    if s is None:
        raise NotRunning("No lab is running.", hint="Start one: kailab up")
    return Path(s["kubeconfig"])


def connect() -> Kube:
    """A client for the lab; a clear error when the lab is not up or does not answer."""
    kube = Kube(kubeconfig())
    if not kube.ping():
        raise NotRunning(f"The lab's API server does not answer ({kubeconfig()}).",
                         hint="Check it with: kailab status — or start again: kailab down && kailab up")
    return kube
