"""The kind runtime: kind + KWOK + fake-gpu-operator + KAI's Helm chart, for machines with Docker.

Offline (``--offline``, or when no image registry answers) every image is made here instead
(:mod:`kailab.runtimes.kind_offline`): a node image of our own, KAI's and KWOK's images from their modules,
and kailab's GPU ledger in place of fake-gpu-operator (which is published only as images and a chart).

The bring-up is a plan of commands, as data (:mod:`kailab.runtimes.kind_plan`); the runtime runs it through a
:class:`~kailab.runtimes.kind_plan.Runner` (tests swap it for a recording fake) and reads the cluster through the
kubernetes client.
"""

from __future__ import annotations

import json
import shutil
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import yaml

from kailab import labdir, versions
from kailab.errors import KailabError, ToolMissing
from kailab.fleet import Fleet, create_fleet
from kailab.kube import Kube
from kailab.labels import (
    GPU_OPERATOR_NAMESPACE,
    KAI_NAMESPACE,
    KAI_SCHEDULER_DEPLOYMENT,
    KWOK_CONTROLLER,
)
from kailab.labstate import LabState
from kailab.outfile import write_own
from kailab.progress import Progress
from kailab.runtimes import gpu_ledger, kind_usage_db, usage_db
from kailab.runtimes.base import (
    Capabilities,
    ComponentHealth,
    LabInfo,
    Runtime,
    SchedulerControl,
    Traits,
    UpOptions,
)
from kailab.runtimes.kind_plan import (
    CLUSTER,
    LAB_LABEL,
    OWN_ENTRIES,
    SCHEDULER_METRICS,
    SCHEDULER_SHARD,
    TOOLS,
    Result,
    Runner,
    Step,
    host_facts,
    plan,
    registries_unreachable,
    run_command,
    scheduler_start_plan,
    scheduler_stop_plan,
    usage_db_steps,
)
from kailab.runtimes.local_kai import gpu_ledger_spec, wait_healthy
from kailab.runtimes.processes import ProcessGroup
from kailab.scheduler_settings import SchedulerSettings
from kailab.shards import settings_of
from kailab.userfile import peek_text
from kailab.waiting import Pending, seen, until


