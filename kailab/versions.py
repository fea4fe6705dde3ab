"""Every pinned version kailab uses, in one place.

The kind runtime and the local runtime read these same pins, so both run the
same KAI, the same Kubernetes and the same KWOK.
"""

from __future__ import annotations

from dataclasses import dataclass

from kailab.labels import KAI_SCHEDULER_PROCESS

# KAI Scheduler: newest non-retracted release (v0.20.0 / v0.20.1 are retracted upstream).
KAI_VERSION = "v0.17.0"
KAI_MODULE = "github.com/kai-scheduler/KAI-scheduler"
KAI_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
# Its module's go.sum hashes (zip, go.mod) at tag v0.17.0, commit f218c69bee5e5fc6031273ba555d09916b1ca89a. The
# checksum database does not know this module, so these are the only check of what a proxy serves.
KAI_SUMS = ("h1:UtfrbI2aMZm6LGPx1DWPGhOGhxNXHtgfzKpEtlZ3ZiU=", "h1:+Ixd+cMJWhBiLAbYxWwiNQRTa4oABokpTvXc9SBlufo=")

# Kubernetes: the version KAI v0.17.0's go.mod requires (k8s.io/kubernetes v1.35.4).
KUBERNETES_VERSION = "v1.35.4"
KUBERNETES_SUMS = ("h1:o/8dBC/pHVpYoGV4OAIytAlNPZbdYVTXJHoYvXC4qzM=", "h1:fPfnQs8GtfrLQ+KuOcpvwQ+mV17jVcgdvPL6ZHxKp10=")
# etcd: the version k8s.io/kubernetes v1.35.4's go.mod requires.
ETCD_VERSION = "v3.6.5"

KWOK_VERSION = "v0.8.0"
FAKE_GPU_OPERATOR_VERSION = "0.2.0"
FAKE_GPU_OPERATOR_CHART = "oci://ghcr.io/run-ai/fake-gpu-operator/fake-gpu-operator"

# Prometheus, the usage database of KAI's time-based fair share (docs/time-based-fairshare/README.md): release
# v3.16.0, which its Go module publishes as v0.316.0 (a v3 tag is not a Go major version there).
PROMETHEUS_VERSION = "v0.316.0"

KIND_VERSION = "v0.31.0"
HELM_VERSION = "v3.19.0"
# CoreDNS: the version kubeadm v1.35.4 deploys (cmd/kubeadm/app/constants: CoreDNSVersion).
COREDNS_VERSION = "v1.13.1"
# pause: the version kubeadm v1.35.4 asks for (PauseVersion); built from build/pause/linux/pause.c in the module.
PAUSE_VERSION = "3.10.1"
# The offline node image's Debian release (debootstrap) and the packages it takes from Debian.
NODE_DEBIAN_SUITE = "bookworm"
# kind v0.31.0's default node image (pkg/apis/config/defaults/image.go at v0.31.0): the newest
# Kubernetes 1.35 image whose digest we have read from kind's own source. Same minor as
# KUBERNETES_VERSION; kind publishes node images per patch only with its releases.
KIND_NODE_IMAGE = "kindest/node:v1.35.0@sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"

# Oldest Go that builds every pinned module (KAI v0.17.0 declares go 1.26.3).
GO_MINIMUM = (1, 26)


@dataclass(frozen=True)
class GoBuild:
    """One Go module built into the cache: which binaries come from which packages.

    ``sibling_version`` is the version given to modules that upstream's go.mod
    replaces with a local path (``k8s.io/api => ./staging/src/k8s.io/api``):
    a module of ours cannot see those paths, so it names the published version.

    ``sums`` are the module's two go.sum hashes (its zip, its go.mod). The build
    writes them into its go.sum before it downloads anything, so Go itself refuses
    a proxy or mirror that serves other bytes, and no checksum database is asked.
    """

    name: str
    module: str
    version: str
    binaries: dict[str, str]
    sums: tuple[str, str]
    sibling_version: str | None = None
    ldflags: str = ""  # added to -s -w (e.g. -X version stamps)
    tags: str = ""  # go build -tags (e.g. to leave out parts the lab never runs)

    def go_sum_lines(self) -> str:
        """The two go.sum lines that pin this module."""
        zip_sum, mod_sum = self.sums
        return f"{self.module} {self.version} {zip_sum}\n{self.module} {self.version}/go.mod {mod_sum}\n"

    @property
    def key(self) -> str:
        """Cache folder name; a new pin means a new folder, so a rebuild."""
        return f"{self.name}-{self.version}"


def _staging(version: str) -> str:
    """k8s.io/kubernetes v1.X.Y publishes its staging modules as v0.X.Y."""
    return "v0" + version[version.index(".") :]


