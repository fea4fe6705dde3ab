"""KAI's usage database on the kind runtime: a Prometheus in the cluster, deployed when a scheduler first asks for one.

The same Prometheus as the local runtime's (kailab/runtimes/usage_db.py: its binary, scrape configuration, capacity
constants), as a Deployment, ConfigMap and Service in KAI's namespace. Its image is made here from that binary
(``kind_offline.prometheus_recipe``) and loaded into the nodes with ``kind load image-archive``: no registry.

KAI's operator puts a SchedulingShard's ``usageDBConfig`` into its scheduler's config file as it is, and fills in a
connection string only from ``Config.spec.prometheus`` — a Prometheus it manages through prometheus-operator's
CRDs, which the lab has not (pkg/operator/operands/scheduler/resources_for_shard.go, getUsageDBConfig). So the
shard gets the in-cluster Service's URL itself (:data:`URL`). Prometheus scrapes the queue-controller through the
Service the operator makes for it, port ``metrics`` 8080 (pkg/operator/operands/queue_controller/resources.go; the
service KAI's own ServiceMonitor names, common.go KaiServicesForServiceMonitor).
"""

from __future__ import annotations

from kailab.labels import KAI_NAMESPACE
from kailab.runtimes.kind_offline import PROMETHEUS_IMAGE
from kailab.runtimes.usage_db import config_text

NAME = "kailab-prometheus"  # its Deployment, Service and ConfigMap, and its pods' app label
PORT = 9090
QUEUE_CONTROLLER = f"queue-controller.{KAI_NAMESPACE}.svc:8080"  # KAI's operator's Service, port "metrics"
URL = f"http://{NAME}.{KAI_NAMESPACE}.svc.cluster.local:{PORT}"  # the shard's connectionString
MANIFEST = "usage-db.yaml"  # written in the lab's folder, applied server-side
CONFIG_FILE = "prometheus.yml"
# Its RSS was 52–60 MiB while time-fairshare ran (bench/kind_usage_db.py); the limit leaves room for a long class.
RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}}


def manifests(labels: dict[str, str]) -> list[dict]:
    """The Prometheus' ConfigMap, Deployment and Service, each carrying ``labels`` (the lab's)."""

    def meta(**extra) -> dict:
        return {"name": NAME, "namespace": KAI_NAMESPACE, "labels": {**labels, "app": NAME}, **extra}

    container = {
        "name": "prometheus",
        "image": PROMETHEUS_IMAGE,
        "imagePullPolicy": "IfNotPresent",  # loaded into the nodes, never pulled
        "args": [
            f"--config.file=/etc/prometheus/{CONFIG_FILE}",
            "--storage.tsdb.path=/prometheus",
            "--storage.tsdb.retention.time=1d",
            f"--web.listen-address=:{PORT}",
        ],
        "ports": [{"name": "http", "containerPort": PORT}],
        "readinessProbe": {"httpGet": {"path": "/-/ready", "port": PORT}, "periodSeconds": 2},
        "resources": RESOURCES,
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/prometheus", "readOnly": True},
            {"name": "data", "mountPath": "/prometheus"},
        ],
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(),
            "data": {CONFIG_FILE: config_text(QUEUE_CONTROLLER)},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(),
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},  # one TSDB: the old pod lets go of it first
                "selector": {"matchLabels": {"app": NAME}},
                "template": {
                    "metadata": {"labels": {**labels, "app": NAME}},
                    "spec": {
                        "securityContext": {"runAsUser": 65534, "runAsGroup": 65534, "runAsNonRoot": True},
                        "containers": [container],
                        "volumes": [{"name": "config", "configMap": {"name": NAME}}, {"name": "data", "emptyDir": {}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta(),
            "spec": {"selector": {"app": NAME}, "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]},
        },
    ]
