"""The workload operators on a cluster kailab did not make: found, never installed.

An operator counts as installed when the cluster serves its CRDs and a Deployment of its controller is ready (found
by upstream's Deployment name, or by its image). kailab uses what it finds — a CRD someone else installed is used as
it is, never replaced — and names what is missing with upstream's way to install it. What kailab may not read (RBAC)
is said as such ("could not tell"), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes.client.exceptions import ApiException

from kailab import operators, versions
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.operators import Operator, OperatorControl, OperatorStatus, lessons_of
from kailab.preflight import OK, WARN, Finding
from kailab.progress import Progress


@dataclass(frozen=True)
class Found:
    """What the cluster has of one operator: CRDs missing, its controller (namespace/name) or None, and what could
    not be read (empty when everything could)."""

    op: Operator
    missing_crds: tuple[str, ...]
    controller: str | None
    unread: str = ""

    @property
    def installed(self) -> bool:
        return not self.missing_crds and self.controller is not None

    def describe(self) -> str:
        if self.installed:
            return f"{self.op.title}: installed (controller {self.controller})"
        parts = []
        if self.missing_crds:
            parts.append(f"no CRD {', '.join(self.missing_crds)}")
        if self.controller is None:
            parts.append(
                f"could not tell whether its controller runs ({self.unread})" if self.unread else "no ready controller"
            )
        return f"{self.op.title}: {'; '.join(parts)}"


def find(kube: Kube, op: Operator, deployments: list | None, unread: str = "") -> Found:
    """``op`` on this cluster; ``deployments``: every Deployment (None when they could not be listed, ``unread``)."""
    missing = tuple(
        name for name in op.crds if kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name) is None
    )
    controller = None
    for d in deployments or []:
        images = [c.image or "" for c in d.spec.template.spec.containers or []]
        named = d.metadata.name == op.deployment or any(_repository(i).endswith(op.image_name) for i in images)
        if named and ((d.status.ready_replicas if d.status else 0) or 0) >= 1:
            controller = f"{d.metadata.namespace}/{d.metadata.name}"
            break
    return Found(op, missing, controller, unread if deployments is None else "")


def _repository(image: str) -> str:
    """``registry/path/name:tag@digest`` → ``registry/path/name``."""
    ref = image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    return name if name and "/" not in tag else ref


def find_all(kube: Kube) -> list[Found]:
    """Every operator kailab knows, as this cluster has it."""
    try:
        deployments, unread = kube.apps.list_deployment_for_all_namespaces(_request_timeout=10).items, ""
    except ApiException as e:
        deployments, unread = None, f"Deployments: {e.status} {e.reason}"
    return [find(kube, op, deployments, unread) for op in operators.OPERATORS.values()]


def operator_findings(kube: Kube) -> list[Finding]:
    """One preflight row per operator: installed (its lessons apply) or not (they do not, and how to install it)."""
    rows = []
    for found in find_all(kube):
        kinds = ", ".join(kind for _, kind in found.op.kinds)
        lessons = lessons_of(found.op)
        which = f"the lessons {', '.join(lessons)} and any" if lessons else "lessons"
        if found.installed:
            rows.append(Finding(found.op.title, OK, f"{found.describe()}; {which} with {kinds} apply"))
        else:
            rows.append(
                Finding(
                    found.op.title,
                    WARN,
                    f"{found.describe()}; {which} with {kinds} do not apply",
                    f"To run them, install it: {found.op.install_hint}",
                )
            )
    return rows


class ExistingOperators(OperatorControl):
    """A cluster's own operators: ``ensure`` checks one is there, and says what is missing when it is not."""

    def __init__(self, kube: Kube):
        self.kube = kube

    def ensure(self, name: str, progress: Progress) -> None:
        op = operators.operator(name)
        (found,) = [f for f in find_all(self.kube) if f.op is op]
        if found.installed:
            return
        if not found.missing_crds and found.unread:
            progress.info(f"{found.describe()}; going on, since its CRDs are served.", style="yellow")
            return
        raise KailabError(
            f"This lesson needs {op.title}, which this cluster lacks: {found.describe().split(': ', 1)[1]}. "
            "kailab installs nothing on a cluster it did not make.",
            hint=f"Install {op.describe()} (the version KAI {versions.KAI_VERSION} was built against): "
            f"{op.install_hint}",
        )

    def status(self) -> list[OperatorStatus]:
        return [OperatorStatus(f.op.name, f.installed, f.describe()) for f in find_all(self.kube)]

    def can_run(self) -> frozenset[str]:
        """Only those installed here (or whose CRDs are served where its controller could not be read: ensure says
        so and goes on); never one kailab would have to install."""
        try:
            found = find_all(self.kube)
        except Exception:  # the cluster does not answer: no operator to count on
            return frozenset()
        return frozenset(f.op.name for f in found if f.installed or (not f.missing_crds and f.unread))
