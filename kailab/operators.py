"""The workload operators whose pods KAI's pod-grouper gangs, and the one interface a runtime gives to run them.

What each operator is, which kinds it serves, where its manifests are, and :class:`OperatorControl`.

KAI v0.17.0's pod-grouper has a plugin for each operator's kinds (pkg/podgrouper/podgrouper/hub/hub.go maps the
kind to its grouper; plugins/{ray,kubeflow,jobset,leaderworkerset}/ compute the PodGroup), and its go.mod pins the
operators' modules: KubeRay's ray-operator, Kubeflow's training-operator, JobSet and LeaderWorkerSet. kailab runs
those very versions (``versions.OPERATOR_BUILDS``), built from their Go modules, never a fake: the pods a lesson
watches are the ones the operator made.

An operator runs only once a lesson needs it: a scenario asks ``runtime.capabilities().operators.ensure(name, progress)`` (or
:meth:`OperatorControl.ensure_for` with the objects it is about to apply), and the runtime builds it the first time,
installs its CRDs and starts it. The CRDs, webhook configurations and Deployment come from upstream's own
kustomization inside the module (:func:`manifests`), read from Go's module cache, never copied into kailab.
"""

from __future__ import annotations

import fcntl
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from kailab import build, versions
from kailab.errors import KailabError
from kailab.kube import Kube, wait_crds_established
from kailab.labels import JOBSET_API, LWS_API, MANAGED, PYTORCH_API, RAY_API
from kailab.paths import cache_home
from kailab.progress import Progress
from kailab.versions import GoBuild

KAI_GROUPERS = "pkg/podgrouper/podgrouper/plugins"  # in KAI v0.17.0


@dataclass(frozen=True)
class Operator:
    """One workload operator: its pinned build, the kinds whose pods it makes, and where upstream keeps its install.

    ``kustomization``: the folder of the module that upstream installs it from (its CRDs, RBAC, Deployment, webhook
    configurations); ``crds`` and ``deployment`` are what that folder renders (tests/unit/test_operators.py holds
    them to it), known here so a cluster kailab did not make can be read without Go.
    ``image_name``: the end of its image's repository (a cluster kailab did not make is searched for it).
    ``webhooks``: whether upstream's install serves admission webhooks.
    ``grouper``: the KAI pod-grouper plugin that decides this operator's PodGroups.
    ``install``: how upstream says to install it, with ``{version}`` for the pinned version (``{number}``: without
    its ``v``), so the version is written once, in versions.py.
    ``pod_labels``: the labels the operator puts on its pods that that plugin reads to put each pod in its subgroup
    (tests/fleet/test_operators_on_kai.py holds the operator's real pods to them).
    """

    name: str
    title: str
    kinds: tuple[tuple[str, str], ...]  # (apiVersion, kind) of the objects a lesson applies
    kustomization: str
    crds: tuple[str, ...]
    deployment: str
    image_name: str
    grouper: str
    install: str
    pod_labels: tuple[str, ...]
    webhooks: bool = True

    @property
    def build(self) -> GoBuild:
        return versions.build(self.name)

    @property
    def binary(self) -> str:
        (name,) = self.build.binaries
        return name

    @property
    def version(self) -> str:
        return self.build.version

    @property
    def build_lock(self) -> str:
        """Its own build lock: its first build holds up nothing that does not need it."""
        return f".lock-{self.name}"

    @property
    def install_hint(self) -> str:
        return self.install.format(version=self.version, number=self.version.removeprefix("v"))

    def describe(self) -> str:
        return f"{self.title} {self.version}"


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator(
            name="kuberay",
            title="KubeRay",
            kinds=((RAY_API, "RayCluster"), (RAY_API, "RayJob"), (RAY_API, "RayService")),
            kustomization="config/default",
            crds=("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io"),
            deployment="kuberay-operator",
            image_name="kuberay/operator",
            grouper=f"{KAI_GROUPERS}/ray/",
            pod_labels=("ray.io/group",),  # ray_grouper.go assignRayPodToSubGroup: utils.RayNodeGroupLabelKey
            # KubeRay's guide for KAI (docs.ray.io, k8s-ecosystem/kai-scheduler): the chart's batchScheduler.name
            install="helm install kuberay-operator kuberay/kuberay-operator --version {number} "
            "--set batchScheduler.name=kai-scheduler",
            # Its only webhook validates RayClusters, and main.go registers it only with ENABLE_WEBHOOKS=true, which
            # its default install does not set.
            webhooks=False,
        ),
        Operator(
            name="training-operator",
            title="Kubeflow training-operator",
            kinds=tuple(
                (PYTORCH_API, k) for k in ("PyTorchJob", "TFJob", "XGBoostJob", "JAXJob", "PaddleJob", "MPIJob")
            ),
            kustomization="manifests/overlays/standalone",
            crds=tuple(
                f"{p}.kubeflow.org"
                for p in ("jaxjobs", "mpijobs", "paddlejobs", "pytorchjobs", "tfjobs", "xgboostjobs")
            ),
            deployment="training-operator",
            image_name="training-operator",
            grouper=f"{KAI_GROUPERS}/kubeflow/",
            # kubeflow/pytorch/pytorch_grouper.go: the replica type (master, worker) and a worker's index
            pod_labels=("training.kubeflow.org/replica-type", "training.kubeflow.org/replica-index"),
            install='kubectl apply --server-side -k "github.com/kubeflow/training-operator.git/manifests/'
            'overlays/standalone?ref={version}"',
        ),
        Operator(
            name="jobset",
            title="JobSet",
            kinds=((JOBSET_API, "JobSet"),),
            kustomization="config/default",
            crds=("jobsets.jobset.x-k8s.io",),
            deployment="jobset-controller-manager",
            image_name="jobset/jobset",
            grouper=f"{KAI_GROUPERS}/jobset/",
            # jobset/jobset_grouper.go: which replicatedJob, and which replica of it
            pod_labels=("jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-index"),
            install="kubectl apply --server-side -f "
            "https://github.com/kubernetes-sigs/jobset/releases/download/{version}/manifests.yaml",
        ),
        Operator(
            name="lws",
            title="LeaderWorkerSet",
            kinds=((LWS_API, "LeaderWorkerSet"),),
            kustomization="config/default",
            crds=("leaderworkersets.leaderworkerset.x-k8s.io",),
            deployment="lws-controller-manager",
            image_name="lws/lws",
            grouper=f"{KAI_GROUPERS}/leaderworkerset/",
            # leaderworkerset/lws_grouper.go: which group, and leader (index 0) or worker
            pod_labels=("leaderworkerset.sigs.k8s.io/group-index", "leaderworkerset.sigs.k8s.io/worker-index"),
            install="kubectl apply --server-side -f "
            "https://github.com/kubernetes-sigs/lws/releases/download/{version}/manifests.yaml",
        ),
    )
}


