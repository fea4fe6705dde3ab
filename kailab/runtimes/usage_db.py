"""KAI's usage database on the local runtime: a real Prometheus, started when a scheduler first asks for one.

KAI v0.17.0's time-based fair share (docs/time-based-fairshare/README.md) reads each queue's past GPU, CPU and
memory allocation from Prometheus (pkg/scheduler/cache/usagedb/prometheus/prometheus.go): the queue-controller
publishes ``kai_queue_allocated_gpus`` (and ``_cpu_cores``, ``_memory_bytes``) labelled ``queue_name``
(pkg/queuecontroller/metrics/metrics.go), and Prometheus scrapes it — the one KAI service KAI's operator gives a
ServiceMonitor besides kube-state-metrics (pkg/operator/operands/common/common.go, KaiServicesForServiceMonitor).

The lab's Prometheus is built from its Go module (``versions.PROMETHEUS_BUILD``), runs as a process of the lab
(``kai/pids/prometheus.pid``, stopped by ``kailab down``), keeps its data in the lab's folder (``kai/prometheus/``),
listens on a free loopback port and scrapes the queue-controller every ``SCRAPE_INTERVAL``.

The kind runtime runs the same Prometheus in its cluster (kailab/runtimes/kind_usage_db.py), with this module's
scrape configuration and usageDBConfig.

Cluster capacity: KAI divides a queue's usage by the cluster's over the same window, by default
``sum(kube_node_status_capacity{resource=...})`` from kube-state-metrics. The lab builds no kube-state-metrics:
it gives the capacity queries through ``usageParams.extraParams`` (KAI's documented override, "Advanced:
overriding metrics") as constants, the partition's node capacity when the scheduler starts.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from kailab import build, versions
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import GPU, NODEPOOL_LABEL
from kailab.outfile import open_own_log, write_own
from kailab.progress import Progress
from kailab.quantity import QUANTITY, amount
from kailab.runtimes.processes import ProcessGroup, ProcessSpec, free_port
from kailab.scheduler_settings import USAGE_DB_CLIENT, SchedulerSettings
from kailab.userfile import peek_text

PROCESS_NAME = "prometheus"
SCRAPE_INTERVAL = "5s"  # KAI's own e2e test of time-based fair share scrapes every 5s (test/e2e/suites/timeaware)
QUERY_RESOLUTION = SCRAPE_INTERVAL  # KAI's step inside the usage window (extraParams queryResolution; default 1m)
BUILD_LOCK = ".lock-prometheus"  # its own build lock: its first build does not hold up a lab that needs only KAI
METRICS_RECORD = "metrics.json"  # kai/: each KAI component's metrics address, written at up
# KAI's capacity queries (extraParams keys) and the node capacity each stands for.
CAPACITY = {"gpuCapacityMetric": GPU, "cpuCapacityMetric": "cpu", "memoryCapacityMetric": "memory"}


def config_text(queue_controller: str) -> str:
    """Prometheus' configuration: scrape the queue-controller's metrics (``host:port``) every SCRAPE_INTERVAL."""
    return json.dumps(  # JSON is YAML; no user text goes in
        {
            "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": "4s"},
            "scrape_configs": [{"job_name": "queue-controller", "static_configs": [{"targets": [queue_controller]}]}],
        },
        indent=1,
    )


def queue_controller_address(group: ProcessGroup) -> str:
    """``host:port`` of the queue-controller's metrics, as the lab recorded it at up."""
    try:
        url = str(json.loads(peek_text(group.root / METRICS_RECORD) or "")["kai-queuecontroller"])
    except (ValueError, KeyError, TypeError):
        raise KailabError(
            "This lab did not record where KAI's queue-controller publishes its metrics, which the usage "
            "database scrapes (a lab brought up by an older kailab).",
            hint="Bring it up again: kailab down && kailab up",
        ) from None
    return url.removeprefix("http://").split("/", 1)[0]


def ensure_running(group: ProcessGroup, cache: Path | None, timeout: float = 60) -> str:
    """The lab's Prometheus' URL; built (first time only; ``cache`` None: the default) and started if it does not
    run yet."""
    from kailab.runtimes.local_kai import wait_healthy

    home = group.root / PROCESS_NAME
    home.mkdir(parents=True, exist_ok=True)
    with open_own_log(home / ".start-lock") as held:  # the shard supervisor starts schedulers from several threads
        fcntl.flock(held, fcntl.LOCK_EX)
        record = home / "url"
        if group.pid(PROCESS_NAME) is not None and (recorded := peek_text(record, 4096)):
            return recorded.strip()
        bins = build.ensure_built([versions.PROMETHEUS_BUILD], Progress(quiet=True), cache, lock=BUILD_LOCK)
        write_own(home / "prometheus.yml", config_text(queue_controller_address(group)))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        spec = ProcessSpec(
            PROCESS_NAME,
            [
                str(bins[PROCESS_NAME]),
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                "--storage.tsdb.retention.time=1d",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            health_url=f"{url}/-/ready",
        )
        group.start(spec)
        wait_healthy([spec], group, timeout=timeout)
        write_own(record, url)
        return url


def node_capacity(kube: Kube, partition: str) -> dict[str, float]:
    """The summed capacity of the partition's nodes (``partition`` "": nodes without a node-pool label)."""
    selector = f"{NODEPOOL_LABEL}={partition}" if partition else f"!{NODEPOOL_LABEL}"
    total = dict.fromkeys(CAPACITY.values(), 0.0)
    for node in kube.list("v1", "Node", label_selector=selector):
        capacity = (node.get("status") or {}).get("capacity") or {}
        for resource in total:
            text = str(capacity.get(resource, "0"))
            total[resource] += amount(text) if QUANTITY.match(text) else 0.0  # a form kailab never writes: not counted
    return total


def usage_db_config(settings: SchedulerSettings, url: str, capacity: dict[str, float]) -> dict:
    """The scheduler config file's ``usageDBConfig`` (what KAI's operator renders from a shard's, with the
    connection string it fills in): the scenario's usageParams, and the lab's capacity queries and resolution."""
    extra = {key: f"vector({capacity[resource]:g})" for key, resource in CAPACITY.items()}
    extra["queryResolution"] = QUERY_RESOLUTION
    return {
        "clientType": USAGE_DB_CLIENT,
        "connectionString": url,
        "usageParams": {**(settings.usage_params or {}), "extraParams": extra},
    }
