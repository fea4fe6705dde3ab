"""The workload operators on the local runtime: each a process of the lab, started when a lesson first needs it.

Each runs as upstream installs it (its Deployment's arguments, its config file, its CRDs and webhook
configurations, all rendered from its module: :func:`kailab.operators.manifests`), with what a process on this
machine needs instead of a pod: the lab's kubeconfig, loopback ports of its own (KAI's podgroup-controller holds
:8080, so no operator keeps its default port), and no leader election (one replica, as in a pod).

Webhooks are served, as upstream's install serves them: JobSet's and LeaderWorkerSet's mutating webhooks default
their objects and label their pods (LWS's pod webhook gives each pod the worker-index and group-index labels its
controllers and KAI's LWS grouper read), and the training-operator's validate its jobs; KubeRay's install serves
none. Only the certificate is the lab's: kwokctl's (its "single cert for all components", valid for 127.0.0.1,
signed by the lab's CA: ``kwok/clusters/kailab/pki``), and each webhook configuration names the operator by URL
on loopback, where upstream names its Service. The configurations are applied before the operator starts (as an
install applies them with its Deployment), so no object of its kinds is ever admitted unseen by its webhooks.

Everything lives in ``kai/operators/<name>/`` (its config file and certificates); its process in the
lab's process group (``kai/pids``), so ``kailab down`` stops it with KAI's components.
"""

from __future__ import annotations

import base64
import fcntl
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import yaml

from kailab import build, operators, versions
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import MANAGED
from kailab.operators import Operator, OperatorControl, OperatorStatus
from kailab.progress import Progress
from kailab.runtimes.processes import ProcessGroup, ProcessSpec, free_port, port_in_use
from kailab.waiting import until

if TYPE_CHECKING:
    from kailab.runtimes.local import LocalRuntime

# The training-operator v1.9.3 starts its controllers only once its certificate rotator sees a certificate in this
# fixed folder (pkg/cert/cert.go: certDir; cert-controller's ensureCertsMounted only checks that tls.crt exists),
# where a pod has its Secret mounted. Its webhook server reads $TMPDIR/k8s-webhook-server/serving-certs (controller-
# runtime's default), which the lab points at the operator's own folder; the fixed one only has to exist.
TRAINING_OPERATOR_CERT_CHECK = Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")
HOST_FILE_RECORD = "made-host-file"  # in the operator's folder: kailab wrote TRAINING_OPERATOR_CERT_CHECK


@dataclass
class Launch:
    """How one operator runs here: its process, the cluster objects it needs before it starts, its webhook port."""

    spec: ProcessSpec
    objects: list[dict] = field(default_factory=list)  # applied before it starts (webhook configurations …)
    webhook_port: int | None = None


def pki_dir(runtime: LocalRuntime) -> Path:
    """kwokctl's certificates of the lab's cluster (ca.crt; admin.crt/admin.key, valid for 127.0.0.1)."""
    return runtime.cluster_dir / "pki"