def operator(name: str) -> Operator:
    """The operator called ``name``; a KailabError naming the ones kailab runs otherwise."""
    if name not in OPERATORS:
        raise KailabError(
            f"kailab runs no operator called {name!r}.",
            hint=f"The operators it runs: {', '.join(OPERATORS)}.",
        )
    return OPERATORS[name]


def operator_for(api_version: str, kind: str) -> Operator | None:
    """The operator that makes the pods of a ``kind`` object, or None for a kind no operator of kailab's serves."""
    return next((op for op in OPERATORS.values() if (api_version, kind) in op.kinds), None)


def needed_by(objects: Iterable[dict]) -> list[Operator]:
    """The operators these objects need (each once, in the order first needed); other kinds need none."""
    found: list[Operator] = []
    for obj in objects:
        op = operator_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if op is not None and op not in found:
            found.append(op)
    return found


def lessons_of(op: Operator) -> list[str]:
    """The built-in lessons with a workload of ``op``'s kinds, in teaching order."""
    from kailab.lesson import EXERCISE_NAMES
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario

    kinds = {kind for _, kind in op.kinds}
    return [
        name
        for name in EXERCISE_NAMES
        if any(w.kind in kinds for w in load_scenario(EXERCISES / f"{name}.yaml").workloads)
    ]


# ---------------------------------------------------------------- upstream's install, rendered from the module


def manifests(op: Operator, kubectl: Path, cache: Path | None = None) -> list[dict]:
    """Upstream's install of ``op`` (CRDs, RBAC, Deployment, webhook configurations…): its module's kustomization
    rendered with ``kubectl kustomize``, once per pinned version (kept in the cache, never in kailab's tree), and
    read as JSON from there after its first reading (:func:`_parsed`)."""
    cache = cache or cache_home()
    out = cache / "operators" / f"{op.name}-{op.version}.yaml"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.parent / f".{op.name}.lock", "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            if not out.exists():
                folder = build.module_source(op.build) / op.kustomization
                text = _kustomize(kubectl, folder, op)
                partial = out.with_name(out.name + ".partial")
                partial.write_text(text)
                partial.rename(out)
    return _parsed(out)


