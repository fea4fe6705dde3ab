"""The kind runtime: kind + KWOK + fake-gpu-operator + KAI's Helm chart, for machines with Docker.

Offline (``--offline``, or when no image registry answers) every image is made here instead
(:mod:`kailab.runtimes.kind_offline`): a node image of our own, KAI's and KWOK's images from their modules,
and kailab's GPU ledger in place of fake-gpu-operator (which is published only as images and a chart).

``plan()`` is the whole bring-up as data — a list of steps, each a list of commands —
so it is tested by reading it, and run by a :class:`Runner` that can be swapped for a
recording fake. Every step is idempotent: a second ``up`` changes nothing, and an ``up``
interrupted half-way is completed by the next one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kailab import labdir, versions
from kailab.errors import KailabError, ToolMissing
from kailab.fleet import Fleet, create_fleet
from kailab.kai_patches import PODGROUP_CRD, PODGROUP_CRD_PATCH
from kailab.kube import Kube
from kailab.labels import (
    KAI_HELM_RELEASE,
    KAI_NAMESPACE,
    KAI_SCHEDULER_DEPLOYMENT,
    NODEPOOL_LABEL,
    RESERVATION_NAMESPACE,
)
from kailab.labstate import LabState
from kailab.operators import OperatorControl
from kailab.paths import MANIFESTS
from kailab.progress import Progress
from kailab.runtimes import gpu_ledger, kind_usage_db, usage_db
from kailab.runtimes.base import ComponentHealth, LabInfo, Runtime, SchedulerControl, UpOptions
from kailab.runtimes.kind_offline import OfflineKit
from kailab.runtimes.local_kai import gpu_ledger_spec, wait_healthy
from kailab.runtimes.processes import ProcessGroup
from kailab.scheduler_settings import LAB_SCHEDULER_ARGS, SchedulerSettings
from kailab.waiting import Pending, seen, until

CLUSTER = "kailab"
COMMAND_TIMEOUT = 1800  # one command; Helm's own --timeout for KAI is 10m
# What the kind runtime writes in its lab folder; `down` removes exactly these.
OWN_ENTRIES = (
    "lab.json",
    "kubeconfig.yaml",
    "kind.yaml",
    "fake-gpu-operator-values.yaml",
    "kai-values.yaml",
    "reservation-rbac.yaml",
    "offline.json",
    "runtimeclass.yaml",
    "offline",
    kind_usage_db.MANIFEST,
)
LAB_LABEL = "kailab.io/lab"
# kind's own nodes are in a KAI node pool of their own, so the lab's KAI scheduler (node pool "") sees only the fleet's
# nodes, as on the local runtime: the same places for CPU-only pods and the same "5 node(s)" in KAI's reasons.
KIND_NODE_POOL = "kind-nodes"
KWOK_RELEASE = f"https://github.com/kubernetes-sigs/kwok/releases/download/{versions.KWOK_VERSION}"
GPU_OPERATOR_NAMESPACE = "gpu-operator"
# The chart's operator Deployment, and what the operator creates (scheduler: <scheduler-name>-<shard>).
KAI_DEPLOYMENTS = (
    "kai-operator",
    "admission",
    "binder",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
    KAI_SCHEDULER_DEPLOYMENT,
)
# KAI's operator makes the scheduler's Deployment (pods labelled app=<name>), its ConfigMap and Service for the
# chart's SchedulingShard "default" from that shard and the cluster's Config "kai-config"; it rewrites any of
# them changed by hand, so the scheduler (its Deployment: KAI_SCHEDULER_DEPLOYMENT) is stopped, started and configured
# through those two objects.
SCHEDULER_SHARD = ("schedulingshards.kai.scheduler", "default")
KAI_CONFIG = ("configs.kai.scheduler", "kai-config")
# The operator's Service for the shard names its port http-metrics (resources_for_shard.go, serviceForShard).
SCHEDULER_METRICS = f"/api/v1/namespaces/{KAI_NAMESPACE}/services/{KAI_SCHEDULER_DEPLOYMENT}:http-metrics/proxy/metrics"
TOOLS = {
    "docker": "Install Docker Engine or Docker Desktop, and start it.",
    "kind": f"Install kind {versions.KIND_VERSION} (for example: go install sigs.k8s.io/kind@{versions.KIND_VERSION}).",
    "kubectl": "Install kubectl (your package manager, or the Kubernetes release binaries).",
    "helm": "Install Helm 3.8 or newer (OCI charts need it).",
}


# Where the online kind runtime pulls from: the node image (Docker Hub), KAI's and fake-gpu-operator's charts (ghcr.io).
REGISTRIES = ("https://registry-1.docker.io/v2/", "https://ghcr.io/v2/")


def registries_unreachable(timeout: float = 5) -> str | None:
    """None when the image registries answer (any HTTP answer, 401 included), else why not."""
    import urllib.error
    import urllib.request

    for url in REGISTRIES:
        try:
            urllib.request.urlopen(url, timeout=timeout).close()
        except urllib.error.HTTPError:
            continue  # it answered
        except OSError as e:
            return f"no image registry answers ({url}: {getattr(e, 'reason', e)})"
    return None


@dataclass
class Result:
    returncode: int
    stdout: str = ""
    stderr: str = ""


Runner = Callable[[list[str]], Result]


def run_command(argv: list[str]) -> Result:
    """The real runner: run a command, capture its output."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except FileNotFoundError:
        return Result(127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return Result(124, "", f"{' '.join(argv[:3])} did not finish in {COMMAND_TIMEOUT // 60} minutes")
    return Result(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class Step:
    """One step of the bring-up: what it says, the commands it runs, and files it writes first."""

    title: str
    commands: list[list[str]]
    files: dict[str, str] = field(default_factory=dict)
    wait_for: tuple[str, ...] = ()  # Deployments in kai-scheduler that must exist and be Available
    wait_gone: tuple[str, ...] = ()  # Deployments in kai-scheduler whose pods (label app=<name>) must all be gone
    create_fleet: bool = False  # create the fleet's nodes through the client, as the local runtime does
    start_ledger: bool = False  # offline: start kailab's GPU ledger (the local runtime's) against the cluster


@dataclass(frozen=True)
class HostFacts:
    """What the kind config must allow for on this host."""

    cgroup_version: str = "2"  # the Docker engine's ("1" or "2")
    sys_resource: bool = True  # CAP_SYS_RESOURCE in this host's capability bounding set

    def describe(self) -> list[str]:
        """One line per finding, with what kailab does about it (for doctor and up)."""
        out = [f"cgroup v{self.cgroup_version} (Docker's)"]
        if self.cgroup_version == "1":
            out.append("cgroup v1: kubelet is told failCgroupV1: false (Kubernetes 1.35 refuses v1 otherwise)")
        if not self.sys_resource:
            out.append(
                "no CAP_SYS_RESOURCE in the capability bounding set: containerd in the node gets "
                "restrict_oom_score_adj = true (it cannot lower oom_score_adj)"
            )
        return out


def capability_bounding_set() -> int:
    """This process's capability bounding set (/proc/self/status CapBnd), or every bit set when unknown."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapBnd:"):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return -1


CAP_SYS_RESOURCE = 24


def host_facts(runner: Runner) -> HostFacts:
    """The Docker engine's cgroup version and this host's capability bounding set."""
    out = runner(["docker", "info", "--format", "{{.CgroupVersion}}"])
    version = out.stdout.strip() if out.returncode == 0 and out.stdout.strip() in ("1", "2") else "2"
    return HostFacts(version, bool((capability_bounding_set() >> CAP_SYS_RESOURCE) & 1))


def kind_config(host: HostFacts = HostFacts(), offline_images: Path | None = None) -> dict:
    """One control-plane node and one worker for KAI's own pods; the lab label marks the cluster as ours.

    Offline: one node only (it runs KAI's pods; kind untaints a lone control plane), which imports the images
    kailab made from ``offline_images`` (mounted) before kubelet starts, and runs etcd and pause as made here.
    """
    config: dict = {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4"}
    labels = {LAB_LABEL: "true", NODEPOOL_LABEL: KIND_NODE_POOL}
    node: dict = {"role": "control-plane", "labels": dict(labels)}
    if offline_images is None:
        config["nodes"] = [node, {"role": "worker", "labels": dict(labels)}]
    else:
        from kailab.runtimes import kind_offline

        node["extraMounts"] = [
            {"hostPath": str(offline_images), "containerPath": kind_offline.NODE_IMAGES_PATH, "readOnly": True}
        ]
        config["nodes"] = [node]
        config["networking"] = {"podSubnet": kind_offline.POD_SUBNET}
    kubeadm: list[str] = []
    containerd: list[str] = []
    if host.cgroup_version == "1":
        kubeadm.append("kind: KubeletConfiguration\nfailCgroupV1: false\n")
    if offline_images is not None:
        kubeadm.append(f"kind: ClusterConfiguration\netcd:\n  local:\n    imageTag: {kind_offline.ETCD_TAG}\n")
    cri = []
    if not host.sys_resource:
        cri.append("restrict_oom_score_adj = true")
    if offline_images is not None:
        cri.append(f'sandbox_image = "registry.k8s.io/pause:{versions.PAUSE_VERSION}"')
    if cri:
        containerd.append('[plugins."io.containerd.grpc.v1.cri"]\n' + "".join(f"  {c}\n" for c in cri))
    if kubeadm:
        config["kubeadmConfigPatches"] = kubeadm
    if containerd:
        config["containerdConfigPatches"] = containerd
    return config


def runtime_class() -> dict:
    """What fake-gpu-operator would install and KAI's admission names on GPU pods (offline: made by kailab)."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "nvidia", "labels": {LAB_LABEL: "true"}},
        "handler": "runc",
    }


def fake_gpu_operator_values(fleet: Fleet) -> dict:
    """Node pools giving the fleet's GPUs on KWOK nodes (pool label run.ai/simulated-gpu-node-pool)."""
    return {
        # KAI reserves GPUs for shared pods in its own namespace; fake-gpu-operator must look there.
        "environment": {"resourceReservationNamespace": RESERVATION_NAMESPACE},
        "topology": {
            "nodePoolLabelKey": "run.ai/simulated-gpu-node-pool",
            "nodePools": {
                p.name: {"gpuProduct": p.gpu_product, "gpuCount": p.gpus_per_node, "gpuMemory": p.gpu_memory_mib}
                for p in fleet.pools
            },
        },
        "kwokGpuDevicePlugin": {"enabled": True},
    }


# What KAI's operator asks for each shard's scheduler pod (the Config's scheduler resources). KAI's own requests
# (0.25 CPU, 512 MiB) leave room for only two learners' schedulers on a 2-core machine; a lab's scheduler of five
# KWOK nodes needs little (the local runtime's runs with no requests at all), so a class of 16 fits there.
SCHEDULER_RESOURCES = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "700m", "memory": "512Mi"}}


