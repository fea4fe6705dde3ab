"""KAI Scheduler on the local runtime: its cluster objects, and its components as processes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from kailab import build, versions
from kailab.errors import KailabError
from kailab.kai_patches import PODGROUP_CRD, PODGROUP_CRD_PATCH, apply_json_patch
from kailab.kube import Kube, wait_crds_established
from kailab.labels import (
    KAI_NAMESPACE,
    KAI_SCHEDULER_NAME,
    KAI_SCHEDULER_PROCESS,
    MANAGED,
    NODEPOOL_LABEL,
    QUEUE_LABEL,
    RESERVATION_APP_LABEL,
    RESERVATION_NAMESPACE,
    RESERVATION_SERVICE_ACCOUNT,
)
from kailab.outfile import write_own
from kailab.paths import MANIFESTS
from kailab.runtimes import gpu_ledger
from kailab.runtimes.processes import ProcessGroup, ProcessSpec, free_port, port_in_use
from kailab.scheduler_settings import SchedulerSettings
from kailab.waiting import until

DEFAULT_QUEUES = MANIFESTS / "kai-default-queues.yaml"
CHART_DIR = "deployments/kai-scheduler"

SCHEDULER_CONFIG = MANIFESTS / "kai-scheduler-config.yaml"


def module_dir() -> Path:
    """Where the pinned KAI module is: the Go module cache (filled by the build).

    ``KAILAB_KAI_MODULE_DIR`` names another copy of the same module, for machines whose
    Go proxy does not serve it but that have the module's files.
    """
    if os.environ.get("KAILAB_KAI_MODULE_DIR"):
        return Path(os.environ["KAILAB_KAI_MODULE_DIR"])
    return build.module_source(versions.build("kai"))


def crd_objects(chart: Path) -> list[dict]:
    """KAI's CRDs, read from the pinned module's Helm chart (``crds/``)."""
    out: list[dict] = []
    for path in sorted((chart / "crds").glob("*.yaml")):
        out.extend(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "CustomResourceDefinition")
    return out


def priority_class_objects(chart: Path) -> list[dict]:
    """The chart's four priority classes (train 50, build-preemptible 75, build 100, inference 125).

    Each template is plain YAML inside one ``{{- if .Values.defaultPriorityClasses.enabled }}``;
    the template lines are dropped, the YAML is kept.
    """
    out: list[dict] = []
    for path in sorted((chart / "templates" / "priorityclasses").glob("*.yaml")):
        text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("{{"))
        out.extend(d for d in yaml.safe_load_all(text) if d and d.get("kind") == "PriorityClass")
    return out


def install_cluster_objects(kube: Kube, cache: Path | None = None) -> None:
    """CRDs (and wait until they are served), the four priority classes, the chart's default queues."""
    chart = module_dir() / CHART_DIR
    crds = [
        apply_json_patch(c, PODGROUP_CRD_PATCH) if c["metadata"]["name"] == PODGROUP_CRD else c
        for c in crd_objects(chart)
    ]
    for crd in crds:
        kube.apply(crd)
    wait_crds_established(kube, [c["metadata"]["name"] for c in crds])
    kube.dyn.resources.invalidate_cache()
    for ns in (KAI_NAMESPACE, RESERVATION_NAMESPACE):
        kube.ensure_namespace(ns)
    # The binder creates GPU reservation pods (fractions) with this service account; KAI's operator makes it
    # (pkg/operator/operands/binder/resources.go, resourceReservationServiceAccount). Without it the API server
    # refuses them: "error looking up service account kai-resource-reservation/kai-resource-reservation".
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": RESERVATION_SERVICE_ACCOUNT,
                "namespace": RESERVATION_NAMESPACE,
                "labels": dict(MANAGED),
            },
        }
    )
    for pc in priority_class_objects(chart):
        kube.apply(pc)
    for obj in yaml.safe_load_all(DEFAULT_QUEUES.read_text()):
        if obj:
            kube.apply(obj)


