"""Offline kind: every image the kind runtime needs, made here from the pinned Go modules and Debian packages.

Nothing is pulled from an image registry. What is made, and where it is kept (``~/.cache/kailab/kind-offline``,
one entry per pin, under its own lock):

- kind and helm, built from their Go modules (``versions.OFFLINE_BUILDS``);
- the node's root file system: Debian (``debootstrap``) with systemd, containerd, runc and the CNI plugins
  from Debian, kept as one tar; with kind's own base files (from kind's module), kubelet/kubeadm/kubectl
  (built from ``k8s.io/kubernetes`` with version stamps) and a static CNI config it becomes the node image,
  loaded into Docker as ``kailab.local/kind-node:<kubernetes>``;
- image archives the node imports at boot (before kubelet starts): kube-apiserver, kube-controller-manager,
  kube-scheduler, kube-proxy, etcd, CoreDNS and pause under the names kubeadm asks for, KAI's images
  (``kailab.local/kai-scheduler/<name>:<version>``, the chart's ``global.registry``) and KWOK's;
- KWOK's manifest, rendered from the KWOK module's kustomization with the image above.

An image archive is written by hand (``image_archive.py``: Docker's ``docker save`` layout),
so the images made from binaries never pass through Docker at all; only the node image is loaded into it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from kailab import build, versions
from kailab.errors import KailabError, ToolMissing
from kailab.paths import cache_home
from kailab.progress import Progress
from kailab.runtimes.image_archive import FileEntry, Layer, layer_of, write_archive, write_layer

LOCK = ".lock-kind-offline"
REGISTRY = "kailab.local"
KAI_REGISTRY = f"{REGISTRY}/kai-scheduler"
# KAI's chart inside its Go module.
KAI_CHART_PATH = "deployments/kai-scheduler"
NODE_IMAGE = f"{REGISTRY}/kind-node:{versions.KUBERNETES_VERSION}"
KWOK_IMAGE = f"{REGISTRY}/kwok:{versions.KWOK_VERSION}"
PROMETHEUS_IMAGE = f"{REGISTRY}/prometheus:{versions.PROMETHEUS_VERSION}"
# The label on the node image, so `down` (and a person) can tell it is kailab's.
IMAGE_LABEL = "io.kailab.made-by"
# Where the node finds the image archives (a kind extraMount of the cache folder).
NODE_IMAGES_PATH = "/kind/kailab-images"
ETCD_TAG = versions.ETCD_VERSION.lstrip("v") + "-0"
DEBIAN_MIRROR = os.environ.get("KAILAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# kind's base image's packages (images/base/Dockerfile), with containerd, runc and the CNI plugins from Debian.
NODE_PACKAGES = (
    "systemd",
    "containerd",
    "runc",
    "containernetworking-plugins",
    "conntrack",
    "iptables",
    "nftables",
    "iproute2",
    "ethtool",
    "util-linux",
    "mount",
    "kmod",
    "libseccomp2",
    "pigz",
    "fuse-overlayfs",
    "bash",
    "ca-certificates",
    "curl",
    "jq",
    "procps",
)
# The pod network: one node, so one host-local range; ptp gives each pod a veth to the node.
POD_SUBNET = "10.244.0.0/16"


def offline_home(cache: Path | None = None) -> Path:
    return (cache or cache_home()) / "kind-offline"


@dataclass(frozen=True)
class OfflineKit:
    """What an offline ``up`` uses: tools, the node image's name, the folder of image archives, chart, manifest."""

    kind: Path
    helm: Path
    kubectl: Path
    images: Path
    kai_chart: Path
    kwok_manifest: Path
    node_image: str = NODE_IMAGE


