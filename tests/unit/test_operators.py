"""The workload operators: which kinds need which, how the local runtime runs each, and how a cluster kailab did not
make is read. The operators themselves run in tests/fleet/test_operators_on_kai.py."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from kailab import operators, versions
from kailab.errors import KailabError
from kailab.labels import MANAGED
from kailab.runtimes import local_operators
from kailab.runtimes.existing_operators import find
from kailab.runtimes.local_operators import LocalOperators


def test_each_operator_is_one_pinned_build_with_one_binary_and_kinds_of_its_own():
    seen_kinds: set[tuple[str, str]] = set()
    for op in operators.OPERATORS.values():
        assert op.build in versions.OPERATOR_BUILDS and op.binary in op.build.binaries
        assert not seen_kinds & set(op.kinds), f"{op.name} serves a kind another operator serves"
        seen_kinds |= set(op.kinds)
        assert op.grouper.startswith(operators.KAI_GROUPERS)
    assert {b.name for b in versions.OPERATOR_BUILDS} == set(operators.OPERATORS)


def test_the_objects_say_which_operators_they_need_each_once_in_order():
    objects = [
        {"apiVersion": "batch/v1", "kind": "Job"},
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"},
        {"apiVersion": "ray.io/v1", "kind": "RayCluster"},
        {"apiVersion": "ray.io/v1", "kind": "RayJob"},
        {"apiVersion": "ray.io/v1alpha1", "kind": "RayCluster"},  # a version no operator of kailab's serves
        {"kind": "PyTorchJob"},  # no apiVersion
    ]
    assert [op.name for op in operators.needed_by(objects)] == ["lws", "kuberay"]
    assert operators.operator_for("kubeflow.org/v1", "PyTorchJob") is operators.OPERATORS["training-operator"]
    assert operators.operator_for("apps/v1", "StatefulSet") is None


def test_an_unknown_operator_is_refused_naming_the_ones_kailab_runs():
    with pytest.raises(KailabError) as refused:
        operators.operator("volcano")
    assert "volcano" in refused.value.message and all(
        name in (refused.value.hint or "") for name in operators.OPERATORS
    )


def test_ensure_for_ensures_every_needed_operator_once():
    asked = []

    class Recording(operators.OperatorControl):
        def ensure(self, name, progress):
            asked.append(name)

        def status(self):
            return []

    names = Recording().ensure_for(
        [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}] * 2 + [{"apiVersion": "v1", "kind": "Pod"}], None
    )
    assert names == asked == ["jobset"]


# ---------------------------------------------------------------- the local runtime


@pytest.fixture
def local(tmp_path):
    """LocalOperators on a stand-in runtime: a lab folder with kwokctl's certificate files."""
    pki = tmp_path / "kwok" / "clusters" / "kailab" / "pki"
    pki.mkdir(parents=True)
    for name in ("ca.crt", "admin.crt", "admin.key"):
        (pki / name).write_text(f"-----{name}-----\n")
    runtime = SimpleNamespace(
        cluster_dir=pki.parent,
        kai_processes=SimpleNamespace(root=tmp_path / "kai"),
        kubeconfig=lambda: tmp_path / "kubeconfig.yaml",
    )
    return LocalOperators(runtime)  # type: ignore[arg-type]


WEBHOOKS = [
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "lws-mutating-webhook-configuration"},
        "webhooks": [
            {
                "name": "mpod.kb.io",
                "clientConfig": {
                    "service": {"name": "lws-webhook-service", "namespace": "lws-system", "path": "/mutate--v1-pod"}
                },
                "objectSelector": {
                    "matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]
                },
                "failurePolicy": "Fail",
            }
        ],
    }
]


def test_upstreams_webhooks_are_called_on_loopback_with_the_labs_ca_and_nothing_else_changes(local):
    op = operators.OPERATORS["lws"]
    (conf,) = local.webhook_objects(op, WEBHOOKS, 40123, {})
    (hook,) = conf["webhooks"]
    assert hook["clientConfig"] == {
        "url": "https://127.0.0.1:40123/mutate--v1-pod",
        "caBundle": base64.b64encode(b"-----ca.crt-----\n").decode(),
    }
    upstream = WEBHOOKS[0]["webhooks"][0]
    assert {k: v for k, v in hook.items() if k != "clientConfig"} == {
        k: v for k, v in upstream.items() if k != "clientConfig"
    }
    assert conf["metadata"] == {"name": "lws-mutating-webhook-configuration", "labels": MANAGED}
    (renamed,) = local.webhook_objects(op, WEBHOOKS, 1, {"lws-mutating-webhook-configuration": "kailab-x"})
    assert renamed["metadata"]["name"] == "kailab-x"


