"""KAI's usage database on kind: the in-cluster Prometheus' objects, its image, the SchedulingShard's usageDBConfig
(with the connection string KAI's operator does not fill in without prometheus-operator), and the kind scheduler
control and a kind class's shard control that deploy it. The kind e2e test (tests/kind) runs time-fairshare on it."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from kailab import shards
from kailab.classroom.klass import Class
from kailab.labels import KAI_NAMESPACE, KAI_SCHEDULER_DEPLOYMENT
from kailab.runtimes import kind_offline, kind_usage_db, usage_db
from kailab.runtimes.kind import KindRuntime
from kailab.runtimes.kind_plan import (
    CLUSTER,
    KAI_CONFIG,
    LAB_LABEL,
    OWN_ENTRIES,
    SCHEDULER_SHARD,
    Result,
    shard_patch,
    usage_db_steps,
)
from kailab.scenarios.live import LiveCluster
from kailab.scheduler_settings import SchedulerSettings

TIME_FAIRSHARE = SchedulerSettings(k_value=1, usage_params={"windowSize": "1m", "halfLifePeriod": "30s"})
CAPACITY = {"nvidia.com/gpu": 32.0, "cpu": 80.0, "memory": 2e9}


def merge_patch(target, patch):
    """A JSON merge patch (RFC 7386), as the API server applies ``kubectl patch --type merge``."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _by_kind(objects: list[dict]) -> dict[str, dict]:
    return {o["kind"]: o for o in objects}