BUILDS: tuple[GoBuild, ...] = (
    GoBuild(
        name="etcd",
        module="go.etcd.io/etcd/server/v3",
        version=ETCD_VERSION,
        binaries={"etcd": "go.etcd.io/etcd/server/v3"},
        sums=("h1:4RbUb1Bd4y1WkBHmuF+cZII83JNQMuNXzyjwigQ06y0=", "h1:PLuhyVXz8WWRhzXDsl3A3zv/+aK9e4A9lpQkqawIaH0="),
        sibling_version=ETCD_VERSION,
    ),
    GoBuild(
        name="kwok",
        module="sigs.k8s.io/kwok",
        version=KWOK_VERSION,
        binaries={"kwok": "sigs.k8s.io/kwok/cmd/kwok", "kwokctl": "sigs.k8s.io/kwok/cmd/kwokctl"},
        sums=("h1:OTIOTwgROqPMovcTwxICx2eYQ4AwLpSx5EpjbDKF4SQ=", "h1:+wXG468txqFVjiS5Cz9V/jRf23x9GECTcNhzp6fAe2s="),
    ),
    GoBuild(
        name="kubernetes",
        module="k8s.io/kubernetes",
        version=KUBERNETES_VERSION,
        binaries={
            "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
            "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
            "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
            # kwokctl uses kubectl for its readiness checks; a pinned one means no download.
            "kubectl": "k8s.io/kubernetes/cmd/kubectl",
        },
        sums=KUBERNETES_SUMS,
        sibling_version=_staging(KUBERNETES_VERSION),
    ),
    GoBuild(
        name="kai",
        module=KAI_MODULE,
        version=KAI_VERSION,
        binaries={
            KAI_SCHEDULER_PROCESS: f"{KAI_MODULE}/cmd/scheduler",
            "kai-binder": f"{KAI_MODULE}/cmd/binder",
            "kai-podgrouper": f"{KAI_MODULE}/cmd/podgrouper",
            "kai-podgroupcontroller": f"{KAI_MODULE}/cmd/podgroupcontroller",
            "kai-queuecontroller": f"{KAI_MODULE}/cmd/queuecontroller",
        },
        sums=KAI_SUMS,
    ),
)

# Built on its own (its own cache entry and lock, kailab/runtimes/usage_db.py): only a lesson that asks for KAI's
# usage database runs it. remove_all_sd leaves out every service-discovery plugin (plugins/plugin_*.go): the lab
# names its scrape targets itself. Without builtinassets the web UI is not embedded; the HTTP API KAI queries is.
PROMETHEUS_BUILD = GoBuild(
    name="prometheus",
    module="github.com/prometheus/prometheus",
    version=PROMETHEUS_VERSION,
    binaries={"prometheus": "github.com/prometheus/prometheus/cmd/prometheus"},
    sums=("h1:f1GRFerhTMKQma+awCoC9T820ecWeGSdF+xAlMHzZzM=", "h1:nd2m0IehYLgxV4yAmoQDsvV45I9Xerh+uTUeCioEMis="),
    tags="remove_all_sd",
)


# The workload operators KAI v0.17.0's pod-grouper has a plugin for, at the versions its go.mod pins (and its go.sum
# hashes): pkg/podgrouper/podgrouper/plugins/{ray,kubeflow,jobset,leaderworkerset}/. Each is built on its own (its own
# cache entry and lock, kailab/operators.py) the first time a lesson needs it; `up` never builds them.
KUBERAY_VERSION = "v1.5.1"
TRAINING_OPERATOR_VERSION = "v1.9.3"
JOBSET_VERSION = "v0.10.1"
LWS_VERSION = "v0.7.0"

OPERATOR_BUILDS: tuple[GoBuild, ...] = (
    GoBuild(
        name="kuberay",
        module="github.com/ray-project/kuberay/ray-operator",
        version=KUBERAY_VERSION,
        binaries={"kuberay-operator": "github.com/ray-project/kuberay/ray-operator"},
        sums=("h1:7FJYmB8oM+cnjv1VYCj/TfzRZG4XHvvt5Ayn5pZ5A1c=", "h1:itUPJnr3QwoZT70gRgsWFpBolquuZtDRCkdA1lrAb7Y="),
    ),
    GoBuild(
        name="training-operator",
        module="github.com/kubeflow/training-operator",
        version=TRAINING_OPERATOR_VERSION,
        binaries={"training-operator": "github.com/kubeflow/training-operator/cmd/training-operator.v1"},
        sums=("h1:aaSHqskOtCY8Dn8sVd+l9p5XAczW6O0nYMPjVLAw/lc=", "h1:6zI0hgeCOheiW5Z12IcVkKBuSWm714fz8mUvYu4Fid4="),
    ),
    GoBuild(
        name="jobset",
        module="sigs.k8s.io/jobset",
        version=JOBSET_VERSION,
        binaries={"jobset-controller": "sigs.k8s.io/jobset"},
        sums=("h1:u8QKifNsrWVrlRFe6w2ofYTqFT9ma2DRHxfeB2m9xyU=", "h1:B9jF+ttb/qAs6LyJ036QTJ0LwvVnY/ax1fIKAqn4AYE="),
    ),
    GoBuild(
        name="lws",
        module="sigs.k8s.io/lws",
        version=LWS_VERSION,
        binaries={"lws-controller": "sigs.k8s.io/lws/cmd"},
        sums=("h1:qWfzX8+UBak+Hq0+m/PuE3uO0mp/3dmm5q/h/7z31A8=", "h1:WLg0CkyJTRQWMUOUam6qi9qRmcj3LAIWQUT81d4BGr4="),
    ),
)


