"""The running lab, whatever runtime made it: which runtime, where its kubeconfig is, a client for it."""

from __future__ import annotations

import os
from pathlib import Path

from kailab import labdir
from kailab.errors import NotRunning
from kailab.kube import Kube
from kailab.labstate import LabState
from kailab.ownership import Owner
from kailab.paths import lab_home
from kailab.progress import Progress
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
    if j := joined():  # a learner's down: their own objects only, then the credential is forgotten
        from kailab.classroom.joined import leave

        with progress.step(f"Removing {j.learner}'s lesson objects (their namespaces stay, the instructor's)") as st:
            st.note(f"{len(leave(j, home))} emptied or deleted")
        return
    try:
        rt = current_runtime()
    except Exception as e:  # a damaged state file: say so, and remove what is identifiably ours
        progress.info(f"{getattr(e, 'message', e)} Removing what kailab can identify as its own.", style="yellow")
        rt = None
    if rt is not None:
        remove_class(rt, progress)
        rt.down(progress)
        return
    for name in runtime_names():
        get_runtime(name)().forget(progress)


def remove_class(rt: Runtime, progress: Progress) -> None:
    """Before an adopted cluster is let go of (existing runtime), its class: every learner's SchedulingShard, nodes,
    queues, namespaces and credential (``class down``). The local and kind runtimes delete the whole cluster, and
    with it the shards; the local runtime's ``down`` stops the supervisor, then the schedulers it started."""
    from kailab.classroom.partitions import class_of

    klass = class_of(rt)
    if rt.makes_cluster:
        klass.forget()  # the class goes with the cluster; on kind its state file is in the lab folder
        return
    if not klass.learners():
        return
    try:
        kube = connect()
    except Exception as e:  # noqa: BLE001 (the runtime's down says what is left, and can be run again)
        progress.info(f"The class is left on the cluster: {getattr(e, 'message', e)}", style="yellow")
        return
    klass.down(kube, None, progress)


def kubeconfig() -> Path:
    """The lab's kubeconfig; ``KAILAB_KUBECONFIG`` points kailab at any other cluster."""
    if os.environ.get("KAILAB_KUBECONFIG"):
        return Path(os.environ["KAILAB_KUBECONFIG"])
    if j := joined():
        return j.kubeconfig
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
    if j := joined():  # a learner's credential: a revoked one says so (401), not "does not answer"
        from kailab.classroom.joined import whoami

        whoami(kube, j.kubeconfig)
        return kube
    if why := kube.probe():
        raise NotRunning(
            f"The lab's API server does not answer ({path}): {why}.",
            hint="Check it with: kailab status — or start again: kailab down && kailab up",
        )
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


def queue_usage() -> dict[str, float] | None:
    """Each queue's recent GPU usage (0 to 1) as KAI's scheduler publishes it for time-based fair share; None when
    this lab cannot say."""
    from kailab import fairshare

    try:
        read = scheduler_metrics()
        text = read() if read is not None else None
    except Exception:  # as fair_shares: no usage is no reason to fail an explanation
        return None
    return {q: s.usage for q, s in fairshare.parse(text).items()} if text else None


def scheduler_metrics():
    """A reader of the lab's KAI scheduler metrics (a joined learner's: their shard's scheduler's), or None when this
    lab cannot read them."""
    if j := joined():
        from kailab.classroom.shards import ShardSchedulerControl

        return learner_metrics(ShardSchedulerControl(connect(), j.learner))
    rt = current_runtime()
    return rt.scheduler_metrics() if rt is not None else None


_SAID: set[str] = set()


def learner_metrics(control):
    """A joined learner's reader of their scheduler's metrics; None, said once on stderr, when their scheduler's
    metrics are on another machine's loopback (a class on the instructor's local runtime): no fair share is better
    than one read from whatever answers on this machine's port."""
    if why := control.metrics_unreachable():
        from kailab.progress import stderr

        if why not in _SAID:  # a watch asks every frame
            _SAID.add(why)
            stderr.print(f"Fair shares are not available here: {why}.", markup=False, highlight=False)
        return None
    return control.metrics


def joined():
    """The class credential this lab folder joined with (``kailab join``), or None: see kailab/classroom/joined.py."""
    from kailab.classroom.joined import current

    return current(lab_home())