# Every KAI component's client to the API server. KAI's default (50 requests/s, burst 300) is sized for a shared
# production API server; here it was the lab's bottleneck: the pod-grouper patches every pod, the scheduler creates a
# BindRequest per pod, the binder binds each one, so a 2,000-pod Job waited ~4 minutes on the limiter alone. The
# lab's own control plane runs unlimited (kwokctl's disableQPSLimits: 5000/s, burst 10000), and so does KAI here.
CLIENT_LIMITS = ("--qps=5000", "--burst=10000")


def scheduler_config(settings: SchedulerSettings = SchedulerSettings(), usage_db: dict | None = None) -> str:
    """The scheduler's ``--scheduler-conf`` file: what KAI's operator renders for a SchedulingShard with these settings.

    The defaults give ``manifests/kai-scheduler-config.yaml`` as it is. The rest follows the operator
    (pkg/apis/kai/v1/schedulingshard_types.go, setDefaultPlugins and setDefaultActions; the file itself:
    pkg/operator/operands/scheduler/resources_for_shard.go, configMapForShard): GPU spread enables gpuspread in
    gpupack's place (both priority 300) and disables gpupack and gpusharingorder; nodeplacement takes both
    strategies as its arguments; spread for either resource disables the consolidation action; kValue is the
    proportion plugin's argument, the minimum runtimes the minruntime plugin's; queueDepthPerAction is copied
    as it is, each of its actions one the file runs (else a :class:`KailabError`, as the operator refuses it).
    ``usage_db``: the file's ``usageDBConfig`` (kailab/runtimes/usage_db.py), needed when the settings have
    usage params (the operator's getUsageDBConfig copies the shard's, with a connection string).
    """
    text = SCHEDULER_CONFIG.read_text()
    if (
        settings.shard_spec()
        == SchedulerSettings(full_hierarchy_fairness=settings.full_hierarchy_fairness).shard_spec()
    ):
        return text
    conf = yaml.safe_load(text)
    arguments = {
        "nodeplacement": {"cpu": settings.cpu_placement, "gpu": settings.gpu_placement},
        "proportion": {}
        if settings.k_value is None
        else {"kValue": f"{float(settings.k_value):f}".rstrip("0").rstrip(".")},
        "minruntime": {
            key: value
            for key, value in (
                ("defaultPreemptMinRuntime", settings.preempt_min_runtime),
                ("defaultReclaimMinRuntime", settings.reclaim_min_runtime),
            )
            if value is not None
        },
    }
    plugins = []
    for p in conf["tiers"][0]["plugins"]:
        if settings.gpu_placement == "spread" and p["name"] == "gpusharingorder":
            continue
        if settings.gpu_placement == "spread" and p["name"] == "gpupack":
            p = {"name": "gpuspread"}
        if arguments.get(p["name"]):
            p = {**p, "arguments": arguments[p["name"]]}
        plugins.append(p)
    conf["tiers"][0]["plugins"] = plugins
    actions = [a.strip() for a in conf["actions"].split(",")]
    if "spread" in (settings.gpu_placement, settings.cpu_placement):
        actions.remove("consolidation")
    conf["actions"] = ", ".join(actions)
    if settings.queue_depth_per_action:
        unknown = sorted(set(settings.queue_depth_per_action) - set(actions))
        if unknown:
            raise KailabError(
                f"queueDepthPerAction names {', '.join(unknown)}, which the scheduler does not run "
                f"(its actions: {conf['actions']})."
            )
        conf["queueDepthPerAction"] = dict(settings.queue_depth_per_action)
    if settings.usage_params is not None:
        if usage_db is None:
            raise KailabError("These scheduler settings ask for a usage database, and none was given.")
        conf["usageDBConfig"] = usage_db
    return (
        f"# Written by kailab: what KAI {versions.KAI_VERSION}'s operator renders for {settings.describe()}\n"
        + yaml.safe_dump(conf, sort_keys=False)
    )


def scheduler_flags(settings: SchedulerSettings = SchedulerSettings()) -> list[str]:
    """The settings' command-line flags (none for the defaults), as KAI's operator adds a shard's ``spec.args``."""
    return [f"--{name}={value}" for name, value in settings.args().items()]