class LocalOperators(OperatorControl):
    """The operators of a local lab, as processes of its process group."""

    def __init__(self, runtime: LocalRuntime, timeout: float = 60):
        self.rt = runtime
        self.timeout = timeout

    @property
    def group(self) -> ProcessGroup:
        return self.rt.kai_processes

    def workdir(self, op: Operator) -> Path:
        return self.group.root / "operators" / op.name

    def ensure(self, name: str, progress: Progress) -> None:
        op = operators.operator(name)
        if self.rt._state() is None:
            raise KailabError(
                f"No local lab is running to start {op.describe()} in.", hint="Bring one up: kailab up --runtime local"
            )
        work = self.workdir(op)
        work.mkdir(parents=True, exist_ok=True)
        with open(work / ".start-lock", "w") as held:  # scenarios side by side may ask at once
            fcntl.flock(held, fcntl.LOCK_EX)
            if self.group.pid(op.binary) is not None:
                return
            bins = build.ensure_built([op.build], progress, self.rt.cache, lock=op.build_lock)
            kubectl = build.ensure_built([versions.build("kubernetes")], Progress(quiet=True), self.rt.cache)["kubectl"]
            objects = operators.manifests(op, kubectl, self.rt.cache)
            kube = Kube(self.rt.kubeconfig())
            with progress.step(f"Starting {op.describe()} in this lab") as step:
                theirs = operators.install_crds(kube, op, objects)
                launch = LAUNCHERS[op.name](self, op, bins[op.binary], objects, work)
                for obj in launch.objects:
                    kube.apply(obj)
                if op.name == "training-operator":
                    self._ensure_cert_check(work)
                self.group.start(launch.spec)
                self._wait_serving(op, launch, work)
                step.note(
                    f"pid {self.group.pid(op.binary)}"
                    + (f"; CRDs already there: {', '.join(theirs)}" if theirs else "")
                )

    def _wait_serving(self, op: Operator, launch: Launch, work: Path) -> None:
        """Until its health endpoint answers 200 and, with webhooks, its webhook port listens."""
        from kailab.runtimes.local_kai import wait_healthy

        wait_healthy([launch.spec], self.group, timeout=self.timeout)
        if launch.webhook_port is None:
            return

        def listening() -> bool:
            if self.group.pid(op.binary) is None:
                raise self.group.fail(op.binary, "exited while starting")
            if op.name == "training-operator":
                self._ensure_cert_check(work)  # another lab's down may have removed it meanwhile
            return port_in_use(launch.webhook_port or 0)

        until(
            listening,
            self.timeout,
            0.2,
            fail=lambda _: self.group.fail(op.binary, f"served no webhooks within {self.timeout:.0f}s"),
        )

    def _ensure_cert_check(self, work: Path) -> None:
        """The fixed file the training-operator waits for (:data:`TRAINING_OPERATOR_CERT_CHECK`), written when
        missing (the lab's certificate: public), and remembered so ``down`` removes it again."""
        path = TRAINING_OPERATOR_CERT_CHECK
        if path.exists():
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = (pki_dir(self.rt) / "admin.crt").read_text()
            path.write_text(text)
        except OSError as e:
            raise KailabError(
                f"The training-operator {versions.TRAINING_OPERATOR_VERSION} starts only once {path} exists "
                f"(its pkg/cert/cert.go), and kailab cannot write it: {e.strerror or e}.",
                hint=f"Make {path.parent} writable for you (another user may own it), then run again.",
            ) from None
        (work / HOST_FILE_RECORD).write_text(text)

    def status(self) -> list[OperatorStatus]:
        out = []
        for op in operators.OPERATORS.values():
            pid = self.group.pid(op.binary)
            if pid is not None:
                out.append(OperatorStatus(op.name, True, f"{op.describe()}, pid {pid}"))
            elif self.group.log_path(op.binary).exists():
                out.append(OperatorStatus(op.name, False, f"exited; log: {self.group.log_path(op.binary)}"))
            else:
                out.append(OperatorStatus(op.name, False, "not started (a lesson that needs it starts it)"))
        return out

    def memory_mib(self, name: str) -> float | None:
        """The operator's RSS (MiB) while it runs, else None."""
        ident = self.group.identity(operators.operator(name).binary)
        try:
            return psutil.Process(ident.pid).memory_info().rss / 2**20 if ident else None
        except psutil.Error:
            return None

    # -- what each operator needs here -------------------------------------------------------

    def webhook_objects(self, op: Operator, objects: list[dict], port: int, rename: dict[str, str]) -> list[dict]:
        """Upstream's webhook configurations, each webhook called by URL on loopback with the lab's CA.
        ``rename``: configurations given another name (one the operator itself would overwrite)."""
        ca = base64.b64encode((pki_dir(self.rt) / "ca.crt").read_bytes()).decode()
        out = []
        for conf in operators.of_kind(objects, "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            name = rename.get(conf["metadata"]["name"], conf["metadata"]["name"])
            hooks = []
            for hook in conf["webhooks"]:
                path = hook["clientConfig"]["service"].get("path", "/")
                hooks.append({**hook, "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}})
            meta = {"name": name, "labels": {**conf["metadata"].get("labels", {}), **MANAGED}}
            out.append({"apiVersion": conf["apiVersion"], "kind": conf["kind"], "metadata": meta, "webhooks": hooks})
        return out

    def serving_certs(self, folder: Path) -> Path:
        """``folder`` holding tls.crt and tls.key (controller-runtime's names): the lab's serving certificate."""
        folder.mkdir(parents=True, exist_ok=True)
        for source, target in (("admin.crt", "tls.crt"), ("admin.key", "tls.key")):
            shutil.copyfile(pki_dir(self.rt) / source, folder / target)
        (folder / "tls.key").chmod(0o600)
        return folder

    def process(
        self, op: Operator, argv: list[str], health_port: int, env: dict[str, str] | None = None
    ) -> ProcessSpec:
        """The operator's process, reading the lab's kubeconfig (named on its command line, as KAI's are)."""
        return ProcessSpec(
            op.binary,
            [*argv, f"--kubeconfig={self.rt.kubeconfig()}"],
            {"KUBECONFIG": str(self.rt.kubeconfig()), **(env or {})},
            health_url=f"http://127.0.0.1:{health_port}/readyz",
        )


def _kuberay(ctl: LocalOperators, op: Operator, binary: Path, objects: list[dict], work: Path) -> Launch:
    """KubeRay as its install runs it, with KAI as its batch scheduler (KubeRay's guide for KAI: the chart's
    batchScheduler.name=kai-scheduler): it gives each pod schedulerName kai-scheduler and its RayCluster's queue
    label (controllers/ray/batchscheduler/kai-scheduler)."""
    args = _container(operators.the_deployment(op, objects)).get("args") or []
    metrics, health = free_port(), free_port()
    argv = [
        str(binary),
        *args,
        f"--metrics-addr=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        "--enable-leader-election=false",
        "--batch-scheduler=kai-scheduler",
    ]
    return Launch(ctl.process(op, argv, health))


def _training_operator(ctl: LocalOperators, op: Operator, binary: Path, objects: list[dict], work: Path) -> Launch:
    """The training-operator with its webhooks served. Its certificate rotator (cert-controller) cannot be turned
    off: it needs its namespace and Secret (upstream's, from the install) and patches the CA into a webhook
    configuration of a fixed name — so the lab's configuration has another name, and keeps the lab's CA."""
    deployment = operators.the_deployment(op, objects)
    namespace = deployment["metadata"]["namespace"]
    secret = next(s for s in operators.of_kind(objects, "Secret"))
    before = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": dict(MANAGED)}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret["metadata"]["name"], "namespace": namespace, "labels": dict(MANAGED)},
        },
    ]
    tmp = work / "tmp"
    ctl.serving_certs(tmp / "k8s-webhook-server" / "serving-certs")
    metrics, health, webhook = free_port(), free_port(), free_port()
    argv = [
        str(binary),
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        f"--webhook-server-port={webhook}",
    ]
    rename = {
        conf["metadata"]["name"]: f"kailab-{conf['metadata']['name']}" for conf in objects if "Webhook" in conf["kind"]
    }
    hooks = ctl.webhook_objects(op, objects, webhook, rename)
    env = {"MY_POD_NAMESPACE": namespace, "TMPDIR": str(tmp)}
    return Launch(ctl.process(op, argv, health, env), [*before, *hooks], webhook)


def _config_file_operator(ctl: LocalOperators, op: Operator, binary: Path, objects: list[dict], work: Path) -> Launch:
    """JobSet or LeaderWorkerSet: upstream's config file (its ConfigMap) with the lab's addresses, leader election
    off, and the lab's certificate instead of the internal one (as with upstream's cert-manager option)."""
    deployment = operators.the_deployment(op, objects)
    container = _container(deployment)
    (config_map,) = [
        c for c in operators.of_kind(objects, "ConfigMap") if c["metadata"]["name"].endswith("manager-config")
    ]
    (config_text,) = config_map["data"].values()
    metrics, health, webhook = free_port(), free_port(), free_port()
    config = yaml.safe_load(config_text)
    config.update(
        {
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(ctl.serving_certs(work / "certs"))},
            "metrics": {"bindAddress": f"127.0.0.1:{metrics}"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        }
    )
    conf = work / "config.yaml"
    conf.write_text(yaml.safe_dump(config, sort_keys=False))
    args = [a for a in container.get("args") or [] if not a.startswith("--config=")]
    argv = [str(binary), f"--config={conf}", *args, "--leader-elect=false"]
    return Launch(ctl.process(op, argv, health), ctl.webhook_objects(op, objects, webhook, {}), webhook)


def _container(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]["containers"][0]


LAUNCHERS = {
    "kuberay": _kuberay,
    "training-operator": _training_operator,
    "jobset": _config_file_operator,
    "lws": _config_file_operator,
}


def forget_host_files(kai_root: Path) -> None:
    """Remove what the lab's operators wrote outside the lab folder (``down``): the training-operator's fixed
    certificate file, when this lab wrote it and it is unchanged."""
    record = kai_root / "operators" / "training-operator" / HOST_FILE_RECORD
    try:
        if TRAINING_OPERATOR_CERT_CHECK.read_text() == record.read_text():
            TRAINING_OPERATOR_CERT_CHECK.unlink()
            for folder in (TRAINING_OPERATOR_CERT_CHECK.parent, TRAINING_OPERATOR_CERT_CHECK.parent.parent):
                folder.rmdir()  # only when empty
    except OSError:
        pass
