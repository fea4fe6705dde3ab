"""End to end on the kind runtime: create the cluster and run every exercise. Needs a Docker engine and helm.

Run it where Docker works:  python -m pytest tests/kind -m kind

kailab makes and removes the cluster itself (``kind create cluster`` / ``kind delete cluster``, see
kailab/runtimes/kind.py); that is what this test proves. pytest-kind's ``KindCluster`` supplies only what
kailab leaves to the machine: the pinned kind (and kubectl) when they are not on PATH, and a last-resort
``kind delete cluster --name kailab`` when ``kailab down`` did not remove the cluster the test made.
pytest-kind's own ``kind_cluster`` fixture is not used: it would create a second cluster, its own way.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_kind import KindCluster

from kailab import versions
from kailab.runtimes.kind import CLUSTER, run_command

ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def why_not() -> str | None:
    """Why the test cannot run here, or None. kind and kubectl need not be installed: pytest-kind fetches them."""
    if shutil.which("docker") is None:
        return "needs a Docker engine: Docker is not installed"
    if run_command(["docker", "info", "--format", "{{.ServerVersion}}"]).returncode != 0:
        return "needs a Docker engine: none answers here (docker info failed)"
    if shutil.which("helm") is None:
        return "needs helm 3.8 or newer on PATH (a Docker engine answers)"
    if platform.machine().lower() not in ARCH:
        return f"has no kind release for this machine ({platform.machine()})"
    return None


WHY_NOT = why_not()
pytestmark = [pytest.mark.kind, pytest.mark.skipif(WHY_NOT is not None, reason=f"kind end-to-end {WHY_NOT}")]


@pytest.fixture
def kind_tools(request, tmp_path, monkeypatch) -> KindCluster:
    """pytest-kind's handle on the cluster kailab names: kind and kubectl from PATH, else the pinned ones fetched."""
    cache = Path(request.config.cache.mkdir(f"kind-{versions.KIND_VERSION}-kubectl-{versions.KUBERNETES_VERSION}"))
    monkeypatch.chdir(tmp_path)  # KindCluster makes .pytest-kind/<name>/ in the working directory
    kind, kubectl = shutil.which("kind"), shutil.which("kubectl")
    # The kubeconfig kailab's `kind create cluster` wrote to (it names none), so a delete cleans the same file.
    kubeconfig = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or Path.home() / ".kube" / "config"
    cluster = KindCluster(
        CLUSTER,
        kubeconfig=Path(kubeconfig),
        kind_path=Path(kind) if kind else cache / "kind",
        kubectl_path=Path(kubectl) if kubectl else cache / "kubectl",
    )
    system, arch = platform.system().lower(), ARCH[platform.machine().lower()]
    with monkeypatch.context() as m:  # pytest-kind's own pins are older; point its downloads at kailab's
        m.setenv(
            "KIND_DOWNLOAD_URL",
            f"https://github.com/kubernetes-sigs/kind/releases/download/{versions.KIND_VERSION}/kind-{system}-{arch}",
        )
        m.setenv(
            "KUBECTL_DOWNLOAD_URL",
            f"https://dl.k8s.io/release/{versions.KUBERNETES_VERSION}/bin/{system}/{arch}/kubectl",
        )
        cluster.ensure_kind()  # nothing to do when the file is there
        cluster.ensure_kubectl()
    return cluster


def kind_clusters(tools: KindCluster) -> list[str]:
    return subprocess.run(
        [str(tools.kind_path), "get", "clusters"], capture_output=True, text=True, check=True
    ).stdout.split()


def kailab(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kailab", *args], capture_output=True, text=True, env=env, timeout=3600
    )


def test_kind_lab_runs_every_exercise(tmp_path, kind_tools):
    path = os.pathsep.join(
        [str(kind_tools.kind_path.parent), str(kind_tools.kubectl_path.parent), os.environ.get("PATH", "")]
    )
    env = {**os.environ, "KAILAB_HOME": str(tmp_path / "lab"), "PATH": path}
    existed = CLUSTER in kind_clusters(kind_tools)  # someone's lab: never the safety net's to delete
    up = kailab("up", "--runtime", "kind", env=env)
    try:
        assert up.returncode == 0, up.stderr
        demo = kailab("demo", "all", "--json", env=env)
        result = json.loads(demo.stdout or "{}")
        assert demo.returncode == 0 and result.get("passed"), demo.stderr[-3000:]
    finally:
        down = kailab("down", env=env)
        left = not existed and CLUSTER in kind_clusters(kind_tools)
        if left:
            try:
                kind_tools.delete()  # pytest-kind: kind delete cluster --name kailab
            except subprocess.CalledProcessError as e:
                print(f"pytest-kind could not delete the kind cluster {CLUSTER} either: {e}", file=sys.stderr)
    assert down.returncode == 0, f"kailab down failed:\n{down.stderr[-2000:]}"
    assert not left, f"kailab down left the kind cluster {CLUSTER} (pytest-kind's delete was the safety net)"