def scheduler_spec(
    bins: dict[str, Path],
    kubeconfig: Path,
    workdir: Path,
    settings: SchedulerSettings = SchedulerSettings(),
    partition: str = "",
    name: str = KAI_SCHEDULER_PROCESS,
    args: dict[str, str] | None = None,
    usage_db: dict | None = None,
) -> ProcessSpec:
    """KAI's scheduler with these settings, on fresh loopback ports; writes its config file in ``workdir``.

    ``partition``: the node-pool label value it schedules (a class's learner, kailab/classroom); "" the lab's own
    scheduler, which sees only nodes, queues and PodGroups without the label. ``name``: its process name.
    ``args``: a SchedulingShard's ``spec.args``, added after the other flags as the operator adds them (a flag
    given twice: the last wins); None: the settings' own (:func:`scheduler_flags`). ``usage_db``: see
    :func:`scheduler_config`.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    conf = workdir / "scheduler-config.yaml"
    write_own(conf, scheduler_config(settings, usage_db))
    metrics, plugins = free_port(), free_port()
    return ProcessSpec(
        name,
        [
            # The flags KAI's operator gives the scheduler of a shard (the chart's default shard: partition "").
            str(bins[KAI_SCHEDULER_PROCESS]),
            f"--scheduler-conf={conf}",
            f"--scheduler-name={KAI_SCHEDULER_NAME}",
            f"--namespace={KAI_NAMESPACE}",
            f"--nodepool-label-key={NODEPOOL_LABEL}",
            f"--partition-label-value={partition}",
            f"--resource-reservation-app-label={RESERVATION_APP_LABEL}",
            f"--queue-label-key={QUEUE_LABEL}",
            f"--listen-address=127.0.0.1:{metrics}",
            f"--plugin-server-port={plugins}",
            *CLIENT_LIMITS,
            *(scheduler_flags(settings) if args is None else [f"--{k}={v}" for k, v in args.items()]),
        ],
        {"KUBECONFIG": str(kubeconfig)},
        health_url=f"http://127.0.0.1:{metrics}/metrics",
    )


def components(bins: dict[str, Path], kubeconfig: Path, workdir: Path) -> list[ProcessSpec]:
    """KAI's components with the settings its Helm chart gives them, each on its own loopback ports.

    Every KAI component listens on :8080/:8081 by default, so each gets free ports here.
    Webhooks are off (they need a Service and certificates); admission is not run.
    Each reads the lab's kubeconfig from ``KUBECONFIG``.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    env = {"KUBECONFIG": str(kubeconfig)}
    common = [f"--scheduler-name={KAI_SCHEDULER_NAME}", *CLIENT_LIMITS]
    specs = []

    specs.append(scheduler_spec(bins, kubeconfig, workdir))

    # (flags, health path): podgrouper and podgroupcontroller serve /healthz on the probe port;
    # the binder has no health check, so its metrics endpoint answers for it. The pod-grouper keeps KAI's own
    # 10 workers: with the lab's PodGroup CRD default (kailab/kai_patches.py) they no longer fight over one PodGroup.
    controllers = {
        # The reservation flags KAI's operator passes (their defaults, said here); --fake-gpu-nodes because the
        # fleet's nodes carry run.ai/fake.gpu=true (pkg/operator/operands/binder/resources.go, hasFakeGPUNodes).
        # No --runtime-class-name: the operator sets none by default, so reservation pods need no RuntimeClass.
        "kai-binder": (
            [
                f"--resource-reservation-namespace={RESERVATION_NAMESPACE}",
                f"--resource-reservation-service-account={RESERVATION_SERVICE_ACCOUNT}",
                f"--resource-reservation-app-label={RESERVATION_APP_LABEL}",
                "--fake-gpu-nodes",
            ],
            "metrics",
        ),
        "kai-podgrouper": ([f"--queue-label-key={QUEUE_LABEL}", f"--nodepool-label-key={NODEPOOL_LABEL}"], "healthz"),
        "kai-podgroupcontroller": (["--enable-podgroup-webhook=false"], "healthz"),
    }
    for name, (extra, health_on) in controllers.items():
        metrics, probe = free_port(), free_port()
        url = f"http://127.0.0.1:{probe}/healthz" if health_on == "healthz" else f"http://127.0.0.1:{metrics}/metrics"
        specs.append(
            ProcessSpec(
                name,
                [
                    str(bins[name]),
                    *common,
                    *extra,
                    f"--metrics-bind-address=127.0.0.1:{metrics}",
                    f"--health-probe-bind-address=127.0.0.1:{probe}",
                ],
                env,
                health_url=url,
            )
        )

    metrics = free_port()
    specs.append(
        ProcessSpec(
            "kai-queuecontroller",
            [
                str(bins["kai-queuecontroller"]),
                "--enable-webhook=false",
                f"--metrics-listen-address=127.0.0.1:{metrics}",
                *CLIENT_LIMITS,
            ],
            env,
            health_url=f"http://127.0.0.1:{metrics}/metrics",
        )
    )
    specs.append(gpu_ledger_spec(kubeconfig))
    return specs