def _parsed(rendered: Path) -> list[dict]:
    """The objects of a rendered install: its YAML read once (megabytes: KubeRay's 3 MB took 2.7 s of CPU in Python's
    YAML reader), then a JSON copy beside it, written after the YAML and read in a few milliseconds."""
    copy = rendered.with_suffix(".json")
    try:
        if copy.stat().st_mtime >= rendered.stat().st_mtime:
            objects = json.loads(copy.read_text())
            if isinstance(objects, list):
                return objects
    except (OSError, ValueError):
        pass  # none yet, or damaged: read the YAML again
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's when PyYAML has it: the same objects, 4× faster
    objects = [d for d in yaml.load_all(rendered.read_text(), Loader=loader) if d]
    try:
        text = json.dumps(objects)
    except (TypeError, ValueError):
        return objects  # a value JSON does not hold (a YAML date): no copy, the YAML read each time
    if json.loads(text) != objects:  # a key JSON would turn into a string: no copy either
        return objects
    partial = copy.with_name(f"{copy.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text)
        partial.replace(copy)
    except OSError:
        partial.unlink(missing_ok=True)  # a cache it cannot write: the YAML read each time, as before
    return objects


def _kustomize(kubectl: Path, folder: Path, op: Operator) -> str:
    import subprocess

    proc = subprocess.run([str(kubectl), "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise KailabError(
            f"Rendering {op.describe()}'s install from its module failed (kubectl kustomize {folder}).",
            details=(proc.stderr or proc.stdout).strip()[-2000:],
        )
    return proc.stdout


def of_kind(objects: list[dict], *kinds: str) -> list[dict]:
    return [o for o in objects if o.get("kind") in kinds]


def the_deployment(op: Operator, objects: list[dict]) -> dict:
    """Upstream's Deployment of the operator, from its rendered install."""
    found = [d for d in of_kind(objects, "Deployment") if d["metadata"]["name"] == op.deployment]
    if len(found) != 1:
        raise KailabError(f"{op.describe()}'s install has no Deployment {op.deployment} (its module changed?).")
    return found[0]


def install_crds(kube: Kube, op: Operator, objects: list[dict]) -> list[str]:
    """Apply the operator's CRDs (labelled as kailab's) and wait until they are served; return the names of those
    found installed by someone else, which are used as they are, never replaced."""
    from kailab.ownership import Owner

    theirs = []
    names = []
    for crd in of_kind(objects, "CustomResourceDefinition"):
        name = crd["metadata"]["name"]
        names.append(name)
        found = kube.crd(name)
        if found is not None and not Owner().owns(found.get("labels")):
            theirs.append(name)
            continue
        crd = {**crd, "metadata": {**crd["metadata"], "labels": {**crd["metadata"].get("labels", {}), **MANAGED}}}
        kube.apply(crd)
    wait_crds_established(kube, names, what=f"{op.describe()}'s CRDs")
    kube.dyn.resources.invalidate_cache()
    return theirs


def delete_workloads(kube: Kube, namespace: str) -> None:
    """Delete every object of an operator's kinds in ``namespace`` (those the cluster serves), so its operator makes
    no more pods there: ``Kube.empty_namespace`` knows only Kubernetes' own workloads. An operator none of whose
    CRDs the cluster has costs one read per CRD (never an API discovery)."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import DynamicApiError, ForbiddenError, ResourceNotFoundError

    for op in OPERATORS.values():
        try:
            if not any(kube.crd(c) is not None for c in op.crds):
                continue
        except ApiException as e:
            if e.status != 403:
                raise  # a learner may not read CRDs: their own namespace's objects are tried below
        for api_version, kind in op.kinds:
            try:
                found = kube.list(api_version, kind, namespace=namespace)
            except (ForbiddenError, ResourceNotFoundError):
                continue  # not served, or not this user's to list: nothing of theirs to delete
            except DynamicApiError as e:
                if e.status == 404:
                    continue
                raise
            for obj in found:
                kube.delete(api_version, kind, obj["metadata"]["name"], namespace)


# ---------------------------------------------------------------- the runtime's part


@dataclass(frozen=True)
class OperatorStatus:
    """What a lab says of one operator: it runs (``running``), or why not (``detail``)."""

    name: str
    running: bool
    detail: str


class OperatorControl(ABC):
    """The workload operators of one lab: each started when a lesson first needs it, stopped with the lab.

    The local runtime runs each as a process of the lab (kailab/runtimes/local_operators.py); a cluster kailab did
    not make is only read: an operator someone installed there is used, one missing is named with how to install it
    (kailab/runtimes/existing_operators.py).
    """

    @abstractmethod
    def ensure(self, name: str, progress: Progress) -> None:
        """Make operator ``name`` run on this lab and return once it serves (a no-op when it already does): built
        the first time (with progress), its CRDs installed, started. A KailabError says what is wrong."""

    @abstractmethod
    def status(self) -> list[OperatorStatus]:
        """Each operator kailab knows, as this lab has it now."""

    def can_run(self) -> frozenset[str]:
        """The operators a lesson may ask of this lab: every one where kailab starts them (a lab it made)."""
        return frozenset(OPERATORS)

    def kinds(self) -> frozenset[str]:
        """The kinds whose pods this lab's operators can make (``RayCluster`` …): what a scenario may apply."""
        return frozenset(kind for name in self.can_run() for _, kind in OPERATORS[name].kinds)

    def ensure_for(self, objects: Iterable[dict], progress: Progress) -> list[str]:
        """Every operator ``objects`` need (by apiVersion and kind), ensured; their names."""
        needed = needed_by(objects)
        for op in needed:
            self.ensure(op.name, progress)
        return [op.name for op in needed]