def test_the_prometheus_objects_scrape_the_queue_controller_and_answer_at_the_shards_url():
    objects = _by_kind(kind_usage_db.manifests({LAB_LABEL: "true"}))
    assert set(objects) == {"ConfigMap", "Deployment", "Service"}
    for o in objects.values():
        assert o["metadata"]["name"] == kind_usage_db.NAME and o["metadata"]["namespace"] == KAI_NAMESPACE
        assert o["metadata"]["labels"][LAB_LABEL] == "true"  # the lab's, like its other objects
    # the same scrape configuration as the local runtime's, aimed at the operator's queue-controller Service
    conf = yaml.safe_load(objects["ConfigMap"]["data"][kind_usage_db.CONFIG_FILE])
    assert conf == yaml.safe_load(usage_db.config_text("queue-controller.kai-scheduler.svc:8080"))
    assert conf["global"]["scrape_interval"] == usage_db.SCRAPE_INTERVAL == "5s"
    pod = objects["Deployment"]["spec"]["template"]
    [container] = pod["spec"]["containers"]
    assert container["image"] == kind_offline.PROMETHEUS_IMAGE and container["imagePullPolicy"] != "Always"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert f"--config.file={mounts['config']}/{kind_usage_db.CONFIG_FILE}" in container["args"]
    assert f"--storage.tsdb.path={mounts['data']}" in container["args"]
    assert {"name": "config", "configMap": {"name": kind_usage_db.NAME}} in pod["spec"]["volumes"]
    assert container["readinessProbe"]["httpGet"]["port"] == kind_usage_db.PORT
    # the Service selects the pod and serves the port the shard's URL names
    service = objects["Service"]["spec"]
    assert service["selector"].items() <= pod["metadata"]["labels"].items()
    assert objects["Deployment"]["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert [p["port"] for p in service["ports"]] == [kind_usage_db.PORT]
    assert kind_usage_db.URL == f"http://{kind_usage_db.NAME}.{KAI_NAMESPACE}.svc.cluster.local:{kind_usage_db.PORT}"


def test_the_prometheus_image_is_the_local_runtimes_binary_run_as_nobody(tmp_path):
    binary = tmp_path / "prometheus"
    binary.write_bytes(b"\x7fELF not really\n")
    recipe = kind_offline.prometheus_recipe(binary)
    out = tmp_path / "prometheus.tar"
    kind_offline.write_image(recipe, out, tmp_path)
    with tarfile.open(out) as tar:
        (manifest,) = json.load(tar.extractfile("manifest.json"))
        config = json.loads(tar.extractfile(manifest["Config"]).read())["config"]
        [layer] = manifest["Layers"]
        with tarfile.open(fileobj=io.BytesIO(tar.extractfile(layer).read())) as files:
            entry = files.getmember("bin/prometheus")
            assert files.extractfile(entry).read() == binary.read_bytes() and entry.mode == 0o755
    assert manifest["RepoTags"] == [kind_offline.PROMETHEUS_IMAGE]
    assert config["Entrypoint"] == ["/bin/prometheus"] and config["User"] == "65534:65534"
    assert not out.with_name(out.name + ".partial").exists()


def test_the_image_archive_is_made_once_from_the_cached_binary_under_prometheus_own_lock(tmp_path, monkeypatch):
    binary = tmp_path / "prometheus"
    binary.write_bytes(b"binary")
    asked = []

    def built(builds, progress, cache, lock=".lock"):
        asked.append(([b.name for b in builds], lock))
        return {"prometheus": binary}

    monkeypatch.setattr(kind_offline.build, "ensure_built", built)
    first = kind_offline.ensure_prometheus_archive(kind_offline.Progress(quiet=True), tmp_path / "cache")
    assert first == kind_offline.prometheus_archive_path(tmp_path / "cache") and first.is_file()
    assert asked == [(["prometheus"], usage_db.BUILD_LOCK)]
    made = first.stat().st_mtime_ns
    assert kind_offline.ensure_prometheus_archive(kind_offline.Progress(quiet=True), tmp_path / "cache") == first
    assert first.stat().st_mtime_ns == made  # kept, not made again


def test_the_shard_gets_the_connection_string_and_capacity_and_gives_back_the_scenarios_settings():
    usage = usage_db.usage_db_config(TIME_FAIRSHARE, kind_usage_db.URL, CAPACITY)
    spec = shard_patch(TIME_FAIRSHARE, usage)["spec"]
    assert spec["kValue"] == 1
    assert spec["usageDBConfig"] == {
        "clientType": "prometheus",
        # KAI's operator fills one in only from kai-config's Prometheus (prometheus-operator), which the lab has not
        "connectionString": kind_usage_db.URL,
        "usageParams": {
            "windowSize": "1m",
            "halfLifePeriod": "30s",
            "fetchInterval": None,  # a usage param of an earlier scenario is removed from the shard
            "windowType": None,
            "extraParams": {
                "gpuCapacityMetric": "vector(32)",
                "cpuCapacityMetric": "vector(80)",
                "memoryCapacityMetric": "vector(2e+09)",
                "queryResolution": usage_db.QUERY_RESOLUTION,
            },
        },
    }
    earlier = {"usageDBConfig": {"clientType": "prometheus", "usageParams": {"fetchInterval": "5s"}}}
    shard = merge_patch(earlier, spec)
    assert "fetchInterval" not in shard["usageDBConfig"]["usageParams"]
    assert SchedulerSettings.from_shard(shard) == TIME_FAIRSHARE  # extraParams are the lab's, not the scenario's
    assert "usageDBConfig" not in merge_patch(shard, shard_patch(SchedulerSettings())["spec"])


class FakeCluster:
    """KAI's operator and kind in miniature: the shard and kai-config as merge patches make them, the scheduler's
    Deployment while enabled, the Prometheus' once applied; the fleet's nodes for the capacity."""

    def __init__(self):
        self.enabled = True
        self.prometheus = False
        self.shard: dict = {"spec": {"placementStrategy": {"gpu": "binpack", "cpu": "binpack"}}}
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> Result:
        self.calls.append(argv)
        rest = argv[3:]
        if rest[:3] == ["patch", *KAI_CONFIG]:
            self.enabled = json.loads(argv[-1])["spec"]["scheduler"]["service"]["enabled"]
        elif rest[:3] == ["patch", *SCHEDULER_SHARD]:
            self.shard = merge_patch(self.shard, json.loads(argv[-1]))
        elif rest[:3] == ["get", *SCHEDULER_SHARD]:
            return Result(0, json.dumps(self.shard))
        elif rest[:2] == ["apply", "--server-side"] and rest[-1].endswith(kind_usage_db.MANIFEST):
            self.prometheus = True
        return Result(0, "")

    def connect(self, kubeconfig):
        def deployments(ns, **kw):
            names = [
                *([KAI_SCHEDULER_DEPLOYMENT] if self.enabled else []),
                *([kind_usage_db.NAME] if self.prometheus else []),
            ]
            ready = SimpleNamespace(replicas=1)
            return SimpleNamespace(
                items=[
                    SimpleNamespace(
                        metadata=SimpleNamespace(name=n), spec=ready, status=SimpleNamespace(ready_replicas=1)
                    )
                    for n in names
                ]
            )

        def pods(ns, label_selector="", **kw):
            return SimpleNamespace(
                items=[SimpleNamespace(metadata=SimpleNamespace(name="s-0"))] if self.enabled else []
            )

        def nodes(api, kind, label_selector=""):
            assert (api, kind) == ("v1", "Node")
            pool = label_selector.removeprefix("kai.scheduler/node-pool=")
            if label_selector.startswith("!"):  # the lab's fleet: kind's own nodes are in a pool of their own
                return [{"status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "16", "memory": "1Gi"}}}] * 4
            return [{"status": {"capacity": {"nvidia.com/gpu": "4" if pool == "ann" else "99"}}}]

        return SimpleNamespace(
            apps=SimpleNamespace(list_namespaced_deployment=deployments),
            core=SimpleNamespace(list_namespaced_pod=pods),
            list=nodes,
        )


@pytest.fixture
def archive(tmp_path, monkeypatch) -> Path:
    out = tmp_path / "prometheus.tar"
    monkeypatch.setattr(kind_offline, "ensure_prometheus_archive", lambda progress: out)
    return out


def test_kind_time_fairshare_deploys_prometheus_once_then_sets_the_shard(tmp_path, archive):
    fake = FakeCluster()
    rt = KindRuntime(home=tmp_path, runner=fake, connect=fake.connect, timeout=5)
    control = rt.scheduler_control()
    assert control.runs_usage_db
    assert "usage-db" in LiveCluster(fake.connect(None), control).abilities()  # time-fairshare is applicable

    control.start(TIME_FAIRSHARE)
    load, apply = usage_db_steps(tmp_path, archive)
    changes = [c for c in fake.calls if c[3] != "get"]
    assert changes[:3] == [*load.commands, *apply.commands], "the Prometheus first, ready before the shard is set"
    assert changes[3][3:6] == ["patch", *KAI_CONFIG] and changes[4][3:6] == ["patch", *SCHEDULER_SHARD]
    assert load.commands == [["kind", "load", "image-archive", str(archive), "--name", CLUSTER]]
    written = list(yaml.safe_load_all((tmp_path / kind_usage_db.MANIFEST).read_text()))
    assert written == kind_usage_db.manifests({LAB_LABEL: "true"})
    assert kind_usage_db.MANIFEST in OWN_ENTRIES  # down removes it with the lab's folder
    usage = fake.shard["spec"]["usageDBConfig"]
    assert usage["connectionString"] == kind_usage_db.URL and fake.shard["spec"]["kValue"] == 1
    assert usage["usageParams"]["extraParams"]["gpuCapacityMetric"] == "vector(32)"  # 4 fleet nodes of 8
    assert control.settings == TIME_FAIRSHARE and control.running()

    before = len(fake.calls)
    control.start(TIME_FAIRSHARE)  # already so: nothing to do (but read the shard)
    assert [c[3] for c in fake.calls[before:]] == ["get"]
    control.start(SchedulerSettings(usage_params={}))  # other settings: Prometheus runs already, not applied again
    assert not any("load" in c or "apply" in c for c in fake.calls[before:])
    assert fake.shard["spec"]["usageDBConfig"]["usageParams"].keys() == {"extraParams"}
    control.start()
    assert "usageDBConfig" not in fake.shard["spec"] and "kValue" not in fake.shard["spec"]


def test_a_kind_class_learners_shard_gets_the_labs_prometheus_and_their_partitions_capacity(tmp_path, archive):
    fake = FakeCluster()
    rt = KindRuntime(home=tmp_path, runner=fake, connect=fake.connect, timeout=5)
    patched = []
    kube = SimpleNamespace(
        dyn=SimpleNamespace(patch=lambda resource, body, **kw: patched.append(body)), resource=lambda *a: None
    )
    control = Class(rt.capabilities().partitions).control("ann", kube)  # type: ignore[arg-type]
    assert control.runs_usage_db
    control.running = lambda: False  # type: ignore[method-assign]
    control._patch = lambda spec, what: patched.append(spec)  # type: ignore[method-assign]
    control.start(TIME_FAIRSHARE)
    [spec] = patched
    assert spec["partitionLabelValue"] == "ann"
    assert spec["usageDBConfig"]["connectionString"] == kind_usage_db.URL
    assert spec["usageDBConfig"]["usageParams"]["extraParams"]["gpuCapacityMetric"] == "vector(4)"
    assert fake.prometheus
    # a learner on their own machine (no lab's runtime to deploy with): not applicable
    assert not shards.ShardSchedulerControl(kube, "ann").runs_usage_db  # type: ignore[arg-type]
