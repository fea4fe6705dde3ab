"""The local runtime: a real control plane, KWOK GPU nodes and KAI as local processes, no Docker.

How the local fleet starts:
1. ``build.ensure_built`` builds the pinned binaries into the cache (once per version).
2. ``kwokctl --runtime binary`` starts etcd, kube-apiserver, kube-controller-manager,
   kube-scheduler and the KWOK controller from those binaries, with kailab's stages
   (``manifests/kwok-stages.yaml``), bound to 127.0.0.1, all state under the lab dir.
3. ``kai.install_cluster_objects`` applies KAI's CRDs, priority classes and default queues.
4. ``kai.components`` describes KAI's scheduler, binder and controllers; they run as
   processes kailab supervises (``processes.ProcessGroup``): pids/ and logs/ in the lab dir.
5. The fleet's KWOK nodes are created and waited for until Ready.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import yaml

from kailab import build, versions
from kailab.errors import KailabError
from kailab.fleet import Fleet, create_fleet
from kailab.kube import Kube
from kailab.paths import MANIFESTS, lab_home
from kailab.progress import Progress
from kailab.runtimes import kai
from kailab.runtimes.base import ComponentHealth, LabInfo, Runtime, UpOptions, register
from kailab.runtimes.processes import ProcessGroup, port_in_use

CLUSTER = "kailab"
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller")
STAGES = MANIFESTS / "kwok-stages.yaml"


@register
class LocalRuntime(Runtime):
    """Everything on this machine, from binaries built out of Go modules."""

    name = "local"

    def __init__(self, home: Path | None = None, cache: Path | None = None, apiserver_port: int | None = None):
        self.home = home or lab_home()
        self.cache = cache
        self.apiserver_port = apiserver_port
        self.kwok_workdir = self.home / "kwok"
        self.cluster_dir = self.kwok_workdir / "clusters" / CLUSTER
        self.kai_processes = ProcessGroup(self.home / "kai")
        self.state_file = self.home / "lab.json"

    # -- Runtime interface -----------------------------------------------------------------

    @classmethod
    def available(cls) -> tuple[bool, str]:
        try:
            build.check_go()
        except KailabError as e:
            return False, e.message
        return True, "Go is installed, so the local runtime can build its binaries"

    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig.yaml"

    def up(self, options: UpOptions, progress: Progress) -> LabInfo:
        info = self.info()
        if info and info.components and all(c.healthy for c in info.components):
            progress.info(f"[green]✓[/green] The lab is already running (local runtime); nothing to do. Kubeconfig: {self.kubeconfig()}")
            return info
        if self.home.exists() and (self.cluster_dir.exists() or self.kai_processes.names()):
            with progress.step("Removing a lab that is not healthy (left by an earlier run)"):
                self._teardown()
        if self.apiserver_port and port_in_use(self.apiserver_port):
            raise KailabError(f"Port {self.apiserver_port} on 127.0.0.1 is already in use.",
                              hint="Stop what listens there (ss -ltnp), or choose another --apiserver-port.")
        builds = [versions.build(n) for n in ("etcd", "kwok", "kubernetes")]
        if options.with_kai:
            builds.append(versions.build("kai"))
        bins = build.ensure_built(builds, progress, self.cache)
        try:
            self._start_control_plane(bins, progress)
            kube = Kube(self.kubeconfig())
            if options.with_kai:
                with progress.step(f"Installing KAI {versions.KAI_VERSION} CRDs, priority classes and default queues"):
                    kai.install_cluster_objects(kube, self.cache)
                self._start_kai(bins, kube, progress)
            self._create_fleet(kube, options.fleet, progress)
            self._write_state(options)
        except BaseException:
            if options.retain:
                progress.info(f"[yellow]Keeping the half-made lab for debugging (--retain): {self.home}[/yellow]")
            else:
                progress.info("[yellow]Cleaning up the half-made lab…[/yellow]")
                self._teardown()
            raise
        return self.info() or LabInfo(self.name, self.kubeconfig())

    def down(self, progress: Progress) -> None:
        if not self.home.exists():
            progress.info("No local lab to remove.")
            return
        with progress.step("Stopping the local lab and removing its state"):
            self._teardown()

    def info(self) -> LabInfo | None:
        if not self.state_file.exists():
            return None
        state = json.loads(self.state_file.read_text())
        comps = []
        for name in CONTROL_PLANE:
            alive = _pid_alive(self.cluster_dir / "pids" / f"{name}.pid")
            comps.append(ComponentHealth(name, alive, "running" if alive else f"not running; log: {self.cluster_dir / 'logs' / (name + '.log')}"))
        for name in state.get("kai_components", []):
            pid = self.kai_processes.pid(name)
            comps.append(ComponentHealth(name, pid is not None,
                                         f"pid {pid}" if pid else f"not running; log: {self.kai_processes.log_path(name)}"))
        return LabInfo(self.name, self.kubeconfig(), comps)

    # -- steps -----------------------------------------------------------------------------

    def _kwokctl(self, bins: dict[str, Path], *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = {**os.environ, "KWOK_WORKDIR": str(self.kwok_workdir), "KWOK_KUBE_VERSION": versions.KUBERNETES_VERSION}
        proc = subprocess.run([str(bins["kwokctl"]), "--name", CLUSTER, *args], env=env, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise KailabError(f"kwokctl {' '.join(args[:2])} failed.", details=_kwokctl_errors(proc.stderr or proc.stdout))
        return proc

    def kwokctl_config(self, bins: dict[str, Path]) -> list[dict]:
        """The kwokctl configuration (one document) and kailab's KWOK stages (the rest)."""
        options = {
            "runtime": "binary",
            "bindAddress": "127.0.0.1",
            # Exercises create and evict dozens of pods at once; client rate limits only slow them.
            "disableQPSLimits": True,
            "kubeVersion": versions.KUBERNETES_VERSION,
            "etcdBinary": str(bins["etcd"]),
            "kubeApiserverBinary": str(bins["kube-apiserver"]),
            "kubeControllerManagerBinary": str(bins["kube-controller-manager"]),
            "kubeSchedulerBinary": str(bins["kube-scheduler"]),
            "kwokControllerBinary": str(bins["kwok"]),
            "kubectlBinary": str(bins["kubectl"]),
        }
        if self.apiserver_port:
            options["kubeApiserverPort"] = self.apiserver_port
        conf = {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration", "options": options}
        return [conf, *yaml.safe_load_all(STAGES.read_text())]

    def _start_control_plane(self, bins: dict[str, Path], progress: Progress) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        config_path = self.home / "kwokctl.yaml"
        config_path.write_text(yaml.safe_dump_all(self.kwokctl_config(bins), sort_keys=False))
        with progress.step("Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK") as step:
            proc = self._kwokctl(bins, "create", "cluster", "--config", str(config_path),
                                 "--kubeconfig", str(self.kubeconfig()), "--wait", "90s", check=False)
            if proc.returncode != 0:
                failed = [n for n in CONTROL_PLANE if not _pid_alive(self.cluster_dir / "pids" / f"{n}.pid")]
                details = _kwokctl_errors(proc.stderr or proc.stdout)
                for name in failed[:2]:
                    details += f"\n--- last lines of {name}.log ---\n" + _tail(self.cluster_dir / "logs" / f"{name}.log")
                raise KailabError(
                    "The control plane did not start" + (f" ({', '.join(failed)} not running)" if failed else "") + ".",
                    hint=f"Logs: {self.cluster_dir / 'logs'}", details=details)
            # kwokctl create exits 0 even when the API server never became ready: check it here.
            kube = Kube(self.kubeconfig())
            deadline = time.monotonic() + 60
            while not kube.ping():
                if time.monotonic() > deadline:
                    raise KailabError("kube-apiserver started but does not answer.", hint=f"See {self.cluster_dir / 'logs' / 'kube-apiserver.log'}",
                                      details=_tail(self.cluster_dir / "logs" / "kube-apiserver.log"))
                time.sleep(0.2)
            step.note(f"API server {self._server()}")

    def _start_kai(self, bins: dict[str, Path], kube: Kube, progress: Progress) -> None:
        kai.check_fixed_ports()
        specs = kai.components(bins, self.kubeconfig(), self.home / "kai")
        with progress.step(f"Starting KAI {versions.KAI_VERSION}: {', '.join(s.name for s in specs)}"):
            for spec in specs:
                self.kai_processes.start(spec)
            kai.wait_healthy(specs, self.kai_processes, timeout=60)

    def _create_fleet(self, kube: Kube, fleet: Fleet, progress: Progress) -> None:
        with progress.step(f"Creating the fleet: {fleet.node_count} KWOK nodes, {fleet.total_gpus} GPUs") as step:
            create_fleet(kube, fleet, timeout=60, logs_hint=f"See {self.cluster_dir / 'logs' / 'kwok-controller.log'}")
            step.note(fleet.describe())

    def _write_state(self, options: UpOptions) -> None:
        state = {
            "runtime": self.name,
            "kubeconfig": str(self.kubeconfig()),
            "versions": versions.as_dict(),
            "fleet": options.fleet.source,
            "total_gpus": options.fleet.total_gpus,
            "kai_components": self.kai_processes.names(),
        }
        self.state_file.write_text(json.dumps(state, indent=2))

    def _server(self) -> str:
        try:
            conf = yaml.safe_load(self.kubeconfig().read_text())
            return conf["clusters"][0]["cluster"]["server"]
        except Exception:
            return "?"

    def _teardown(self) -> None:
        """Stop every process of this lab (kwokctl's and ours) and remove the lab dir."""
        self.kai_processes.stop_all()
        kwokctl = build.binary_dir(versions.build("kwok"), self.cache) / "kwokctl"
        if kwokctl.exists() and self.cluster_dir.exists():
            env = {**os.environ, "KWOK_WORKDIR": str(self.kwok_workdir)}
            subprocess.run([str(kwokctl), "--name", CLUSTER, "delete", "cluster"], env=env,
                           capture_output=True, text=True, timeout=120)
        kill_processes_under(self.home)
        shutil.rmtree(self.home, ignore_errors=True)


def kill_processes_under(root: Path) -> list[int]:
    """Kill any process whose command line names a path in ``root`` (the last guard against orphans)."""
    needle = str(root.resolve()) if root.exists() else str(root)
    killed = []
    for pid in lab_pids(needle):
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            pass
    return killed


def lab_pids(needle: str) -> list[int]:
    """Pids of processes whose command line mentions ``needle``."""
    out = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            out.append(int(entry.name))
    return out


def _pid_alive(pid_file: Path) -> bool:
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
        return True
    except (OSError, ValueError):
        return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _kwokctl_errors(text: str) -> str:
    """kwokctl logs JSON lines; keep the messages and errors a person can read."""
    out = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        msg = rec.get("msg", "")
        if rec.get("err"):
            msg += f": {rec['err']}"
        if rec.get("level") in ("ERROR", "WARN") or rec.get("err"):
            out.append(msg)
    return "\n".join(out[-15:])