def kai_values() -> dict:
    """KAI's chart values: GPU sharing on (the fractions lesson), the lab's scheduler flags in the default
    SchedulingShard's args (``scheduler.args``), as the local runtime passes them, and the schedulers' requests."""
    return {
        "global": {"gpuSharing": True},
        "scheduler": {"args": dict(LAB_SCHEDULER_ARGS), "resources": SCHEDULER_RESOURCES},
    }


def reservation_rbac() -> list[dict]:
    """What KAI's own e2e setup grants fake-gpu-operator's status-updater: patch pods in KAI's reservation namespace."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "pods-patcher"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "fake-status-updater", "namespace": RESERVATION_NAMESPACE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pods-patcher"},
            "subjects": [{"kind": "ServiceAccount", "name": "status-updater", "namespace": GPU_OPERATOR_NAMESPACE}],
        },
    ]


def plan(
    home: Path, fleet: Fleet, cluster_exists: bool, host: HostFacts = HostFacts(), kit: OfflineKit | None = None
) -> list[Step]:
    """Everything ``kailab up --runtime kind`` runs, in order (``kit``: offline, with what kailab made)."""
    kc = str(home / "kubeconfig.yaml")
    kubectl = ["kubectl", "--kubeconfig", kc]
    node_image = kit.node_image if kit else versions.KIND_NODE_IMAGE
    steps = []
    if not cluster_exists:
        steps.append(
            Step(
                f"Creating kind cluster {CLUSTER} (Kubernetes node image {node_image})",
                [
                    [
                        "kind",
                        "create",
                        "cluster",
                        "--name",
                        CLUSTER,
                        "--image",
                        node_image,
                        "--config",
                        str(home / "kind.yaml"),
                        "--wait",
                        "300s",
                        # the lab's own file, not the user's ~/.kube/config
                        "--kubeconfig",
                        kc,
                    ]
                ],
                files={"kind.yaml": yaml.safe_dump(kind_config(host, kit.images if kit else None), sort_keys=False)},
            )
        )
    steps += [
        Step("Writing the lab's kubeconfig", [["kind", "export", "kubeconfig", "--name", CLUSTER, "--kubeconfig", kc]]),
        Step(
            f"Installing KWOK {versions.KWOK_VERSION} with kailab's stages (no instant pod-complete)",
            [
                [
                    *kubectl,
                    "apply",
                    "--server-side",
                    "-f",
                    str(kit.kwok_manifest) if kit else f"{KWOK_RELEASE}/kwok.yaml",
                ],
                [*kubectl, "wait", "--for=condition=Established", "--timeout=60s", "crd/stages.kwok.x-k8s.io"],
                [*kubectl, "apply", "--server-side", "-f", str(MANIFESTS / "kwok-stages.yaml")],
                [*kubectl, "-n", "kube-system", "rollout", "status", "deployment/kwok-controller", "--timeout=180s"],
            ],
        ),
    ]
    steps += gpu_steps(home, fleet, kit) + kai_steps(home, kit)
    steps += [
        # KAI's operator creates the component Deployments after Helm returns, so wait for them to exist too.
        Step("Waiting until every KAI component is Ready", [], wait_for=KAI_DEPLOYMENTS),
    ]
    if kit is not None:
        steps.append(
            Step(
                "Starting kailab's GPU ledger (fake-gpu-operator's part: which pod holds which GPU)",
                [],
                start_ledger=True,
            )
        )
    steps += [
        # The same nodes, status and Ready wait as the local runtime (kailab.fleet.create_fleet).
        Step(
            f"Creating the fleet: {fleet.node_count} KWOK nodes, {fleet.total_gpus} GPUs — {fleet.describe()}",
            [],
            create_fleet=True,
        ),
    ]
    return steps


def gpu_steps(home: Path, fleet: Fleet, kit: OfflineKit | None) -> list[Step]:
    """fake-gpu-operator's chart; offline, the RuntimeClass it would make (kailab's GPU ledger starts after KAI)."""
    kc = str(home / "kubeconfig.yaml")
    if kit is not None:
        return [
            Step(
                "Adding RuntimeClass nvidia (fake-gpu-operator's, which is not to be had offline)",
                [["kubectl", "--kubeconfig", kc, "apply", "--server-side", "-f", str(home / "runtimeclass.yaml")]],
                files={"runtimeclass.yaml": yaml.safe_dump(runtime_class(), sort_keys=False)},
            )
        ]
    return [
        Step(
            f"Installing fake-gpu-operator {versions.FAKE_GPU_OPERATOR_VERSION}",
            [
                [
                    "helm",
                    "upgrade",
                    "-i",
                    "gpu-operator",
                    versions.FAKE_GPU_OPERATOR_CHART,
                    "--version",
                    versions.FAKE_GPU_OPERATOR_VERSION,
                    "--kubeconfig",
                    kc,
                    "-n",
                    GPU_OPERATOR_NAMESPACE,
                    "--create-namespace",
                    "-f",
                    str(home / "fake-gpu-operator-values.yaml"),
                    "--wait",
                    "--timeout",
                    "10m",
                ]
            ],
            files={"fake-gpu-operator-values.yaml": yaml.safe_dump(fake_gpu_operator_values(fleet), sort_keys=False)},
        ),
    ]


def kai_steps(home: Path, kit: OfflineKit | None) -> list[Step]:
    """KAI's Helm chart: published (OCI), or offline from the module with kailab's images (global.registry)."""
    kc = str(home / "kubeconfig.yaml")
    kubectl = ["kubectl", "--kubeconfig", kc]
    if kit is None:
        chart = [versions.KAI_CHART, "--version", versions.KAI_VERSION]
        rbac = [[*kubectl, "apply", "--server-side", "-f", str(home / "reservation-rbac.yaml")]]
        files = {"reservation-rbac.yaml": yaml.safe_dump_all(reservation_rbac(), sort_keys=False)}
    else:
        from kailab.runtimes import kind_offline

        chart = [
            str(kit.kai_chart),
            "--set",
            f"global.registry={kind_offline.KAI_REGISTRY}",
            "--set",
            f"global.tag={versions.KAI_VERSION}",
        ]
        rbac, files = [], {}
    return [
        # The chart creates the reservation namespace; the RBAC into it follows, as in KAI's e2e setup.
        Step(
            f"Installing KAI Scheduler {versions.KAI_VERSION} (Helm chart{', images made here' if kit else ''})",
            [
                [
                    "helm",
                    "upgrade",
                    "-i",
                    KAI_HELM_RELEASE,
                    *chart,
                    "--kubeconfig",
                    kc,
                    "-n",
                    KAI_NAMESPACE,
                    "--create-namespace",
                    "-f",
                    str(home / "kai-values.yaml"),
                    "--wait",
                    "--timeout",
                    "10m",
                ],
                *rbac,
                # the lab's one change to KAI's CRDs, as on the local runtime (kailab/kai_patches.py)
                [*kubectl, "patch", "crd", PODGROUP_CRD, "--type=json", "-p", json.dumps(PODGROUP_CRD_PATCH)],
            ],
            files={"kai-values.yaml": yaml.safe_dump(kai_values(), sort_keys=False), **files},
        )
    ]


def shard_patch(settings: SchedulerSettings, usage: dict | None = None) -> dict:
    """The merge patch that gives a SchedulingShard these settings (a field or arg set to None is removed);
    ``usage``: its usageDBConfig, with the lab's Prometheus as the connection string (:func:`usage_db_steps`).

    ``spec.placementStrategy.{gpu,cpu}`` is what the operator turns into the config file's plugins and actions
    (pkg/apis/kai/v1/schedulingshard_types.go); ``spec.args`` are passed to the scheduler as flags
    (pkg/operator/operands/scheduler/resources_for_shard.go, buildArgsList).
    """
    return {"spec": settings.shard_patch(usage)}


def settings_from_shard(shard: dict) -> SchedulerSettings:
    """The settings a SchedulingShard gives (KAI's defaults for what it leaves out)."""
    return SchedulerSettings.from_shard(shard.get("spec") or {})


def _scheduler_enabled(enabled: bool) -> str:
    return json.dumps({"spec": {"scheduler": {"service": {"enabled": enabled}}}})


def scheduler_stop_plan(home: Path) -> list[Step]:
    """Stop KAI's scheduler as KAI's own e2e tests do (test/e2e/modules/configurations/scheduler.go):
    the Config's ``spec.scheduler.service.enabled: false``, then wait until its pods are gone."""
    kubectl = ["kubectl", "--kubeconfig", str(home / "kubeconfig.yaml")]
    return [
        Step(
            "Stopping KAI's scheduler (kai-config: scheduler disabled)",
            [[*kubectl, "patch", *KAI_CONFIG, "--type", "merge", "-p", _scheduler_enabled(False)]],
            wait_gone=(KAI_SCHEDULER_DEPLOYMENT,),
        )
    ]


def usage_db_steps(home: Path, archive: Path) -> list[Step]:
    """Put the lab's Prometheus in the cluster (kailab/runtimes/kind_usage_db.py): its image from ``archive`` into
    the nodes, its objects applied server-side with the lab's label, then wait until it is ready."""
    kubectl = ["kubectl", "--kubeconfig", str(home / "kubeconfig.yaml")]
    objects = kind_usage_db.manifests({LAB_LABEL: "true"})
    return [
        Step(
            "Loading the lab's Prometheus image into the cluster (kind load image-archive)",
            [["kind", "load", "image-archive", str(archive), "--name", CLUSTER]],
        ),
        Step(
            "Starting the lab's Prometheus (KAI's usage database)",
            [
                [*kubectl, "apply", "--server-side", "-f", str(home / kind_usage_db.MANIFEST)],
                [
                    *kubectl,
                    "-n",
                    KAI_NAMESPACE,
                    "rollout",
                    "status",
                    f"deployment/{kind_usage_db.NAME}",
                    "--timeout=180s",
                ],
            ],
            files={kind_usage_db.MANIFEST: yaml.safe_dump_all(objects, sort_keys=False)},
        ),
    ]


def scheduler_start_plan(home: Path, settings: SchedulerSettings, usage: dict | None = None) -> list[Step]:
    """Configure the default SchedulingShard (``usage``: see :func:`shard_patch`), enable the scheduler again, wait
    until its Deployment is Ready."""
    kubectl = ["kubectl", "--kubeconfig", str(home / "kubeconfig.yaml")]
    return [
        Step(
            f"Configuring KAI's scheduler: {settings.describe()}",
            [[*kubectl, "patch", *SCHEDULER_SHARD, "--type", "merge", "-p", json.dumps(shard_patch(settings, usage))]],
        ),
        Step(
            "Starting KAI's scheduler (kai-config: scheduler enabled)",
            [[*kubectl, "patch", *KAI_CONFIG, "--type", "merge", "-p", _scheduler_enabled(True)]],
            wait_for=(KAI_SCHEDULER_DEPLOYMENT,),
        ),
        # The operator may roll the new Deployment once more (its pod template carries the ConfigMap's
        # resourceVersion, unknown until the ConfigMap exists): wait until the newest rollout is done.
        Step(
            "Waiting until KAI's scheduler has rolled out",
            [
                [
                    *kubectl,
                    "-n",
                    KAI_NAMESPACE,
                    "rollout",
                    "status",
                    f"deployment/{KAI_SCHEDULER_DEPLOYMENT}",
                    "--timeout=180s",
                ]
            ],
        ),
    ]


class KindRuntime(Runtime):
    """A kind cluster named ``kailab``; the same KAI, fleet and exercises as the local runtime.

    External tools (docker, kind, helm, kubectl for upstream manifests) go through ``runner``;
    reads and the fleet go through the kubernetes client made by ``connect``. Tests swap both.
    """

    name = "kind"
    preference = 10  # first choice where a Docker engine answers
    after_failed_up = "always keeps what a failed up made: the next kailab up completes it, kailab down removes it"
    own_entries = OWN_ENTRIES
    takes = frozenset({"offline"})

    def __init__(
        self,
        home: Path | None = None,
        runner: Runner = run_command,
        connect: Callable[[Path], Kube] = Kube,
        timeout: float = 300,
        registry_unreachable: Callable[[], str | None] | None = None,
    ):
        super().__init__(home)
        self._runner = runner
        self.connect = connect
        self.timeout = timeout
        self._client: Kube | None = None
        self.registry_unreachable = registry_unreachable or registries_unreachable
        self.tools: dict[str, str] = {}  # tool name → the path to run (offline: the ones kailab built)
        if self.offline_record().get("tools"):
            self.tools = dict(self.offline_record()["tools"])

    def runner(self, argv: list[str]) -> Result:
        """Run a command; kind, helm and kubectl are the ones kailab built when the lab is offline."""
        return self._runner([self.tools.get(argv[0], argv[0]), *argv[1:]])

    def offline_record(self) -> dict:
        """What an offline up wrote (offline.json): the tools it built, whether it made Docker's kind network."""
        try:
            return json.loads((self.home / "offline.json").read_text())
        except (OSError, ValueError):
            return {}

    def ledger(self) -> ProcessGroup:
        """kailab's GPU ledger process of an offline lab (pids and logs in the lab folder)."""
        return ProcessGroup(self.home / "offline")

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if shutil.which("docker") is None:
            return False, "Docker is not installed"
        proc = run_command(["docker", "info", "--format", "{{.ServerVersion}}"])
        if proc.returncode != 0:
            return False, "no Docker engine answers (docker info failed)"
        missing = [t for t in TOOLS if shutil.which(t) is None]
        if missing:
            return (
                False,
                f"a Docker engine answers, but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed",
            )
        return True, f"a Docker engine answers (server {proc.stdout.strip()})"

    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig.yaml"

    def kube(self) -> Kube:
        """One client for this runtime, made once the kubeconfig exists (kind writes it)."""
        if self._client is None:
            self._client = self.connect(self.kubeconfig())
        return self._client

    def check_tools(self) -> None:
        """Every tool present, or one error saying what to install."""
        missing = [t for t in TOOLS if self.runner(["which", t]).returncode != 0]
        if missing:
            raise ToolMissing(
                f"The kind runtime needs {', '.join(missing)}, not found on PATH.",
                hint=" ".join(TOOLS[t] for t in missing)
                + " Or use the local runtime (needs Go): kailab up --runtime local",
            )

    def check_docker(self) -> None:
        """The Docker engine answering, or one error saying so."""
        if self.runner(["which", "docker"]).returncode != 0:
            raise ToolMissing(
                "The kind runtime needs docker, not found on PATH.",
                hint=TOOLS["docker"] + " Or use the local runtime (needs Go): kailab up --runtime local",
            )
        info = self.runner(["docker", "info", "--format", "{{.ServerVersion}}"])
        if info.returncode != 0:
            raise ToolMissing(
                "The Docker engine does not answer (docker info failed).",
                hint="Start Docker, or use the local runtime: kailab up --runtime local",
                details=info.stderr.strip()[-800:],
            )

    def cluster_exists(self) -> bool:
        """True when a kind cluster named kailab exists and is ours; an error when the name is taken by another."""
        out = self.runner(["kind", "get", "clusters"])
        if out.returncode != 0:
            raise KailabError("kind get clusters failed.", details=out.stderr.strip())
        if CLUSTER not in out.stdout.split():
            return False
        self.runner(["kind", "export", "kubeconfig", "--name", CLUSTER, "--kubeconfig", str(self.kubeconfig())])
        try:
            ours = self.kube().core.list_node(label_selector=f"{LAB_LABEL}=true").items
        except Exception as e:  # the cluster exists but does not answer: let the plan redo what it can
            raise KailabError(
                f"The kind cluster '{CLUSTER}' exists but its API server does not answer.",
                hint=f"Delete it (kind delete cluster --name {CLUSTER}) and run kailab up again.",
                details=str(e)[-800:],
            ) from e
        if ours:
            return True
        raise KailabError(
            f"A kind cluster named '{CLUSTER}' already exists but was not made by kailab "
            f"(its nodes lack the {LAB_LABEL} label).",
            hint=f"Delete it if it is not needed (kind delete cluster --name {CLUSTER}), then run kailab up again.",
        )

    def up(self, options: UpOptions, progress: Progress) -> LabInfo:
        offline = options.offline or bool(self.offline_record())
        if not offline:
            why = self.registry_unreachable()
            if why:
                progress.info(f"Offline: {why}; kailab builds every image itself (as kailab up --offline).")
                offline = True
        self.check_docker()
        kit = None
        if offline:
            from kailab.runtimes import kind_offline

            labdir.claim(self.home)
            kit = kind_offline.ensure_kit(progress)
            self.tools = {"kind": str(kit.kind), "helm": str(kit.helm), "kubectl": str(kit.kubectl)}
        else:
            self.check_tools()
            labdir.claim(self.home)
        exists = self.cluster_exists()
        state = self.state()
        if exists and state and state.complete and (info := self.running(progress)):
            return info
        host = host_facts(self.runner)
        for finding in host.describe()[1:]:
            progress.info(finding)
        if kit is not None and not exists:
            record = self.offline_record()
            network = self.runner(["docker", "network", "inspect", "kind"]).returncode == 0
            made = record.get("network_made", not network)
            (self.home / "offline.json").write_text(json.dumps({"tools": self.tools, "network_made": made}))
        # Written first, so that `kailab down` finds (and deletes) a cluster whose `up` was interrupted.
        self._write_state(options.fleet, complete=False)
        for step in plan(self.home, options.fleet, exists, host, kit):
            self.execute(step, options.fleet, progress)
        self._write_state(options.fleet, complete=True)
        return self.info() or LabInfo(self.name, self.kubeconfig())

    def _write_state(self, fleet: Fleet, complete: bool) -> None:
        LabState(
            self.name,
            str(self.kubeconfig()),
            fleet.source,
            fleet.total_gpus,
            versions.as_dict(),
            shape=fleet.describe(),
            complete=complete,
        ).write(self.home)

    def execute(self, step: Step, fleet: Fleet | None, progress: Progress) -> None:
        """Run one step; on failure say which step, what it ran, what it printed. ``fleet``: for a create_fleet step."""
        with progress.step(step.title):
            for name, text in step.files.items():
                (self.home / name).write_text(text)
            for argv in step.commands:
                result = self.runner(argv)
                if result.returncode != 0:
                    raise KailabError(
                        f"Step failed: {step.title}.",
                        hint="Fix what the output says and run kailab up again; finished steps are kept and not redone.",
                        details=f"$ {' '.join(argv)}\n{(result.stderr or result.stdout).strip()[-2000:]}",
                    )
            if step.wait_for:
                self.wait_deployments(step)
            if step.wait_gone:
                self.wait_pods_gone(step)
            if step.start_ledger:
                self.start_ledger()
            if step.create_fleet:
                assert fleet is not None  # only `kailab up` runs a create_fleet step, and it gives the fleet
                hint = (
                    f"Look at KWOK and fake-gpu-operator: kubectl --kubeconfig {self.kubeconfig()} "
                    f"get pods -n kube-system -l app=kwok-controller; kubectl -n {GPU_OPERATOR_NAMESPACE} get pods"
                )
                create_fleet(self.kube(), fleet, timeout=180, logs_hint=hint)

    def wait_deployments(self, step: Step) -> None:
        """Until each named Deployment exists and has all replicas ready (the operator makes most of them)."""

        def ready() -> bool | Pending:
            healthy = {c.name for c in (self.info_components() or []) if c.healthy}
            missing = [d for d in step.wait_for if d not in healthy]
            return not missing or Pending(", ".join(missing))

        until(
            ready,
            self.timeout,
            2,
            fail=lambda last: KailabError(
                f"Step failed: {step.title}: not Ready after {self.timeout:.0f}s: {seen(last)}.",
                hint=f"Look at them: kubectl --kubeconfig {self.kubeconfig()} -n {KAI_NAMESPACE} get pods,events",
            ),
        )

    def wait_pods_gone(self, step: Step) -> None:
        """Until no pod of the named Deployments is left (the operator deletes them a moment after it is told)."""
        selector = f"app in ({','.join(step.wait_gone)})"

        def gone() -> bool | Pending:
            try:
                left = [
                    p.metadata.name
                    for p in self.kube()
                    .core.list_namespaced_pod(KAI_NAMESPACE, label_selector=selector, _request_timeout=10)
                    .items
                ]
            except Exception:
                left = ["(the API server does not answer)"]
            return not left or Pending(", ".join(left))

        until(
            gone,
            self.timeout,
            1,
            fail=lambda last: KailabError(
                f"Step failed: {step.title}: still there after {self.timeout:.0f}s: {seen(last)}.",
                hint=f"Look at them: kubectl --kubeconfig {self.kubeconfig()} -n {KAI_NAMESPACE} get pods,events",
            ),
        )

    def scheduler_control(self) -> KindSchedulerControl:
        return KindSchedulerControl(self)

    def operators(self) -> OperatorControl:
        from kailab.runtimes.kind_operators import KindOperators

        return KindOperators(self, CLUSTER, {LAB_LABEL: "true"}, Step)

    def start_ledger(self) -> None:
        """kailab's GPU ledger (as the local runtime runs it), on this host against the cluster, until down."""
        spec = gpu_ledger_spec(self.kubeconfig())
        group = self.ledger()
        group.start(spec)
        wait_healthy([spec], group)

    def down(self, progress: Progress) -> None:
        labdir.refuse_unless_ours(self.home)
        record = self.offline_record()
        if record:
            with progress.step("Stopping kailab's GPU ledger"):
                self.ledger().stop_all()
        with progress.step(f"Deleting kind cluster {CLUSTER}"):
            result = self.runner(["kind", "delete", "cluster", "--name", CLUSTER])
            if result.returncode != 0:
                raise KailabError("kind delete cluster failed.", details=result.stderr.strip())
        if record:
            self.remove_offline_leftovers(record, progress)
        with progress.step("Removing the lab's files"):
            left = labdir.remove(self.home, list(OWN_ENTRIES))
        labdir.report_left(self.home, left, progress)

    def remove_offline_leftovers(self, record: dict, progress: Progress) -> None:
        """What an offline up made in Docker: the node image (it is cached, so the next up reloads it) and Docker's
        kind network when it was made for this lab and nothing else uses it."""
        from kailab.runtimes import kind_offline

        with progress.step(f"Removing the node image {kind_offline.NODE_IMAGE} (kept in kailab's cache)"):
            kind_offline.remove_node_image(self.runner)
        if record.get("network_made"):
            with progress.step("Removing Docker's kind network (made for this lab)") as step:
                users = self.runner(["docker", "network", "inspect", "kind", "--format", "{{len .Containers}}"])
                if users.returncode == 0 and users.stdout.strip() == "0":
                    self.runner(["docker", "network", "rm", "kind"])
                elif users.returncode == 0:
                    step.note(f"kept: {users.stdout.strip()} other containers use it")

    def forget(self, progress: Progress) -> None:
        if (self.home / "kind.yaml").exists():
            progress.info(
                f"A kind cluster may be left from this lab; if so, delete it: kind delete cluster --name {CLUSTER}"
            )
        super().forget(progress)

    def info(self) -> LabInfo | None:
        if self.state() is None:
            return None
        comps = self.info_components()
        return LabInfo(
            self.name,
            self.kubeconfig(),
            comps if comps is not None else [ComponentHealth("kube-apiserver", False, "does not answer")],
        )

    def info_components(self) -> list[ComponentHealth] | None:
        """KAI's Deployments and their readiness, or None when the cluster does not answer."""
        try:
            items = self.kube().apps.list_namespaced_deployment(KAI_NAMESPACE, _request_timeout=10).items
        except Exception:
            return None
        comps = []
        for d in items:
            want = d.spec.replicas if d.spec.replicas is not None else 1
            ready = (d.status.ready_replicas if d.status else 0) or 0
            comps.append(ComponentHealth(d.metadata.name, ready >= want, f"{ready}/{want} ready"))
        if self.offline_record():
            comps.append(
                ComponentHealth(
                    gpu_ledger.PROCESS_NAME,
                    self.ledger().pid(gpu_ledger.PROCESS_NAME) is not None,
                    "offline: kailab's GPU ledger stands in for fake-gpu-operator (not to be had without a registry)",
                )
            )
        return comps


class KindSchedulerControl(SchedulerControl):
    """KAI's scheduler of a kind lab, through the objects KAI's operator reads (see ``scheduler_*_plan``); settings
    with usage params deploy the lab's Prometheus first (:func:`usage_db_steps`)."""

    runs_usage_db = True

    def __init__(self, runtime: KindRuntime):
        self.rt = runtime

    def _kubectl(self, *args: str) -> Result:
        return self.rt.runner(["kubectl", "--kubeconfig", str(self.rt.kubeconfig()), *args])

    @property
    def settings(self) -> SchedulerSettings:
        out = self._kubectl("get", *SCHEDULER_SHARD, "-o", "json")
        if out.returncode != 0:
            raise KailabError("Cannot read KAI's SchedulingShard 'default'.", details=out.stderr.strip()[-800:])
        return settings_from_shard(json.loads(out.stdout))

    def running(self) -> bool:
        return any(c.name == KAI_SCHEDULER_DEPLOYMENT and c.healthy for c in self.rt.info_components() or [])

    def stop(self) -> None:
        for step in scheduler_stop_plan(self.rt.home):
            self.rt.execute(step, None, Progress(quiet=True))

    def start(self, settings: SchedulerSettings | None = None) -> None:
        settings = SchedulerSettings.of(settings)
        if self.running() and settings == self.settings:
            return
        usage = self.usage_db(settings) if settings.usage_params is not None else None
        for step in scheduler_stop_plan(self.rt.home) + scheduler_start_plan(self.rt.home, settings, usage):
            self.rt.execute(step, None, Progress(quiet=True))

    def usage_db(self, settings: SchedulerSettings, partition: str = "") -> dict:
        """A shard's usageDBConfig for these settings: the lab's Prometheus (deployed first if it is not ready) and
        the capacity of the partition's nodes ("": the lab's fleet; kind's own nodes are in a pool of their own)."""
        if not any(c.name == kind_usage_db.NAME and c.healthy for c in self.rt.info_components() or []):
            from kailab.runtimes import kind_offline

            archive = kind_offline.ensure_prometheus_archive(Progress(quiet=True))
            for step in usage_db_steps(self.rt.home, archive):
                self.rt.execute(step, None, Progress(quiet=True))
        return usage_db.usage_db_config(settings, kind_usage_db.URL, usage_db.node_capacity(self.rt.kube(), partition))

    def metrics(self) -> str | None:
        out = self._kubectl("get", "--raw", SCHEDULER_METRICS)
        return out.stdout if out.returncode == 0 else None