def gpu_ledger_spec(kubeconfig: Path) -> ProcessSpec:
    """kailab's stand-in for fake-gpu-operator's status-updater (kailab/runtimes/gpu_ledger/), on a fresh loopback port.

    It gives KAI's GPU reservation pods their GPU id, so fractional pods bind, and keeps the ledger of
    which pod holds which fake GPU. The kubeconfig is on its command line (not only in the environment), so
    the process names the lab folder like KAI's components do.
    """
    health = free_port()
    return python_process(
        gpu_ledger.PROCESS_NAME,
        gpu_ledger.__name__,
        [f"--kubeconfig={kubeconfig}", f"--health-port={health}", f"--scheduler-name={KAI_SCHEDULER_NAME}"],
        health_url=f"http://127.0.0.1:{health}/healthz",
    )


def python_process(name: str, module: str, args: list[str], health_url: str | None = None) -> ProcessSpec:
    """A process of kailab's own (``python -m module args``), with kailab importable from the process's folder
    (lab/kai) even when it runs from a source checkout."""
    import sys

    import kailab

    path = [str(Path(kailab.__file__).parent.parent), os.environ.get("PYTHONPATH", "")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in path if p), "PYTHONUNBUFFERED": "1"}
    return ProcessSpec(name, [sys.executable, "-m", module, *args], env, health_url=health_url)


# KAI v0.17.0's podgroup-controller ignores --metrics-bind-address (cmd/podgroupcontroller/app/app.go
# never passes it to the manager), so its metrics always listen on controller-runtime's default :8080.
FIXED_PORTS = {"kai-podgroupcontroller": 8080}


def check_fixed_ports() -> None:
    """Fail early, with what to do, when a port KAI cannot be moved off is taken."""
    for name, port in FIXED_PORTS.items():
        if port_in_use(port):
            raise KailabError(
                f"Port {port} is in use, and KAI {versions.KAI_VERSION}'s {name} always listens on it "
                "(it ignores --metrics-bind-address).",
                hint=f"Stop what listens on port {port} (see: ss -ltnp 'sport = :{port}'), then run kailab up again.",
            )


def wait_healthy(specs: list[ProcessSpec], group: ProcessGroup, timeout: float = 60) -> None:
    """Every component alive and, where it has one, its health endpoint answering 200."""
    import urllib.request

    waiting = {s.name: s for s in specs}

    def healthy() -> bool:
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
        return not waiting

    until(
        healthy,
        timeout,
        0.3,
        fail=lambda _: group.fail(next(iter(waiting)), f"did not become healthy within {timeout:.0f}s"),
    )


def actions_run(metrics: str) -> set[str]:
    """The actions the scheduler has run, from its metrics (``kai_action_scheduling_latency_milliseconds{action=…}``).

    Set once per action per scheduling cycle (pkg/scheduler/scheduler.go runOnce), so a non-empty set says a
    cycle has run: the scheduler's caches are synced and it schedules.
    """
    return set(re.findall(r'^kai_action_scheduling_latency_milliseconds\{action="([^"]+)"\}', metrics, re.MULTILINE))
