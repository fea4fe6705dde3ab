"""The workload operators on the kind runtime: upstream's install in the cluster, with an image made here.

Each operator's image is made from the binary the local runtime runs (``versions.OPERATOR_BUILDS``), at
``/manager`` as upstream's Deployments call it, run as 65532 (kind_offline's image writer: no registry, no Docker
build), and loaded into the node with ``kind load image-archive`` — online or offline alike, as KAI's usage
database is (kailab/runtimes/kind_usage_db.py). Its install is upstream's own kustomization, rendered from the
module (:func:`kailab.operators.manifests`) and applied server-side, with kailab's image, the lab's label, requests
a one-node lab can give, and KubeRay told to use KAI as its batch scheduler as KubeRay's guide for KAI does. Its
webhooks and their certificates are upstream's: in a cluster, each operator's internal certificate management
works as designed (a Secret mounted into its pod, the CA patched into its webhook configurations).
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kailab import build, operators
from kailab.errors import KailabError, ToolMissing
from kailab.operators import Operator, OperatorControl, OperatorStatus
from kailab.paths import cache_home
from kailab.progress import Progress
from kailab.runtimes import kind_offline

if TYPE_CHECKING:
    from kailab.runtimes.kind import KindRuntime

MANAGER = "manager"  # upstream's Deployments run /manager
# Upstream asks up to 1 CPU and 1 GiB per operator (LWS), sized for a production cluster; the lab's one node also
# runs the control plane and KAI.
LAB_REQUESTS = {"cpu": "10m", "memory": "64Mi"}


def image(op: Operator) -> str:
    return f"{kind_offline.REGISTRY}/{op.name}:{op.version}"


def archive_path(op: Operator, cache: Path | None = None) -> Path:
    return kind_offline.offline_home(cache) / f"{op.name}-{op.version}.tar"


def ensure_archive(op: Operator, progress: Progress, cache: Path | None = None) -> Path:
    """The operator's image archive, made once from its cached binary (built first if need be), under its lock."""
    cache = cache or cache_home()
    binary = build.ensure_built([op.build], progress, cache, lock=op.build_lock)[op.binary]
    out = archive_path(op, cache)
    out.parent.mkdir(parents=True, exist_ok=True)
    with build._locked(cache, op.build_lock):
        if not out.exists():
            with progress.step(f"Making the image {image(op)} (first time only)"):
                recipe = kind_offline.binary_image(op.name, image(op), MANAGER, binary, User="65532:65532")
                with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
                    kind_offline.write_image(recipe, out, Path(tmp))
    return out


def install_objects(op: Operator, objects: list[dict], labels: dict[str, str]) -> list[dict]:
    """Upstream's install without its CRDs (applied apart: one installed by someone else is kept), each object
    with ``labels``, its Deployment running kailab's image with the lab's requests."""
    out = []
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition":
            continue
        obj = copy.deepcopy(obj)
        obj["metadata"].setdefault("labels", {}).update(labels)
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == op.deployment:
            container = obj["spec"]["template"]["spec"]["containers"][0]
            container.update(image=image(op), imagePullPolicy="IfNotPresent")
            container["resources"] = {**(container.get("resources") or {}), "requests": dict(LAB_REQUESTS)}
            if op.name == "kuberay":  # the chart's batchScheduler.name=kai-scheduler
                container["args"] = [*(container.get("args") or []), "--batch-scheduler=kai-scheduler"]
        out.append(obj)
    return out


def steps(
    home: Path, cluster: str, op: Operator, archive: Path, objects: list[dict], labels: dict[str, str]
) -> list[tuple[str, list[list[str]], dict[str, str]]]:
    """Load the image, apply the install server-side, wait until its Deployment has rolled out: (title, commands,
    files written first) of each step, for the kind runtime's plan (its ``Step``)."""
    deployment = operators.the_deployment(op, objects)
    kubectl = ["kubectl", "--kubeconfig", str(home / "kubeconfig.yaml")]
    manifest = f"operator-{op.name}.yaml"
    return [
        (
            f"Loading {op.describe()}'s image into the cluster (kind load image-archive)",
            [["kind", "load", "image-archive", str(archive), "--name", cluster]],
            {},
        ),
        (
            f"Starting {op.describe()}",
            [
                [*kubectl, "apply", "--server-side", "--force-conflicts", "-f", str(home / manifest)],
                [
                    *kubectl,
                    "-n",
                    deployment["metadata"]["namespace"],
                    "rollout",
                    "status",
                    f"deployment/{op.deployment}",
                    "--timeout=180s",
                ],
            ],
            {manifest: yaml.safe_dump_all(install_objects(op, objects, labels), sort_keys=False)},
        ),
    ]


class KindOperators(OperatorControl):
    """The operators of a kind lab: each installed in the cluster the first time a lesson needs it."""

    def __init__(self, runtime: KindRuntime, cluster: str, labels: dict[str, str], make_step: Callable[..., Any]):
        self.rt = runtime
        self.cluster = cluster  # the kind cluster's name
        self.labels = labels  # the lab's label, on everything it applies
        self.make_step = make_step  # the kind runtime's Step(title, commands, files)

    def kubectl(self) -> Path:
        """The kubectl that renders upstream's kustomizations: the lab's (offline: kailab's own), else PATH's."""
        found = self.rt.tools.get("kubectl") or shutil.which("kubectl")
        if not found:
            raise ToolMissing("The kind runtime needs kubectl, not found on PATH.")
        return Path(found)

    def ensure(self, name: str, progress: Progress) -> None:
        op = operators.operator(name)
        if self.rt._state() is None:
            raise KailabError(f"No kind lab is running to start {op.describe()} in.", hint="kailab up --runtime kind")
        if self._ready(op):
            return
        archive = ensure_archive(op, progress)
        objects = operators.manifests(op, self.kubectl())
        operators.install_crds(self.rt.kube(), op, objects)
        for title, commands, files in steps(self.rt.home, self.cluster, op, archive, objects, self.labels):
            self.rt.execute(self.make_step(title, commands, files), None, progress)

    def _ready(self, op: Operator) -> bool:
        return next(s for s in self.status() if s.name == op.name).running

    def status(self) -> list[OperatorStatus]:
        try:
            items = self.rt.kube().apps.list_deployment_for_all_namespaces(_request_timeout=10).items
        except Exception as e:  # the cluster does not answer: nothing runs, as far as kailab can tell
            return [OperatorStatus(n, False, f"could not tell: {type(e).__name__}") for n in operators.OPERATORS]
        out = []
        for op in operators.OPERATORS.values():
            found = [d for d in items if d.metadata.name == op.deployment]
            ready = bool(found) and ((found[0].status.ready_replicas or 0) if found[0].status else 0) >= 1
            detail = f"{op.describe()} ready" if ready else "deployed, not ready" if found else "not started"
            out.append(OperatorStatus(op.name, ready, detail))
        return out