def install(op_name: str, config: str) -> list[dict]:
    """A rendered install with what the launchers read: the Deployment, its config, its webhooks."""
    op = operators.OPERATORS[op_name]
    return [
        {
            "kind": "Deployment",
            "metadata": {"name": op.deployment, "namespace": f"{op_name}-system"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2"]}]
                    }
                }
            },
        },
        {
            "kind": "ConfigMap",
            "metadata": {"name": f"{op_name}-manager-config"},
            "data": {"controller_manager_config.yaml": config},
        },
        *WEBHOOKS,
    ]


@pytest.mark.parametrize("name", ["jobset", "lws"])
def test_jobset_and_lws_run_upstreams_config_with_the_labs_ports_and_certificate(local, tmp_path, name):
    op = operators.OPERATORS[name]
    upstream = "apiVersion: config.x/v1alpha1\nkind: Configuration\nleaderElection:\n  leaderElect: true\ninternalCertManagement:\n  enable: true\n"
    work = tmp_path / "work"
    launch = local_operators.LAUNCHERS[name](local, op, Path("/bin/op"), install(name, upstream), work)
    argv = launch.spec.argv
    assert argv[0] == "/bin/op" and f"--config={work / 'config.yaml'}" in argv and "--zap-log-level=2" in argv
    assert "--config=/controller_manager_config.yaml" not in argv and "--leader-elect=false" in argv
    conf = yaml.safe_load((work / "config.yaml").read_text())
    assert conf["kind"] == "Configuration" and conf["leaderElection"] == {"leaderElect": False}
    assert conf["internalCertManagement"] == {"enable": False}
    assert conf["webhook"]["host"] == "127.0.0.1" and conf["webhook"]["port"] == launch.webhook_port
    assert (Path(conf["webhook"]["certDir"]) / "tls.crt").read_text() == "-----admin.crt-----\n"
    assert (Path(conf["webhook"]["certDir"]) / "tls.key").stat().st_mode & 0o077 == 0
    for address in (conf["metrics"]["bindAddress"], conf["health"]["healthProbeBindAddress"]):
        assert address.startswith("127.0.0.1:") and address != "127.0.0.1:8080"
    assert launch.spec.health_url == f"http://{conf['health']['healthProbeBindAddress']}/readyz"
    (hooks,) = launch.objects
    assert hooks["webhooks"][0]["clientConfig"]["url"].startswith(f"https://127.0.0.1:{launch.webhook_port}/")


def test_the_host_file_the_training_operator_waits_for_is_removed_only_if_this_lab_wrote_it(tmp_path, monkeypatch):
    fixed = tmp_path / "tmp" / "k8s-webhook-server" / "serving-certs" / "tls.crt"
    monkeypatch.setattr(local_operators, "TRAINING_OPERATOR_CERT_CHECK", fixed)
    record = tmp_path / "kai" / "operators" / "training-operator" / local_operators.HOST_FILE_RECORD
    record.parent.mkdir(parents=True)
    fixed.parent.mkdir(parents=True)
    record.write_text("ours")
    fixed.write_text("someone else's")
    local_operators.forget_host_files(tmp_path / "kai")
    assert fixed.read_text() == "someone else's"
    fixed.write_text("ours")
    local_operators.forget_host_files(tmp_path / "kai")
    assert not fixed.exists() and not (tmp_path / "tmp" / "k8s-webhook-server").exists()


# ---------------------------------------------------------------- a cluster kailab did not make


class Crds:
    def __init__(self, *names: str):
        self.names = names

    def get(self, api_version, kind, name, namespace=None):
        return {"metadata": {"name": name}} if name in self.names else None


def deployment(namespace: str, name: str, image: str, ready: int) -> SimpleNamespace:
    return SimpleNamespace(
        metadata=SimpleNamespace(namespace=namespace, name=name),
        spec=SimpleNamespace(template=SimpleNamespace(spec=SimpleNamespace(containers=[SimpleNamespace(image=image)]))),
        status=SimpleNamespace(ready_replicas=ready),
    )


def test_an_operator_is_installed_with_its_crds_and_a_ready_controller_found_by_name_or_image():
    ray = operators.OPERATORS["kuberay"]
    crds = Crds(*ray.crds)
    by_image = deployment("ml", "my-ray", "quay.io/kuberay/operator:v1.4.2@sha256:abc", 1)
    assert find(crds, ray, [by_image]).controller == "ml/my-ray"  # type: ignore[arg-type]
    assert find(crds, ray, [deployment("x", "kuberay-operator", "mirror.local/ray:1", 1)]).installed  # type: ignore[arg-type]
    not_ready = find(crds, ray, [deployment("x", "kuberay-operator", "quay.io/kuberay/operator:v1.5.1", 0)])  # type: ignore[arg-type]
    assert not not_ready.installed and "no ready controller" in not_ready.describe()
    other = find(crds, ray, [deployment("x", "lws-controller-manager", "registry.k8s.io/lws/lws:v0.7.0", 1)])  # type: ignore[arg-type]
    assert other.controller is None