def owner() -> Owner:
    """Whose objects the lab's are (an adopted cluster's lab has an id; a cluster kailab made is the lab's own;
    a class's learner's carry their node pool too)."""
    if j := joined():
        from kailab.classroom import plan

        return plan.owner(j.learner)
    s = state()
    return Owner(s.lab_id if s else "")


def live_cluster(kube: Kube):
    """The engine's view of this lab: its scheduler control and metrics (where it has them), its owner labels."""
    from kailab.labels import NODEPOOL_LABEL
    from kailab.scenarios.live import LiveCluster

    if j := joined():  # a learner: their nodes, and their scheduler through their SchedulingShard
        from kailab.classroom import plan
        from kailab.classroom.shards import ShardSchedulerControl

        control = ShardSchedulerControl(kube, j.learner)
        cluster = LiveCluster(kube, control, owner=owner(), node_selector=plan.node_selector(j.learner))
        cluster.metrics = learner_metrics(control)  # None (no fair share) rather than the control's by default
        return cluster
    rt = current_runtime()
    sharing = rt.gpu_sharing() if rt is not None else True
    # On a cluster kailab made, the lab's scheduler is KAI's unlabelled partition: a class's learners' nodes are not its.
    nodes = f"!{NODEPOOL_LABEL}" if rt is not None and rt.makes_cluster else None
    return LiveCluster(
        kube,
        scheduler_control(),
        owner=owner(),
        metrics=scheduler_metrics(),
        gpu_sharing=sharing,
        node_selector=nodes,
        gpu_ledger=gpu_ledger_control(),
    )


def for_this_lab(scenario):
    """The scenario as this lab runs it: with the lab's prefix on its queues and namespace, if it has one."""
    from kailab.scenarios.prefix import prefixed

    if j := joined():
        from kailab.classroom import plan

        return plan.for_learner(scenario, j.learner)
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


def gpu_ledger_control():
    """The running lab's control of what gives KAI's GPU reservation pods their GPU, or None."""
    from kailab.errors import KailabError

    rt = current_runtime()
    try:
        return rt.gpu_ledger_control() if rt is not None else None
    except KailabError:  # a runtime without one: scenarios that stop it are not applicable there
        return None


def engine(kube: Kube, progress, record=None):
    """The engine that plays this lab's scenarios; a class learner's keeps each lesson in the cluster as it goes
    (started, then its verdict: see kailab/classroom/records.py)."""
    from kailab.scenarios.engine import Engine

    played = Engine(live_cluster(kube), progress, record=record)
    if j := joined():
        from kailab.classroom.records import Recording

        return Recording(played, kube, j.learner)
    return played


def record_in_class(kube: Kube, verdict, prediction: str = "", graded: list | None = None) -> None:
    """A joined learner's verdict (and predictions: free text, and graded ones right or wrong), kept in their
    namespace for the instructor's ``class status``; else nothing."""
    if j := joined():
        from kailab.classroom.records import record_object

        kube.apply(record_object(j.learner, verdict, prediction, graded or []))


def slice_selectors() -> tuple[str, str]:
    """(queues, nodes) label selectors of what this lab shows: a class learner's slice; ("", "") everything."""
    if j := joined():
        from kailab.classroom import plan
        from kailab.labels import NODEPOOL_LABEL

        return f"{NODEPOOL_LABEL}={j.learner}", plan.node_selector(j.learner)
    return "", ""


def pod_namespaces(kube: Kube) -> list[str] | None:
    """The namespaces whose pods the lab may see: None, every one; a class's learner's, their lesson namespaces
    (those that exist)."""
    if j := joined():
        from kailab.classroom.plan import lesson_namespaces

        names = {ns.metadata.name for ns in kube.core.list_namespace(label_selector=owner().selector()).items}
        return [n for n in lesson_namespaces(j.learner) if n in names]
    return None


def pods(kube: Kube) -> list:
    """Every pod the lab may see (:func:`pod_namespaces`)."""
    from kailab.pods import pod_view
    from kailab.status import all_pods

    namespaces = pod_namespaces(kube)
    if namespaces is None:
        return all_pods(kube)
    return [pod_view(p) for n in namespaces for p in kube.pods(n)]
