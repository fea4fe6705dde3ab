"""The running lab, whatever runtime made it: which runtime, where its kubeconfig is, a client for it."""

from __future__ import annotations

import os
from pathlib import Path

from kailab import labdir
from kailab.errors import NotRunning
from kailab.kube import Kube
from kailab.ownership import Owner
from kailab.paths import lab_home
from kailab.progress import Progress
from kailab.labstate import LabState
from kailab.runtimes import get_runtime, runtime_names
from kailab.runtimes.base import Runtime


def state() -> LabState | None:
    """The lab's state, None when no lab is up; raises DamagedState when its file cannot be used."""
    return LabState.read(lab_home(), runtime_names())


def current_runtime() -> Runtime | None:
    """The runtime of the lab that is up (from its state file), or None."""
    s = state()
    return None if s is None else get_runtime(s.runtime)()


def remove(progress: Progress) -> None:
    """``kailab down``: the lab's runtime removes it; without a usable state file, each runtime removes
    what it can find of its own (processes by identity, files it writes) — nothing else."""
    home = lab_home()
    labdir.refuse_unless_ours(home)
    try:
        rt = current_runtime()
    except Exception as e:  # a damaged state file: say so, and remove what is identifiably ours
        progress.info(f"[yellow]{getattr(e, 'message', e)}[/yellow] Removing what kailab can identify as its own.")
        rt = None
    if rt is not None:
        rt.down(progress)
        return
    for name in runtime_names():
        get_runtime(name)().forget(progress)


def kubeconfig() -> Path:
    """The lab's kubeconfig; ``KAILAB_KUBECONFIG`` points kailab at any other cluster."""
    if os.environ.get("KAILAB_KUBECONFIG"):
        return Path(os.environ["KAILAB_KUBECONFIG"])
    s = state()
    if s is None:
        raise NotRunning("No lab is running.", hint="Start one: kailab up")
    return Path(s.kubeconfig)


def context() -> str | None:
    """The kubeconfig's context the lab uses (an adopted cluster's ``--context``); None: its current one."""
    if os.environ.get("KAILAB_KUBECONFIG"):
        return None
    s = state()
    return (s.context or None) if s else None


def connect() -> Kube:
    """A client for the lab; a clear error when the lab is not up or does not answer."""
    path = kubeconfig()
    if not path.is_file():
        raise NotRunning(f"The lab's kubeconfig {path} is missing.", hint="Start again: kailab down && kailab up")
    kube = Kube(path, context=context())
    if not kube.ping():
        raise NotRunning(f"The lab's API server does not answer ({path}).",
                         hint="Check it with: kailab status — or start again: kailab down && kailab up")
    return kube


def fair_shares() -> dict[str, float] | None:
    """Each queue's fair share of GPUs now, as KAI's scheduler publishes it; None when this lab cannot say."""
    from kailab import fairshare

    try:
        read = scheduler_metrics()
        text = read() if read is not None else None
    except Exception:  # no fair share is no reason to fail a status or a watch
        return None
    return {q: s.gpu for q, s in fairshare.parse(text).items()} if text else None


def scheduler_metrics():
    """A reader of the lab's KAI scheduler metrics, or None when this lab cannot read them."""
    rt = current_runtime()
    return rt.scheduler_metrics() if rt is not None else None


def owner() -> Owner:
    """Whose objects the lab's are (an adopted cluster's lab has an id; a cluster kailab made is the lab's own)."""
    s = state()
    return Owner(s.lab_id if s else "")


def live_cluster(kube: Kube):
    """The engine's view of this lab: its scheduler control and metrics (where it has them), its owner labels."""
    from kailab.scenarios.live import LiveCluster

    rt = current_runtime()
    sharing = rt.gpu_sharing() if rt is not None else True
    return LiveCluster(kube, scheduler_control(), owner=owner(), metrics=scheduler_metrics(), gpu_sharing=sharing)


def for_this_lab(scenario):
    """The scenario as this lab runs it: with the lab's prefix on its queues and namespace, if it has one."""
    from kailab.scenarios.prefix import prefixed

    s = state()
    return prefixed(scenario, s.prefix) if s and s.prefix else scenario


def scheduler_control():
    """The running lab's control of KAI's scheduler (stop, start, metrics), or None."""
    from kailab.errors import KailabError

    rt = current_runtime()
    try:
        return rt.scheduler_control() if rt is not None else None
    except KailabError:  # a runtime without one: scenarios that stop or start the scheduler say so
        return None