def test_what_is_missing_or_could_not_be_read_is_said():
    lws = operators.OPERATORS["lws"]
    missing = find(Crds(), lws, [])  # type: ignore[arg-type]
    assert (
        missing.describe() == "LeaderWorkerSet: no CRD leaderworkersets.leaderworkerset.x-k8s.io; no ready controller"
    )
    unread = find(Crds(*lws.crds), lws, None, "Deployments: 403 Forbidden")  # type: ignore[arg-type]
    assert (
        not unread.installed
        and "could not tell whether its controller runs (Deployments: 403 Forbidden)" in unread.describe()
    )


class Cluster:
    """A stand-in API server for CRDs: what is applied is stored, and served (Established) at once."""

    def __init__(self, **existing: dict):
        self.crds = {name: {"metadata": {"name": name, **meta}} for name, meta in existing.items()}
        self.applied: list[str] = []
        self.read: list[str] = []
        self.dyn = SimpleNamespace(resources=SimpleNamespace(invalidate_cache=lambda: None))

    def get(self, api_version, kind, name, namespace=None):
        crd = self.crds.get(name)
        return crd and {**crd, "status": {"conditions": [{"type": "Established", "status": "True"}]}}

    def crd(self, name):
        self.read.append(name)
        crd = self.crds.get(name)
        return crd and crd["metadata"]

    def apply(self, obj):
        self.applied.append(obj["metadata"]["name"])
        self.crds[obj["metadata"]["name"]] = obj


def test_a_crd_someone_else_installed_is_used_never_replaced_and_kailabs_own_is_applied_again():
    ray = operators.OPERATORS["kuberay"]
    objects = [
        {"kind": "CustomResourceDefinition", "metadata": {"name": name, "labels": {"upstream": "yes"}}}
        for name in ray.crds
    ] + [{"kind": "Deployment", "metadata": {"name": ray.deployment}}]
    cluster = Cluster(**{"rayclusters.ray.io": {"labels": {"helm.sh/chart": "kuberay-operator-1.4.0"}}})
    theirs = operators.install_crds(cluster, ray, objects)  # type: ignore[arg-type]
    assert theirs == ["rayclusters.ray.io"]
    assert cluster.applied == ["rayjobs.ray.io", "rayservices.ray.io"]
    assert cluster.crds["rayjobs.ray.io"]["metadata"]["labels"] == {"upstream": "yes", **MANAGED}
    assert operators.install_crds(cluster, ray, objects) == ["rayclusters.ray.io"]  # type: ignore[arg-type]
    assert cluster.applied[2:] == ["rayjobs.ray.io", "rayservices.ray.io"]
    assert len(cluster.read) == 6  # by their metadata alone


# ---------------------------------------------------------------- the kind runtime


def test_on_kind_upstreams_install_runs_kailabs_image_with_the_labs_label_and_requests_and_no_crds():
    from kailab.runtimes import kind_operators

    ray = operators.OPERATORS["kuberay"]
    upstream = [
        {"kind": "CustomResourceDefinition", "metadata": {"name": "rayclusters.ray.io"}},
        {"kind": "ServiceAccount", "metadata": {"name": "kuberay-operator", "namespace": "default"}},
        {
            "kind": "Deployment",
            "metadata": {"name": "kuberay-operator", "namespace": "default", "labels": {"app": "x"}},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "image": "quay.io/kuberay/operator:v1.5.1",
                                "args": ["--feature-gates=RayClusterStatusConditions=true"],
                                "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "100m"}},
                            }
                        ]
                    }
                }
            },
        },
    ]
    objects = kind_operators.install_objects(ray, upstream, {"kailab.io/lab": "true"})
    assert [o["kind"] for o in objects] == ["ServiceAccount", "Deployment"]
    assert all(o["metadata"]["labels"]["kailab.io/lab"] == "true" for o in objects)
    (container,) = objects[1]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"kailab.local/kuberay:{versions.KUBERAY_VERSION}"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["args"] == ["--feature-gates=RayClusterStatusConditions=true", "--batch-scheduler=kai-scheduler"]
    assert container["resources"] == {"limits": {"memory": "512Mi"}, "requests": kind_operators.LAB_REQUESTS}
    assert upstream[2]["spec"]["template"]["spec"]["containers"][0]["image"].startswith("quay.io")  # not changed

    (load, start) = kind_operators.steps(Path("/lab"), "kailab", ray, Path("/c/kuberay.tar"), upstream, {})
    assert load[1] == [["kind", "load", "image-archive", "/c/kuberay.tar", "--name", "kailab"]]
    title, commands, files = start
    assert commands[0][-2:] == ["-f", "/lab/operator-kuberay.yaml"] and "--server-side" in commands[0]
    assert commands[1][-3:] == ["status", "deployment/kuberay-operator", "--timeout=180s"]
    assert [d["kind"] for d in yaml.safe_load_all(files["operator-kuberay.yaml"])] == ["ServiceAccount", "Deployment"]
