"""The kind runtime's bring-up as data: a plan of steps, each a list of commands.

``plan()`` is a list of steps, each a list of commands (kind, helm, kubectl), files to write and what to wait for — so it is tested by reading it, and run by a :class:`Runner` that can be swapped
for a recording fake (``kind.py`` runs it). Every step is idempotent: a second ``up`` changes nothing, and an ``up``
interrupted half-way is completed by the next one. The scheduler's stop, start and configuration are plans too.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kailab import versions
from kailab.fleet import Fleet
from kailab.kai_patches import PODGROUP_CRD, PODGROUP_CRD_PATCH
from kailab.labels import (
    GPU_OPERATOR_NAMESPACE,
    KAI_CONFIG_NAME,
    KAI_HELM_RELEASE,
    KAI_NAMESPACE,
    KAI_OPERATOR,
    KAI_SCHEDULER_DEPLOYMENT,
    KWOK_CONTROLLER,
    NODEPOOL_LABEL,
    POOL_LABEL,
    RESERVATION_NAMESPACE,
)
from kailab.paths import MANIFESTS
from kailab.runtimes import kind_usage_db
from kailab.runtimes.kind_offline import OfflineKit
from kailab.scheduler_settings import LAB_SCHEDULER_ARGS, SchedulerSettings
from kailab.shards import spec_patch

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
# The chart's operator Deployment, and what the operator creates (scheduler: <scheduler-name>-<shard>).
KAI_DEPLOYMENTS = (
    KAI_OPERATOR,
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
KAI_CONFIG = ("configs.kai.scheduler", KAI_CONFIG_NAME)
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


def kind_config(host: HostFacts = HostFacts(), offline_images: Path | None = None, address: str | None = None) -> dict:
    """One control-plane node and one worker for KAI's own pods; the lab label marks the cluster as ours.

    Offline: one node only (it runs KAI's pods; kind untaints a lone control plane), which imports the images
    kailab made from ``offline_images`` (mounted) before kubelet starts, and runs etcd and pause as made here.
    ``address``: an address of this machine where learners reach the API server — kind's
    ``networking.apiServerAddress``: Docker publishes the API server's port there only, kind puts the address in
    the serving certificate's SANs (its kubeadm config: ``certSANs: [localhost, <apiServerAddress>]``) and in the
    kubeconfig it writes. Nothing else of the cluster is published.
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
    if address:
        config.setdefault("networking", {})["apiServerAddress"] = address
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
            "nodePoolLabelKey": POOL_LABEL,
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
    home: Path,
    fleet: Fleet,
    cluster_exists: bool,
    host: HostFacts = HostFacts(),
    kit: OfflineKit | None = None,
    address: str | None = None,
) -> list[Step]:
    """Everything ``kailab up --runtime kind`` runs, in order (``kit``: offline, with what kailab made; ``address``:
    where learners reach the API server, :func:`kind_config`)."""
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
                files={
                    "kind.yaml": yaml.safe_dump(
                        kind_config(host, kit.images if kit else None, address), sort_keys=False
                    )
                },
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
                [
                    *kubectl,
                    "-n",
                    KWOK_CONTROLLER[0],
                    "rollout",
                    "status",
                    f"deployment/{KWOK_CONTROLLER[1]}",
                    "--timeout=180s",
                ],
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
    """``kubectl patch``'s body for the lab's shard (:func:`kailab.shards.spec_patch`); ``usage``: its
    usageDBConfig, with the lab's Prometheus as the connection string (:func:`usage_db_steps`)."""
    return {"spec": spec_patch(settings, usage)}


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
