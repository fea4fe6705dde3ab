"""KAI Scheduler on the local runtime: its cluster objects, and its components as processes."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import yaml

from kailab import build, versions
from kailab.kube import Kube
from kailab.paths import MANIFESTS
from kailab.runtimes.processes import ProcessGroup, ProcessSpec, free_port

PRIORITY_CLASSES = MANIFESTS / "kai-priority-classes.yaml"
DEFAULT_QUEUES = MANIFESTS / "kai-default-queues.yaml"
CRD_DIR = "deployments/kai-scheduler/crds"


def module_dir() -> Path:
    """Where the Go module cache holds the pinned KAI module (downloaded by the build)."""
    proc = subprocess.run(["go", "mod", "download", "-json", f"{versions.KAI_MODULE}@{versions.KAI_VERSION}"],
                          capture_output=True, text=True, env=build.go_env(), cwd=Path.home())
    return Path(json.loads(proc.stdout)["Dir"])


def crd_objects() -> list[dict]:
    """KAI's CRDs, read from the pinned module's Helm chart."""
    out = []
    for path in sorted((module_dir() / CRD_DIR).glob("*.yaml")):
        out.extend(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "CustomResourceDefinition")
    return out


def install_cluster_objects(kube: Kube, cache: Path | None = None) -> None:
    """CRDs (and wait until they are served), the four priority classes, the chart's default queues."""
    crds = crd_objects()
    for crd in crds:
        kube.apply(crd)
    _wait_crds_established(kube, [c["metadata"]["name"] for c in crds])
    kube.dyn.resources.invalidate_cache()
    for path in (PRIORITY_CLASSES, DEFAULT_QUEUES):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj:
                kube.apply(obj)


def _wait_crds_established(kube: Kube, names: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in list(pending):
            crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            conds = ((crd or {}).get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                pending.discard(name)
        time.sleep(0.2)


def components(bins: dict[str, Path], kubeconfig: Path, workdir: Path) -> list[ProcessSpec]:
    """KAI's components as the Helm chart configures them, each on its own free loopback ports."""
    workdir.mkdir(parents=True, exist_ok=True)
    conf = workdir / "scheduler-config.yaml"
    conf.write_text((MANIFESTS / "kai-scheduler-config.yaml").read_text())
    kc = str(kubeconfig)
    specs = []

    def ports() -> tuple[int, int]:
        return free_port(), free_port()

    m, h = ports()
    specs.append(ProcessSpec("kai-scheduler", [
        str(bins["kai-scheduler"]), f"--kubeconfig={kc}", "--scheduler-name=kai-scheduler",
        f"--scheduler-conf={conf}", "--schedule-period=1s", f"--listen-address=127.0.0.1:{m}",
        "--leader-elect=false",
    ], health_url=None))
    for name in ("kai-binder", "kai-podgrouper", "kai-podgroupcontroller", "kai-queuecontroller"):
        m, h = ports()
        specs.append(ProcessSpec(name, [
            str(bins[name]), f"--kubeconfig={kc}", f"--metrics-bind-address=127.0.0.1:{m}",
            f"--health-probe-bind-address=127.0.0.1:{h}", "--leader-elect=false",
        ], health_url=f"http://127.0.0.1:{h}/healthz"))
    return specs


def wait_healthy(specs: list[ProcessSpec], group: ProcessGroup, timeout: float = 60) -> None:
    """Every component alive and, where it has one, its health endpoint answering 200."""
    import urllib.request

    deadline = time.monotonic() + timeout
    waiting = {s.name: s for s in specs}
    while waiting:
        for name, spec in list(waiting.items()):
            if group.pid(name) is None:
                raise group.fail(name, "exited while starting")
            if spec.health_url is None:
                waiting.pop(name)
                continue
            try:
                with urllib.request.urlopen(spec.health_url, timeout=1) as r:
                    if r.status == 200:
                        waiting.pop(name)
            except OSError:
                pass
        if waiting and time.monotonic() > deadline:
            name = next(iter(waiting))
            raise group.fail(name, f"did not become healthy within {timeout:.0f}s")
        time.sleep(0.3)