def _version_ldflags(version: str) -> str:
    """Kubernetes' version stamps (k8s.io/component-base/version): kubeadm refuses to run without a real version."""
    major, minor = version.lstrip("v").split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return (
        f"-X {pkg}.gitVersion={version} -X {pkg}.gitMajor={major} -X {pkg}.gitMinor={minor} "
        f"-X {pkg}.gitTreeState=clean -X {pkg}.buildDate=1970-01-01T00:00:00Z"
    )


# What the offline kind runtime builds besides BUILDS (kailab/runtimes/kind_offline.py): kind and helm themselves,
# the node's Kubernetes binaries with version stamps, CoreDNS, and KAI's images' binaries.
OFFLINE_BUILDS: tuple[GoBuild, ...] = (
    GoBuild(
        name="kind",
        module="sigs.k8s.io/kind",
        version=KIND_VERSION,
        binaries={"kind": "sigs.k8s.io/kind"},
        sums=("h1:UcT4nzm+YM7YEbqiAKECk+b6dsvc/HRZZu9U0FolL1g=", "h1:FSqriGaoTPruiXWfRnUXNykF8r2t+fHtK0P0m1AbGF8="),
    ),
    GoBuild(
        name="helm",
        module="helm.sh/helm/v3",
        version=HELM_VERSION,
        binaries={"helm": "helm.sh/helm/v3/cmd/helm"},
        sums=("h1:krVyCGa8fa/wzTZgqw0DUiXuRT5BPdeqE/sQXujQ22k=", "h1:Lk/SfzN0w3a3C3o+TdAKrLwJ0wcZ//t1/SDXAvfgDdc="),
    ),
    GoBuild(
        name="coredns",
        module="github.com/coredns/coredns",
        version=COREDNS_VERSION,
        binaries={"coredns": "github.com/coredns/coredns"},
        sums=("h1:yhYvf/QVwHNjBK65RkC8d9VW91dP9XKem3BOon4eokg=", "h1:UHmBXdGEn/WQ1jdyMYgOxFh/VklkE//arIAxptwVAZI="),
    ),
    GoBuild(
        name="kubernetes-node",
        module="k8s.io/kubernetes",
        version=KUBERNETES_VERSION,
        binaries={
            name: f"k8s.io/kubernetes/cmd/{name}"
            for name in (
                "kubelet",
                "kubeadm",
                "kube-proxy",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler",
                "kubectl",
            )
        },
        sums=KUBERNETES_SUMS,
        sibling_version=_staging(KUBERNETES_VERSION),
        ldflags=_version_ldflags(KUBERNETES_VERSION),
    ),
    GoBuild(
        name="kai-images",
        module=KAI_MODULE,
        version=KAI_VERSION,
        # One binary per image of KAI's chart (deployments/kai-scheduler/values.yaml: image.name) that runs on the
        # kind node. Not resourcereservation: its pods go to the fake GPU nodes, which KWOK runs without images
        # (and it needs cgo for NVML).
        binaries={
            name: f"{KAI_MODULE}/cmd/{name}"
            for name in (
                "operator",
                "admission",
                "binder",
                "scheduler",
                "podgrouper",
                "podgroupcontroller",
                "queuecontroller",
            )
        },
        sums=KAI_SUMS,
    ),
)


def build(name: str) -> GoBuild:
    """The pinned build called ``name``."""
    return next(b for b in (*BUILDS, PROMETHEUS_BUILD, *OPERATOR_BUILDS, *OFFLINE_BUILDS) if b.name == name)


def as_dict() -> dict[str, str]:
    """The pins, for ``kailab version`` and evidence."""
    return {
        "kai": KAI_VERSION,
        "kubernetes": KUBERNETES_VERSION,
        "etcd": ETCD_VERSION,
        "kwok": KWOK_VERSION,
        "prometheus": PROMETHEUS_VERSION,
        "kuberay": KUBERAY_VERSION,
        "training-operator": TRAINING_OPERATOR_VERSION,
        "jobset": JOBSET_VERSION,
        "lws": LWS_VERSION,
        "fake-gpu-operator": FAKE_GPU_OPERATOR_VERSION,
        "kind": KIND_VERSION,
        "kind-node-image": KIND_NODE_IMAGE,
    }