def _run(argv: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise KailabError(
            f"{what} failed.",
            hint="Read the output below; run kailab up again once it is fixed (finished parts are cached).",
            details=f"$ {' '.join(map(str, argv))}\n{(proc.stderr or proc.stdout).strip()[-2000:]}",
        )
    return proc


def check_offline_tools() -> None:
    """debootstrap (as root) and a C compiler (pause) are needed for a first offline build."""
    missing = [t for t in ("debootstrap", "gcc") if shutil.which(t) is None]
    if missing:
        raise ToolMissing(
            f"An offline kind lab is built with {', '.join(missing)}, not found on PATH.",
            hint="Install them (Debian/Ubuntu: apt-get install debootstrap gcc), "
            "or use the local runtime: kailab up --runtime local",
        )
    if os.geteuid() != 0:
        raise KailabError(
            "An offline kind lab's first build makes a Debian root file system (debootstrap), which needs root.",
            hint="Run the first kailab up --runtime kind --offline as root (later ones use the cache), "
            "or use the local runtime: kailab up --runtime local",
        )


def ensure_kit(progress: Progress, cache: Path | None = None) -> OfflineKit:
    """Build what is missing (Go modules, the node's root file system, image archives), load the node image."""
    cache = cache or cache_home()
    home = offline_home(cache)
    home.mkdir(parents=True, exist_ok=True)
    bins = build.ensure_built(versions.OFFLINE_BUILDS, progress, cache, lock=LOCK)
    bins.update(build.ensure_built([versions.build("etcd")], progress, cache))
    with build._locked(cache, LOCK):
        rootfs = ensure_rootfs(home, progress)
        kai_dir = build.module_source(versions.build("kai-images"))
        kwok_dir = build.module_source(versions.build("kwok"))
        k8s_dir = build.module_source(versions.build("kubernetes-node"))
        kind_dir = build.module_source(versions.build("kind"))
        images = ensure_archives(home, bins, rootfs, kai_dir, k8s_dir, progress)
        manifest = ensure_kwok_manifest(home, bins["kubectl"], kwok_dir)
        ensure_node_image(home, bins, rootfs, kind_dir, progress)
    return OfflineKit(
        kind=bins["kind"],
        helm=bins["helm"],
        kubectl=bins["kubectl"],
        images=images,
        kai_chart=kai_dir / KAI_CHART_PATH,
        kwok_manifest=manifest,
    )


# ---------------------------------------------------------------- the node's root file system (debootstrap)


def rootfs_path(home: Path) -> Path:
    return home / f"rootfs-debian-{versions.NODE_DEBIAN_SUITE}-{_digest(NODE_PACKAGES)[:12]}.tar"


def ensure_rootfs(home: Path, progress: Progress) -> Path:
    """Debian with the node's packages, as one tar (made once; about a minute and a half)."""
    out = rootfs_path(home)
    if out.exists():
        return out
    check_offline_tools()
    with progress.step(
        f"Making the node's Debian {versions.NODE_DEBIAN_SUITE} root file system (debootstrap, first time only)"
    ) as step:
        work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=home))
        try:
            root = work / "root"
            step.note(f"debootstrap from {DEBIAN_MIRROR}")
            _run(
                [
                    "debootstrap",
                    "--variant=minbase",
                    f"--include={','.join(NODE_PACKAGES)}",
                    f"--cache-dir={_apt_cache(home)}",
                    versions.NODE_DEBIAN_SUITE,
                    str(root),
                    DEBIAN_MIRROR,
                ],
                "debootstrap of the node's root file system",
                timeout=1800,
            )
            step.note("trimming it as kind's base image does")
            _trim_rootfs(root)
            partial = out.with_suffix(".partial")
            _run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], "tar of the root file system")
            partial.rename(out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out


def _apt_cache(home: Path) -> Path:
    path = home / "debs"
    path.mkdir(exist_ok=True)
    return path


def _trim_rootfs(root: Path) -> None:
    """What kind's base Dockerfile does after installing its packages: no services but its own, quiet journald,
    /sbin/init, the OCI spec containerd starts pods from (with kind's product-files hook, no rlimits)."""
    for pattern in (
        "lib/systemd/system/multi-user.target.wants/*",
        "etc/systemd/system/*.wants/*",
        "lib/systemd/system/local-fs.target.wants/*",
        "lib/systemd/system/sockets.target.wants/*udev*",
        "lib/systemd/system/sockets.target.wants/*initctl*",
        "lib/systemd/system/basic.target.wants/*",
        "lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
        "var/cache/apt/archives/*.deb",
        "var/lib/apt/lists/*",
    ):
        for p in root.glob(pattern):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
    with open(root / "etc/systemd/journald.conf", "a") as fh:
        fh.write("ReadKMsg=no\n")
    init = root / "sbin/init"
    if init.exists() or init.is_symlink():
        init.unlink()
    init.symlink_to("/lib/systemd/systemd")
    spec = json.loads(
        _run(["chroot", str(root), "ctr", "oci", "spec"], "ctr oci spec (in the root file system)").stdout
    )
    spec.setdefault("hooks", {}).setdefault("createContainer", []).append({"path": "/kind/bin/mount-product-files.sh"})
    spec["process"].pop("rlimits", None)
    (root / "etc/containerd").mkdir(parents=True, exist_ok=True)
    (root / "etc/containerd/cri-base.json").write_text(json.dumps(spec, indent=2))


@dataclass
class ImageRecipe:
    """One image made from binaries: its names, the files of its own layer, on top of the Debian layer or not."""

    file: str
    tags: list[str]
    entries: list[FileEntry]
    config: dict
    debian: bool = False


def binary_image(file: str, tag: str, path: str, binary: Path, **config) -> ImageRecipe:
    """An image of one static binary at ``path`` (its entrypoint) and an empty /tmp."""
    entries = [FileEntry(path, binary, mode=0o755), FileEntry("tmp", folder=True)]
    return ImageRecipe(file, [tag], entries, {"Entrypoint": [f"/{path}"], **config})


def recipes(bins: dict[str, Path], kai_dir: Path, pause: Path) -> list[ImageRecipe]:
    """Every image the node imports: the control plane kubeadm asks for, KAI's, KWOK's."""
    k8s = versions.KUBERNETES_VERSION
    out = [
        binary_image(name, f"registry.k8s.io/{name}:{k8s}", f"usr/local/bin/{name}", bins[name])
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
    ]
    # kube-proxy runs iptables: it gets the Debian layer below its binary.
    out.append(
        ImageRecipe(
            "kube-proxy",
            [f"registry.k8s.io/kube-proxy:{k8s}"],
            [FileEntry("usr/local/bin/kube-proxy", bins["kube-proxy"], mode=0o755)],
            {"Entrypoint": ["/usr/local/bin/kube-proxy"]},
            debian=True,
        )
    )
    out += [
        binary_image("etcd", f"registry.k8s.io/etcd:{ETCD_TAG}", "usr/local/bin/etcd", bins["etcd"]),
        binary_image(
            "coredns", f"registry.k8s.io/coredns/coredns:{versions.COREDNS_VERSION}", "coredns", bins["coredns"]
        ),
        ImageRecipe(
            "pause",
            [f"registry.k8s.io/pause:{versions.PAUSE_VERSION}"],
            [FileEntry("pause", pause, mode=0o755)],
            {"Entrypoint": ["/pause"], "User": "65535:65535"},
        ),
        binary_image("kwok", KWOK_IMAGE, "usr/local/bin/kwok", bins["kwok"]),
    ]
    # As KAI's Dockerfile: /workspace/app, run as 65532.
    out += [
        binary_image(
            f"kai-{name}",
            f"{KAI_REGISTRY}/{name}:{versions.KAI_VERSION}",
            "workspace/app",
            bins[name],
            WorkingDir="/workspace",
            User="65532:65532",
        )
        for name in versions.build("kai-images").binaries
    ]
    # KAI's crd-upgrader (deployments/crd-upgrader/Dockerfile): kubectl, the chart's CRDs and apply-crds.sh;
    # the chart's other hook Jobs run kubectl from the same image.
    crds = sorted((kai_dir / KAI_CHART_PATH / "crds").glob("*.yaml"))
    out.append(
        ImageRecipe(
            "kai-crd-upgrader",
            [f"{KAI_REGISTRY}/crd-upgrader:{versions.KAI_VERSION}"],
            [
                FileEntry("usr/bin/kubectl", bins["kubectl"], mode=0o755),
                FileEntry("apply-crds.sh", kai_dir / "deployments/crd-upgrader/apply-crds.sh", mode=0o755),
                *[FileEntry(f"internal-crds/{c.name}", c) for c in crds],
            ],
            {"Cmd": ["/apply-crds.sh"], "User": "65532:65532", "Env": ["HOME=/tmp", "PATH=/usr/bin:/bin"]},
            debian=True,
        )
    )
    return out


def archives_key(bins: dict[str, Path], rootfs: Path) -> str:
    """A new key (so new archives) when a pin or the Debian layer changes."""
    return _digest(
        [
            versions.KUBERNETES_VERSION,
            versions.ETCD_VERSION,
            versions.COREDNS_VERSION,
            versions.PAUSE_VERSION,
            versions.KAI_VERSION,
            versions.KWOK_VERSION,
            rootfs.name,
        ]
    )[:12]


def ensure_archives(
    home: Path, bins: dict[str, Path], rootfs: Path, kai_dir: Path, k8s_dir: Path, progress: Progress
) -> Path:
    """The folder of image archives the node imports at boot (made once per pin set)."""
    bins = {**bins, "kwok": build.binary_dir(versions.build("kwok")) / "kwok"}
    folder = home / f"images-{archives_key(bins, rootfs)}"
    done = folder / ".complete"
    if done.exists():
        return folder
    with progress.step(
        "Making the images the node loads (control plane, CoreDNS, pause, KAI, KWOK; first time only)"
    ) as step:
        folder.mkdir(parents=True, exist_ok=True)
        pause = build_pause(home, k8s_dir)
        debian = layer_of(rootfs)
        with tempfile.TemporaryDirectory(dir=home) as tmp:
            for r in recipes(bins, kai_dir, pause):
                step.note(r.file)
                write_image(r, folder / f"{r.file}.tar", Path(tmp), debian)
        done.write_text(json.dumps(sorted(p.name for p in folder.glob("*.tar"))))
    return folder


def write_image(recipe: ImageRecipe, out: Path, work: Path, debian: Layer | None = None) -> None:
    """The recipe's image archive at ``out`` (written beside it first, so a half-written one is never taken);
    its own layer is made in ``work``, on top of ``debian`` when the recipe asks for it."""
    own = write_layer(work / f"{recipe.file}.layer.tar", recipe.entries)
    if recipe.debian and debian is None:
        raise ValueError(f"{recipe.file} needs the Debian layer")
    layers = [debian, own] if recipe.debian and debian is not None else [own]
    config = dict(recipe.config)
    if "Env" in config:
        config["Env"] = list(config["Env"])
    else:
        config["Env"] = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    partial = out.with_name(out.name + ".partial")
    with open(partial, "wb") as fh:
        write_archive(fh, recipe.tags, layers, config)
    partial.rename(out)


# ---------------------------------------------------------------- Prometheus (KAI's usage database on kind)


def prometheus_recipe(binary: Path) -> ImageRecipe:
    """The Prometheus image of a kind lab's usage database (kailab/runtimes/kind_usage_db.py): the binary the local
    runtime runs (``versions.PROMETHEUS_BUILD``) at /bin/prometheus, run as nobody."""
    return binary_image("prometheus", PROMETHEUS_IMAGE, "bin/prometheus", binary, User="65534:65534")


def prometheus_archive_path(cache: Path | None = None) -> Path:
    """Where the Prometheus image's archive is kept: one per pinned version, in the cache."""
    return offline_home(cache) / f"prometheus-{versions.PROMETHEUS_VERSION}.tar"


def ensure_prometheus_archive(progress: Progress, cache: Path | None = None) -> Path:
    """The Prometheus image's archive, for ``kind load image-archive`` (online or offline: no registry has it).
    Made once from the cached binary (built first if need be), under Prometheus' own build lock."""
    from kailab.runtimes.usage_db import BUILD_LOCK

    cache = cache or cache_home()
    bins = build.ensure_built([versions.PROMETHEUS_BUILD], progress, cache, lock=BUILD_LOCK)
    out = prometheus_archive_path(cache)
    out.parent.mkdir(parents=True, exist_ok=True)
    with build._locked(cache, BUILD_LOCK):
        if not out.exists():
            with progress.step(f"Making the image {PROMETHEUS_IMAGE} (first time only)"):
                with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
                    write_image(prometheus_recipe(bins["prometheus"]), out, Path(tmp))
    return out


def build_pause(home: Path, k8s_dir: Path) -> Path:
    """pause, from build/pause/linux/pause.c in the Kubernetes module, linked statically."""
    out = home / f"pause-{versions.PAUSE_VERSION}"
    if out.exists():
        return out
    source = k8s_dir / "build/pause/linux/pause.c"
    _run(
        ["gcc", "-Os", "-static", "-Wall", f"-DVERSION=v{versions.PAUSE_VERSION}", "-o", str(out), str(source)],
        "Compiling pause (gcc -static)",
    )
    return out


# ---------------------------------------------------------------- KWOK's manifest


def ensure_kwok_manifest(home: Path, kubectl: Path, kwok_dir: Path) -> Path:
    """KWOK's release manifest, rendered from its module's kustomization, with kailab's KWOK image."""
    out = home / f"kwok-{versions.KWOK_VERSION}.yaml"
    if out.exists():
        return out
    rendered = _run([str(kubectl), "kustomize", str(kwok_dir / "kustomize/kwok")], "kubectl kustomize (KWOK)").stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    for d in docs:
        if d.get("kind") == "Deployment":
            for c in d["spec"]["template"]["spec"]["containers"]:
                if c["image"].startswith("registry.k8s.io/kwok/kwok"):
                    c["image"] = KWOK_IMAGE
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return out


# ---------------------------------------------------------------- the node image


PRELOAD_UNIT = f"""[Unit]
Description=Import the images kailab built (offline kind lab)
After=containerd.service
Requires=containerd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for i in $(seq 60); do ctr version >/dev/null 2>&1 && break; sleep 0.5; done; \
for f in {NODE_IMAGES_PATH}/*.tar; do [ -e "$f" ] || continue; ctr -n k8s.io images import "$f" || exit 1; done'

[Install]
WantedBy=multi-user.target
"""

# kubelet waits for the images (kubeadm starts it; systemd orders the start after the import).
KUBELET_DROP_IN = """[Unit]
Wants=kailab-preload-images.service
After=kailab-preload-images.service
"""


def cni_config() -> str:
    """The node's pod network: Debian's ptp and host-local plugins, one range (one node, no routes to share)."""
    return json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "kailab",
            "plugins": [
                {
                    "type": "ptp",
                    "ipMasq": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                    "mtu": 1500,
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        },
        indent=2,
    )


# kind applies whatever /kind/manifests/default-cni.yaml holds; the network is the static config above, so
# this says where it is (no image to run).
DEFAULT_CNI = """apiVersion: v1
kind: ConfigMap
metadata:
  name: kailab-pod-network
  namespace: kube-system
data:
  what: "ptp + host-local (Debian's CNI plugins), /etc/cni/net.d/10-kailab.conflist on the node"
"""
# kind applies /kind/manifests/default-storage.yaml (its local-path provisioner's image is not to be had here);
# the lab needs no volumes, so a plain StorageClass with no provisioner.
DEFAULT_STORAGE = """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
"""


def node_entries(bins: dict[str, Path], kind_dir: Path) -> list[FileEntry]:
    """What the node image adds to the Debian layer: kind's base files, Kubernetes' node binaries, kailab's config."""
    files = kind_dir / "images/base/files"
    out = []
    for f in sorted(p for p in files.rglob("*") if p.is_file()):
        rel = f.relative_to(files).as_posix()
        if rel.startswith("LICENSES/"):
            continue
        mode = 0o755 if rel.startswith(("usr/local/bin/", "kind/bin/")) else 0o644
        out.append(FileEntry(rel, f, mode=mode))
    for name in ("kubelet", "kubeadm", "kubectl"):
        out.append(FileEntry(f"usr/bin/{name}", bins[name], mode=0o755))
    wants = "etc/systemd/system/multi-user.target.wants"
    out += [
        # kind's units name /usr/local/bin/containerd; Debian installs /usr/bin/containerd; containerd looks for
        # CNI plugins in /opt/cni/bin, Debian puts them in /usr/lib/cni.
        FileEntry("usr/local/bin/containerd", link="/usr/bin/containerd"),
        FileEntry("opt/cni/bin", link="/usr/lib/cni"),
        FileEntry("etc/kubernetes/manifests", folder=True),
        FileEntry("etc/systemd/system/systemd-binfmt.service", link="/dev/null"),
        FileEntry(f"{wants}/kubelet.service", link="/etc/systemd/system/kubelet.service"),
        FileEntry(f"{wants}/containerd.service", link="/etc/systemd/system/containerd.service"),
        FileEntry(f"{wants}/undo-mount-hacks.service", link="/etc/systemd/system/undo-mount-hacks.service"),
        FileEntry(f"{wants}/kailab-preload-images.service", link="/etc/systemd/system/kailab-preload-images.service"),
        FileEntry("etc/systemd/system/kailab-preload-images.service", data=PRELOAD_UNIT.encode()),
        FileEntry("etc/systemd/system/kubelet.service.d/20-kailab-preload.conf", data=KUBELET_DROP_IN.encode()),
        FileEntry("etc/cni/net.d/10-kailab.conflist", data=cni_config().encode()),
        FileEntry("kind/manifests/default-cni.yaml", data=DEFAULT_CNI.encode()),
        FileEntry("kind/manifests/default-storage.yaml", data=DEFAULT_STORAGE.encode()),
        FileEntry("kind/version", data=f"{versions.KUBERNETES_VERSION}\n".encode()),
        FileEntry(NODE_IMAGES_PATH.strip("/"), folder=True),
    ]
    return out


def _docker(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True)


def node_image_present(runner=_docker) -> bool:
    return runner(["docker", "image", "inspect", NODE_IMAGE]).returncode == 0


def ensure_node_image(home: Path, bins: dict[str, Path], rootfs: Path, kind_dir: Path, progress: Progress) -> None:
    """The node image in Docker (loaded from the cache: the Debian layer and a layer of kind's and kailab's files)."""
    if node_image_present():
        return
    with progress.step(f"Loading the node image {NODE_IMAGE} into Docker") as step:
        with tempfile.TemporaryDirectory(dir=home) as tmp:
            step.note("writing its layers")
            own = write_layer(Path(tmp) / "node.layer.tar", node_entries(bins, kind_dir))
            layers = [layer_of(rootfs), own]
            config = {
                "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "container=docker"],
                "Entrypoint": ["/usr/local/bin/entrypoint", "/sbin/init"],
                "StopSignal": "SIGRTMIN+3",
            }
            step.note("docker load")
            proc = subprocess.Popen(
                ["docker", "load"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            assert proc.stdin is not None
            try:
                write_archive(proc.stdin, [NODE_IMAGE], layers, config, {IMAGE_LABEL: "kailab"})
            except BrokenPipeError:
                pass  # docker load stopped reading: its error is below
            out, err = proc.communicate()  # closes its input
            if proc.returncode != 0:
                raise KailabError(
                    f"docker load of the node image {NODE_IMAGE} failed.",
                    details=(err or out).decode(errors="replace")[-2000:],
                )


def _digest(parts) -> str:
    return hashlib.sha256(json.dumps(list(parts)).encode()).hexdigest()


def remove_node_image(runner=_docker) -> bool:
    """Remove the node image an offline up loaded (only if it carries kailab's label); True when one was removed.

    ``runner``: argv → an object with returncode and stdout (the kind runtime's runner)."""
    proc = runner(
        ["docker", "image", "inspect", "--format", f'{{{{ index .Config.Labels "{IMAGE_LABEL}" }}}}', NODE_IMAGE]
    )
    if proc.returncode != 0 or proc.stdout.strip() != "kailab":
        return False
    return runner(["docker", "image", "rm", NODE_IMAGE]).returncode == 0
