"""The local runtime: a real control plane, KWOK GPU nodes and KAI as local processes, no Docker.

How the local fleet starts:
1. ``build.ensure_built`` builds the pinned binaries into the cache (once per version).
2. ``kwokctl --runtime binary`` starts etcd, kube-apiserver, kube-controller-manager,
   kube-scheduler and the KWOK controller from those binaries, with kailab's stages
   (``manifests/kwok-stages.yaml``), bound to 127.0.0.1, all state under the lab dir. With ``--address ADDR``
   kube-apiserver alone also answers at ADDR, its certificate valid for it (:meth:`LocalRuntime.kwokctl_config`).
3. ``kai.install_cluster_objects`` applies KAI's CRDs, priority classes and default queues.
4. ``kai.components`` describes KAI's scheduler, binder and controllers, and kailab's GPU ledger; they run as
   processes kailab supervises (``processes.ProcessGroup``): pids/ and logs/ in the lab dir.
5. The fleet's KWOK nodes are created and waited for until Ready.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
from pathlib import Path

import psutil
import yaml

from kailab import build, labdir, network, versions
from kailab.errors import KailabError
from kailab.fleet import Fleet, create_fleet
from kailab.kube import Kube
from kailab.labels import KAI_SCHEDULER_PROCESS, SHARD_SUPERVISOR
from kailab.labstate import LabState
from kailab.outfile import write_own
from kailab.paths import MANIFESTS
from kailab.progress import Progress
from kailab.runtimes import gpu_ledger, usage_db
from kailab.runtimes import local_kai as kai
from kailab.runtimes.base import Capabilities, ComponentHealth, LabInfo, Runtime, Traits, UpOptions
from kailab.runtimes.local_controls import LocalGpuLedgerControl, LocalSchedulerControl
from kailab.runtimes.local_operators import LocalOperators, forget_host_files
from kailab.runtimes.processes import Identity, ProcessGroup, port_in_use, stop
from kailab.scheduler_settings import SchedulerSettings
from kailab.userfile import peek_text, tail
from kailab.waiting import until

CLUSTER = "kailab"
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller")
STAGES = MANIFESTS / "kwok-stages.yaml"
# What the local runtime writes in its lab folder; `down` removes exactly these.
OWN_ENTRIES = ("kwok", "kai", "lab.json", "kubeconfig.yaml", "kwokctl.yaml", "control-plane.pids")


class LocalRuntime(Runtime):
    """Everything on this machine, from binaries built out of Go modules."""

    traits = Traits(
        "local",
        takes=frozenset({"with_kai", "apiserver_port", "retain", "address"}),
        preference=20,  # used when no Docker engine answers
        own_entries=OWN_ENTRIES,
    )

    def __init__(self, home: Path | None = None, cache: Path | None = None, state: LabState | None = None):
        super().__init__(home, state)
        self.cache = cache
        self.kwok_workdir = self.home / "kwok"
        self.cluster_dir = self.kwok_workdir / "clusters" / CLUSTER
        self.kai_processes = ProcessGroup(self.home / "kai")
        self.control_plane_file = self.home / "control-plane.pids"

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
        if info := self._running(progress):
            return info
        labdir.claim(self.home)  # before anything slow: a folder that is not the lab's is refused
        if self.cluster_dir.exists() or self.kai_processes.names():
            with progress.step("Removing a lab that is not healthy (left by an earlier run)"):
                self._teardown()
                labdir.claim(self.home)
        if options.apiserver_port and port_in_use(options.apiserver_port):
            raise KailabError(
                f"Port {options.apiserver_port} on 127.0.0.1 is already in use.",
                hint="Stop what listens there (ss -ltnp), or choose another --apiserver-port.",
            )
        if options.address and options.apiserver_port and network.port_taken(options.address, options.apiserver_port):
            raise KailabError(
                f"Port {options.apiserver_port} at {options.address} is already in use.",
                hint=f"Stop what listens there (ss -ltnp 'sport = :{options.apiserver_port}'), or choose another "
                "--apiserver-port (or leave it out: a free one).",
            )
        bins = self.ensure_builds(options.with_kai, progress)
        try:
            self._start_control_plane(bins, progress, options.apiserver_port, options.address)
            kube = Kube(self.kubeconfig())
            if options.with_kai:
                with progress.step(f"Installing KAI {versions.KAI_VERSION} CRDs, priority classes and default queues"):
                    kai.install_cluster_objects(kube, self.cache)
                self._start_kai(bins, kube, progress)
            self._create_fleet(kube, options.fleet, progress)
            self._write_state(options)
        except BaseException:
            if options.retain:
                progress.info(f"Keeping the half-made lab for debugging (--retain): {self.home}", style="yellow")
            else:
                progress.info("Cleaning up the half-made lab…", style="yellow")
                self._teardown()
            raise
        return self.info() or LabInfo(self.traits.name, self.kubeconfig())

    def down(self, progress: Progress) -> None:
        if not self.home.exists():
            progress.info("No local lab to remove.")
            return
        labdir.refuse_unless_ours(self.home)
        with progress.step("Stopping the local lab and removing its state"):
            left = self._teardown()
        labdir.report_left(self.home, left, progress)

    def forget(self, progress: Progress) -> None:
        """Without a state file the lab's processes are still known by identity (pid files): down works the same."""
        self.down(progress)

    def info(self) -> LabInfo | None:
        state = self._state()
        if state is None:
            return None
        comps = []
        control_plane = self._control_plane()
        for name in CONTROL_PLANE:
            alive = name in control_plane and control_plane[name].alive()
            comps.append(
                ComponentHealth(
                    name,
                    alive,
                    "running" if alive else f"not running; log: {self.cluster_dir / 'logs' / (name + '.log')}",
                )
            )
        for name in state.kai_components:
            pid = self.kai_processes.pid(name)
            comps.append(
                ComponentHealth(
                    name,
                    pid is not None,
                    f"pid {pid}" if pid else f"not running; log: {self.kai_processes.log_path(name)}",
                )
            )
        return LabInfo(self.traits.name, self.kubeconfig(), comps)

    # -- steps -----------------------------------------------------------------------------

    def _kwokctl(self, bins: dict[str, Path], *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = {**os.environ, "KWOK_WORKDIR": str(self.kwok_workdir), "KWOK_KUBE_VERSION": versions.KUBERNETES_VERSION}
        try:
            proc = subprocess.run(
                [str(bins["kwokctl"]), "--name", CLUSTER, *args], env=env, capture_output=True, text=True, timeout=300
            )
        except subprocess.TimeoutExpired as e:
            raise KailabError(
                f"kwokctl {' '.join(args[:2])} did not finish in 5 minutes.",
                hint=f"See the logs in {self.cluster_dir / 'logs'}",
            ) from e
        if check and proc.returncode != 0:
            raise KailabError(
                f"kwokctl {' '.join(args[:2])} failed.", details=_kwokctl_errors(proc.stderr or proc.stdout)
            )
        return proc

    def kwokctl_config(
        self, bins: dict[str, Path], apiserver_port: int | None = None, address: str | None = None
    ) -> list[dict]:
        """The kwokctl configuration (one document) and kailab's KWOK stages (the rest).

        ``address``: an address of this machine where learners reach the API server. Its serving certificate names
        it (kwokctl's ``kubeApiserverCertSANs``; kwokctl v0.8.0 signs one certificate with these SANs beside
        localhost and 127.0.0.1: pkg/kwokctl/pki/pki.go), and kube-apiserver listens on every address of its family
        (``--bind-address``, kwokctl's own set to loopback, overridden): it takes one bind address, and the lab's own
        components reach it on 127.0.0.1, as kwokctl writes every kubeconfig. Every other process stays on loopback
        (``bindAddress``)."""
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
        if apiserver_port:
            options["kubeApiserverPort"] = apiserver_port
        if address:
            options["kubeApiserverCertSANs"] = [address]
        # etcd without fsync: the lab's cluster is thrown away with `kailab down`, so a crash may lose it whole;
        # every write no longer waits for the disk (a 32-pod Job bound ~0.3 s sooner, measured). The API server
        # deletes a collection with 8 workers, not 1: clearing a lesson's 40 pods took 1.5 s, now 0.6 s.
        patches = [
            {"name": "etcd", "extraArgs": [{"key": "unsafe-no-fsync", "value": "true"}]},
            {
                "name": "kube-apiserver",
                "extraArgs": [
                    {"key": "delete-collection-workers", "value": "8"},
                    # it listens on loopback only: say so, or it looks for a
                    # default route (a machine offline has none) and fails
                    {"key": "advertise-address", "value": "127.0.0.1"},
                    *(
                        [{"key": "bind-address", "value": network.listen_all(address), "override": True}]
                        if address
                        else []
                    ),
                ],
            },
        ]
        conf = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
            "componentsPatches": patches,
        }
        return [conf, *yaml.safe_load_all(STAGES.read_text())]

    def _start_control_plane(
        self, bins: dict[str, Path], progress: Progress, apiserver_port: int | None, address: str | None = None
    ) -> None:
        config_path = self.home / "kwokctl.yaml"
        write_own(config_path, yaml.safe_dump_all(self.kwokctl_config(bins, apiserver_port, address), sort_keys=False))
        with progress.step("Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK") as step:
            since = time.time()
            try:
                proc = self._kwokctl(
                    bins,
                    "create",
                    "cluster",
                    "--config",
                    str(config_path),
                    "--kubeconfig",
                    str(self.kubeconfig()),
                    "--wait",
                    "90s",
                    check=False,
                )
            finally:
                self._record_control_plane(since)
            if proc.returncode != 0:
                running = self._control_plane()
                failed = [n for n in CONTROL_PLANE if n not in running or not running[n].alive()]
                details = _kwokctl_errors(proc.stderr or proc.stdout)
                for name in failed[:2]:
                    details += f"\n--- last lines of {name}.log ---\n" + _tail(
                        self.cluster_dir / "logs" / f"{name}.log"
                    )
                raise KailabError(
                    "The control plane did not start" + (f" ({', '.join(failed)} not running)" if failed else "") + ".",
                    hint=f"Logs: {self.cluster_dir / 'logs'}",
                    details=details,
                )
            # kwokctl create exits 0 even when the API server never became ready: check it here.
            kube = Kube(self.kubeconfig())
            log = self.cluster_dir / "logs" / "kube-apiserver.log"
            until(
                kube.ping,
                60,
                0.2,
                fail=lambda _: KailabError(
                    "kube-apiserver started but does not answer.", hint=f"See {log}", details=_tail(log)
                ),
            )
            step.note(
                f"API server {self._server()}"
                + (f", and {network.with_host(self._server(), address)} for learners" if address else "")
            )

    def _record_control_plane(self, since: float) -> None:
        """Remember, by pid and start time, the processes kwokctl started for this lab.

        Read from kwokctl's pid files right after it started them; a pid whose process began
        before this ``up`` did is not ours and is not recorded.
        """
        found = {}
        for name in CONTROL_PLANE:
            try:
                pid = int((peek_text(self.cluster_dir / "pids" / f"{name}.pid", 64) or "").strip())
            except ValueError:
                continue
            ident = Identity.of(pid)
            if ident and ident.started >= since - 2:
                found[name] = ident.dump()
        write_own(self.control_plane_file, json.dumps(found, indent=1), root=self.home)

    def _control_plane(self) -> dict[str, Identity]:
        try:
            recorded = json.loads(peek_text(self.control_plane_file) or "{}")
        except ValueError:
            return {}
        parsed = (
            {name: Identity.parse(str(text)) for name, text in recorded.items()} if isinstance(recorded, dict) else {}
        )
        return {name: ident for name, ident in parsed.items() if ident}

    def processes(self) -> list[Identity]:
        """Every process this lab started that still runs (the control plane and KAI's components)."""
        return [i for i in self._control_plane().values() if i.alive()] + self.kai_processes.running()

    def listening_beyond_loopback(self) -> list[tuple[str, str, int]]:
        """(process, address, port) of every socket a process of this lab listens on beyond this machine's loopback
        (``0.0.0.0`` and ``::`` are every address): what another machine could reach, were a firewall to allow it."""
        named = {
            **self._control_plane(),
            **{n: i for n in self.kai_processes.names() if (i := self.kai_processes.identity(n))},
        }
        found = []
        for name, ident in sorted(named.items()):
            try:
                sockets = psutil.Process(ident.pid).net_connections(kind="inet")
            except psutil.Error:  # ended since it was listed
                continue
            for c in sockets:
                if c.status == psutil.CONN_LISTEN and not ipaddress.ip_address(c.laddr.ip).is_loopback:
                    found.append((name, c.laddr.ip, c.laddr.port))
        return sorted(set(found))

    def memory_mib(self) -> float | None:
        """Memory (RSS, MiB) of every process the lab runs, together."""
        total = 0
        for ident in self.processes():
            try:
                total += psutil.Process(ident.pid).memory_info().rss
            except psutil.Error:  # ended since it was listed
                pass
        return total / 2**20

    def _start_kai(self, bins: dict[str, Path], kube: Kube, progress: Progress) -> None:
        kai.check_fixed_ports()
        specs = kai.components(bins, self.kubeconfig(), self.home / "kai")
        with progress.step(f"Starting KAI {versions.KAI_VERSION}: {', '.join(s.name for s in specs)}"):
            for spec in specs:
                self.kai_processes.start(spec)
            kai.wait_healthy(specs, self.kai_processes, timeout=60)
        write_own(
            self.home / "kai" / usage_db.METRICS_RECORD,
            json.dumps({s.name: s.health_url for s in specs if s.health_url and s.health_url.endswith("/metrics")}),
            root=self.home,
        )
        self.scheduler_control().record(next(s for s in specs if s.name == KAI_SCHEDULER_PROCESS), SchedulerSettings())

    def ensure_builds(self, with_kai: bool, progress: Progress) -> dict[str, Path]:
        """The lab's binaries, built from their Go modules the first time (into the cache): the control plane, KWOK,
        and with KAI its usage database too, started only when a scheduler asks for it but built now, not then."""
        builds = [versions.build(n) for n in ("etcd", "kwok", "kubernetes")]
        if with_kai:
            builds.append(versions.build("kai"))
        bins = build.ensure_built(builds, progress, self.cache)
        if with_kai:
            build.ensure_built([versions.PROMETHEUS_BUILD], progress, self.cache, lock=usage_db.BUILD_LOCK)
        return bins

    def capabilities(self) -> Capabilities:
        """Its scheduler and GPU ledger are processes kailab started; its partitions' schedulers and the workload
        operators a lesson needs too."""
        from kailab.runtimes.local_partitions import LocalPartitions

        control = self.scheduler_control()
        state = self._state()
        without_ledger = state is not None and gpu_ledger.PROCESS_NAME not in state.kai_components
        ledger = None if without_ledger else self.gpu_ledger_control()
        return Capabilities(
            scheduler=control,
            gpu_ledger=ledger,
            metrics=control.metrics,
            partitions=LocalPartitions(self),
            gpu_sharing=True,
            memory=self.memory_mib,
            operators=LocalOperators(self),
        )

    def scheduler_control(self) -> LocalSchedulerControl:
        return LocalSchedulerControl(self)

    def gpu_ledger_control(self) -> LocalGpuLedgerControl:
        """kailab's GPU ledger process (a lab brought up without KAI runs none: :meth:`capabilities`)."""
        return LocalGpuLedgerControl(self)

    def _create_fleet(self, kube: Kube, fleet: Fleet, progress: Progress) -> None:
        with progress.step(f"Creating the fleet: {fleet.node_count} KWOK nodes, {fleet.total_gpus} GPUs") as step:
            create_fleet(kube, fleet, timeout=60, logs_hint=f"See {self.cluster_dir / 'logs' / 'kwok-controller.log'}")
            step.note(fleet.describe())

    def _write_state(self, options: UpOptions) -> None:
        LabState(
            self.traits.name,
            str(self.kubeconfig()),
            options.fleet.source,
            options.fleet.total_gpus,
            versions.as_dict(),
            kai_components=self.kai_processes.names(),
            shape=options.fleet.describe(),
            address=options.address or "",
        ).write(self.home)

    def _server(self) -> str:
        try:
            conf = yaml.safe_load(peek_text(self.kubeconfig()) or "")
            return str(conf["clusters"][0]["cluster"]["server"])
        except Exception:
            return "?"

    def _teardown(self) -> list[str]:
        """Stop every process this lab started and remove what it wrote; return what is left in its folder."""
        self.kai_processes.stop_all(first=(SHARD_SUPERVISOR,))  # it starts schedulers: stopped before them
        forget_host_files(self.kai_processes.root)
        kwokctl = build.binary_dir(versions.build("kwok"), self.cache) / "kwokctl"
        if kwokctl.exists() and self.cluster_dir.exists():
            env = {**os.environ, "KWOK_WORKDIR": str(self.kwok_workdir)}
            try:
                subprocess.run(
                    [str(kwokctl), "--name", CLUSTER, "delete", "cluster"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            except subprocess.TimeoutExpired:
                pass  # what kwokctl did not stop is stopped below, by identity
        stop(list(self._control_plane().values()), timeout=5)
        return labdir.remove(self.home, list(OWN_ENTRIES))


def _tail(path: Path, lines: int = 15) -> str:
    return tail(path, lines) or "(no log)"


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