class KindRuntime(Runtime):
    """A kind cluster named ``kailab``; the same KAI, fleet and exercises as the local runtime.

    External tools (docker, kind, helm, kubectl for upstream manifests) go through ``runner``;
    reads and the fleet go through the kubernetes client made by ``connect``. Tests swap both.
    """

    traits = Traits(
        "kind",
        takes=frozenset({"offline", "address"}),
        preference=10,  # first choice where a Docker engine answers
        own_entries=OWN_ENTRIES,
        after_failed_up="always keeps what a failed up made: the next kailab up completes it, kailab down removes it",
    )

    def __init__(
        self,
        home: Path | None = None,
        runner: Runner = run_command,
        connect: Callable[[Path], Kube] = Kube,
        timeout: float = 300,
        registry_unreachable: Callable[[], str | None] | None = None,
        state: LabState | None = None,
    ):
        super().__init__(home, state)
        self._runner = runner
        self.connect = connect
        self.timeout = timeout
        self._client: Kube | None = None
        self.registry_unreachable = registry_unreachable or registries_unreachable
        self.tools: dict[str, str] = {}  # tool name → the path to run (offline: the ones kailab built)
        if isinstance(tools := self.offline_record().get("tools"), dict):
            self.tools = {str(k): str(v) for k, v in tools.items()}

    def runner(self, argv: list[str]) -> Result:
        """Run a command; kind, helm and kubectl are the ones kailab built when the lab is offline."""
        return self._runner([self.tools.get(argv[0], argv[0]), *argv[1:]])

    def offline_record(self) -> dict:
        """What an offline up wrote (offline.json): the tools it built, whether it made Docker's kind network."""
        try:
            record = json.loads(peek_text(self.home / "offline.json") or "{}")
        except ValueError:
            return {}
        return record if isinstance(record, dict) else {}

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
        if exists and (at := self.api_server_host()) not in ("?", options.address or "127.0.0.1"):
            wanted = f"at {options.address}" if options.address else "on this machine's loopback"
            raise KailabError(
                f"The kind cluster '{CLUSTER}' exists with its API server at {at}; kind cannot move it {wanted}.",
                hint="Remove it first: kailab down, then kailab up"
                + (f" --address {options.address}" if options.address else ""),
            )
        state = self._state()
        if exists and state and state.complete and (info := self._running(progress)):
            return info
        host = host_facts(self.runner)
        for finding in host.describe()[1:]:
            progress.info(finding)
        if kit is not None and not exists:
            record = self.offline_record()
            network = self.runner(["docker", "network", "inspect", "kind"]).returncode == 0
            made = record.get("network_made", not network)
            write_own(
                self.home / "offline.json", json.dumps({"tools": self.tools, "network_made": made}), root=self.home
            )
        # Written first, so that `kailab down` finds (and deletes) a cluster whose `up` was interrupted.
        self._write_state(options.fleet, complete=False, address=options.address)
        for step in plan(self.home, options.fleet, exists, host, kit, options.address):
            self.execute(step, options.fleet, progress)
        self._write_state(options.fleet, complete=True, address=options.address)
        return self.info() or LabInfo(self.traits.name, self.kubeconfig())

    def api_server_host(self) -> str:
        """The host the lab's kubeconfig names for the API server (kind writes the address it published it at); "?"
        when it cannot be read."""
        try:
            server = yaml.safe_load(self.kubeconfig().read_text())["clusters"][0]["cluster"]["server"]
        except (OSError, yaml.YAMLError, LookupError, TypeError):
            return "?"
        return urllib.parse.urlsplit(str(server)).hostname or "?"

    def _write_state(self, fleet: Fleet, complete: bool, address: str | None = None) -> None:
        LabState(
            self.traits.name,
            str(self.kubeconfig()),
            fleet.source,
            fleet.total_gpus,
            versions.as_dict(),
            shape=fleet.describe(),
            complete=complete,
            address=address or "",
        ).write(self.home)

    def execute(self, step: Step, fleet: Fleet | None, progress: Progress) -> None:
        """Run one step; on failure say which step, what it ran, what it printed. ``fleet``: for a create_fleet step."""
        with progress.step(step.title):
            for name, text in step.files.items():
                write_own(self.home / name, text, root=self.home)
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
                    f"get pods -n {KWOK_CONTROLLER[0]} -l app={KWOK_CONTROLLER[1]}; kubectl -n {GPU_OPERATOR_NAMESPACE} get pods"
                )
                create_fleet(self.kube(), fleet, timeout=180, logs_hint=hint)

    def wait_deployments(self, step: Step) -> None:
        """Until each named Deployment exists and has all replicas ready (the operator makes most of them)."""

        def ready() -> bool | Pending:
            healthy = {c.name for c in (self.info_components() or []) if c.healthy}
            missing = [d for d in step.wait_for if d not in healthy]
            return not missing or Pending(", ".join(missing))

        self._wait(step, ready, 2, "not Ready")

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

        self._wait(step, gone, 1, "still there")

    def _wait(self, step: Step, holds: Callable[[], bool | Pending], every: float, unlike: str) -> None:
        """Until ``holds``, asked ``every`` seconds; at the timeout the step fails with what was ``unlike`` it."""
        until(
            holds,
            self.timeout,
            every,
            fail=lambda last: KailabError(
                f"Step failed: {step.title}: {unlike} after {self.timeout:.0f}s: {seen(last)}.",
                hint=f"Look at them: kubectl --kubeconfig {self.kubeconfig()} -n {KAI_NAMESPACE} get pods,events",
            ),
        )

    def capabilities(self) -> Capabilities:
        """KAI's scheduler through the objects its operator reads; partitions through the operator too (time-based
        fair share with the lab's Prometheus); workload operators installed in the cluster on first need."""
        from kailab.runtimes.kind_operators import KindOperators
        from kailab.runtimes.operator_partitions import OperatorPartitions

        control = self.scheduler_control()
        return Capabilities(
            scheduler=control,
            metrics=control.metrics,
            partitions=OperatorPartitions(self, usage_db=control.usage_db, usage_db_url=kind_usage_db.URL),
            gpu_sharing=True,
            operators=KindOperators(self, CLUSTER, {LAB_LABEL: "true"}, Step),
        )

    def scheduler_control(self) -> KindSchedulerControl:
        return KindSchedulerControl(self)

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
        if self._state() is None:
            return None
        comps = self.info_components()
        return LabInfo(
            self.traits.name,
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
        return settings_of(json.loads(out.stdout))

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
