"""A learner's partition as a SchedulingShard: the object's shape, its settings both ways, the local config file it
gives, the scheduler control that patches it, and the refusals of a cluster that cannot run shards (kind and
existing runtimes: no KAI operator, no CRD, no KWOK). The fleet tests run shards on the real KAI (local runtime)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from kailab import partitions, shards
from kailab.classroom.klass import Class
from kailab.classroom.roster import from_names
from kailab.errors import KailabError
from kailab.fleet import load_fleet
from kailab.labels import LEARNER_LABEL, NODEPOOL_LABEL, SHARD_API
from kailab.runtimes import local_partitions, usage_db
from kailab.runtimes import shard_supervisor as supervisor
from kailab.runtimes.base import Traits
from kailab.runtimes.local_kai import scheduler_config
from kailab.runtimes.local_partitions import LocalPartitions
from kailab.runtimes.operator_partitions import OperatorPartitions, operator_missing
from kailab.runtimes.processes import ProcessGroup
from kailab.scheduler_settings import SchedulerSettings

EVERYTHING = SchedulerSettings(
    gpu_placement="spread",
    cpu_placement="spread",
    full_hierarchy_fairness=False,
    k_value=1.5,
    preempt_min_runtime="10m",
    reclaim_min_runtime="30s",
    queue_depth_per_action={"reclaim": 8, "allocate": 25},
    usage_params={"windowSize": "1m", "halfLifePeriod": "30s"},
)


def test_a_learners_shard_is_kais_object_named_and_labelled_as_theirs():
    shard = shards.shard_object("ann", partitions.owner("ann").labels)
    assert shard["apiVersion"] == SHARD_API == "kai.scheduler/v1" and shard["kind"] == "SchedulingShard"
    assert shard["metadata"]["name"] == "ann-shard" == shards.shard_name("ann")
    labels = shard["metadata"]["labels"]
    assert labels[NODEPOOL_LABEL] == "ann" and labels[LEARNER_LABEL] == "ann"
    assert partitions.owner("ann").owns(labels) and not partitions.owner("bob").owns(labels)
    assert shard["spec"] == {
        "partitionLabelValue": "ann",
        "placementStrategy": {"gpu": "binpack", "cpu": "binpack"},
        "args": {"schedule-period": "250ms"},
    }
    assert shards.scheduler_name("ann") == "kai-scheduler-ann-shard"  # the operator's Deployment name for it


def test_settings_go_into_a_shard_and_come_back_the_same():
    spec = EVERYTHING.shard_spec()
    assert spec == {
        "placementStrategy": {"gpu": "spread", "cpu": "spread"},
        "args": {"schedule-period": "250ms", "full-hierarchy-fairness": "false"},
        "kValue": 1.5,
        "minRuntime": {"preemptMinRuntime": "10m", "reclaimMinRuntime": "30s"},
        "queueDepthPerAction": {"reclaim": 8, "allocate": 25},
        # no connection string: the local supervisor adds its own; kind gives the shard one (test_kind_usage_db)
        "usageDBConfig": {"clientType": "prometheus", "usageParams": {"windowSize": "1m", "halfLifePeriod": "30s"}},
    }
    assert SchedulerSettings.from_shard(spec) == EVERYTHING
    assert SchedulerSettings.from_shard({}) == SchedulerSettings(full_hierarchy_fairness=True)
    patch = SchedulerSettings().shard_patch()
    assert patch["kValue"] is None and patch["minRuntime"] is None and patch["queueDepthPerAction"] is None
    assert patch["usageDBConfig"] is None  # a shard that had the usage database loses it
    assert patch["args"] == {"full-hierarchy-fairness": None, "schedule-period": "250ms"}


@pytest.mark.parametrize(
    "spec, says",
    [
        ({"placementStrategy": {"gpu": "scatter"}}, "binpack or spread"),
        ({"kValue": "lots"}, "k_value must be a number"),
        ({"minRuntime": {"reclaimMinRuntime": "soon"}}, "a duration"),
        ({"queueDepthPerAction": {"reclaim": "deep"}}, "queue_depth_per_action"),
        ({"args": ["x"]}, "mapping"),
        ({"usageDBConfig": {"clientType": "influxdb"}}, "clientType must be prometheus"),
        ({"usageDBConfig": {"clientType": "prometheus", "usageParams": {"windowSize": "a while"}}}, "windowSize"),
    ],
)
def test_a_shard_with_a_bad_setting_is_refused_saying_which(spec, says):
    with pytest.raises(KailabError) as e:
        SchedulerSettings.from_shard(spec)
    assert says in e.value.message


def test_the_local_config_file_carries_every_shard_setting_as_the_operator_renders_it():
    usage = usage_db.usage_db_config(EVERYTHING, "http://127.0.0.1:9", {"nvidia.com/gpu": 32, "cpu": 80, "memory": 2e9})
    conf = yaml.safe_load(scheduler_config(EVERYTHING, usage))
    # KAI's scheduler reads usageDBConfig from its config file (pkg/scheduler/conf/scheduler_conf.go)
    assert conf["usageDBConfig"] == {
        "clientType": "prometheus",
        "connectionString": "http://127.0.0.1:9",
        "usageParams": {
            "windowSize": "1m",
            "halfLifePeriod": "30s",
            "extraParams": {
                "gpuCapacityMetric": "vector(32)",
                "cpuCapacityMetric": "vector(80)",
                "memoryCapacityMetric": "vector(2e+09)",
                "queryResolution": "5s",
            },
        },
    }
    plugins = {p["name"]: p.get("arguments") for p in conf["tiers"][0]["plugins"]}
    assert plugins["proportion"] == {"kValue": "1.5"}
    assert plugins["minruntime"] == {"defaultPreemptMinRuntime": "10m", "defaultReclaimMinRuntime": "30s"}
    assert plugins["nodeplacement"] == {"cpu": "spread", "gpu": "spread"}
    assert "gpuspread" in plugins and "gpupack" not in plugins and "gpusharingorder" not in plugins
    assert "consolidation" not in conf["actions"]
    assert conf["queueDepthPerAction"] == {"reclaim": 8, "allocate": 25}
    default = yaml.safe_load(scheduler_config(SchedulerSettings()))
    assert (
        "usageDBConfig" not in default
        and "queueDepthPerAction" not in default
        and "arguments" not in next(p for p in default["tiers"][0]["plugins"] if p["name"] == "proportion")
    )


def test_usage_settings_without_a_usage_database_are_refused():
    with pytest.raises(KailabError) as e:
        scheduler_config(SchedulerSettings(usage_params={}))
    assert "usage database" in e.value.message


def test_the_lab_prometheus_scrapes_the_queue_controller_it_recorded(tmp_path):
    group = ProcessGroup(tmp_path)
    with pytest.raises(KailabError) as e:
        usage_db.queue_controller_address(group)
    assert "kailab down && kailab up" in e.value.hint
    (tmp_path / usage_db.METRICS_RECORD).write_text('{"kai-queuecontroller": "http://127.0.0.1:4242/metrics"}')
    address = usage_db.queue_controller_address(group)
    conf = yaml.safe_load(usage_db.config_text(address))
    assert address == "127.0.0.1:4242"
    assert conf["scrape_configs"] == [{"job_name": "queue-controller", "static_configs": [{"targets": [address]}]}]
    assert conf["global"]["scrape_interval"] == usage_db.SCRAPE_INTERVAL == "5s"


def test_a_queue_depth_for_an_action_the_scheduler_does_not_run_is_refused():
    with pytest.raises(KailabError) as e:
        scheduler_config(SchedulerSettings(gpu_placement="spread", queue_depth_per_action={"consolidation": 3}))
    assert "consolidation" in e.value.message and "does not run" in e.value.message


def _shard(generation: int, observed: int | None, status: str = "True", partition: str = "ann") -> dict:
    conditions = (
        []
        if observed is None
        else [{"type": "Available", "status": status, "observedGeneration": observed, "message": "m"}]
    )
    return {
        "metadata": {"name": "ann-shard", "generation": generation},
        "spec": {"partitionLabelValue": partition, **SchedulerSettings().shard_spec()},
        "status": {"conditions": conditions},
    }


def test_a_shard_is_in_effect_only_when_its_current_generation_is_available():
    assert shards.in_effect(_shard(3, 3)) is True
    assert not shards.in_effect(_shard(3, 2)) and "generation 3 not observed" in shards.in_effect(_shard(3, 2)).seen
    assert not shards.in_effect(_shard(3, 3, "False"))
    assert not shards.in_effect(_shard(1, None)) and "no status" in shards.in_effect(_shard(1, None)).seen
    assert not shards.in_effect(None)


class _ShardKube:
    """A cluster holding one shard, whose runner (supervisor or operator) puts every patch in effect at once."""

    def __init__(self, shard: dict | None, deployment=None):
        self.shard = shard
        self.patches: list[dict] = []
        self.dyn = SimpleNamespace(patch=self._patch)
        self.deployment = deployment  # what the operator runs the shard with (kind, existing); None: the supervisor
        self.apps = SimpleNamespace(read_namespaced_deployment=self._deployment)

    def _deployment(self, name, namespace):
        if self.deployment is None:
            raise ApiException(status=404, reason="Not Found")
        assert (name, namespace) == ("kai-scheduler-ann-shard", "kai-scheduler")
        return self.deployment

    def resource(self, api_version, kind):
        return (api_version, kind)

    def get(self, api_version, kind, name, namespace=None):
        return self.shard if self.shard and name == self.shard["metadata"]["name"] else None

    def _patch(self, resource, body, name, content_type):
        assert content_type == "application/merge-patch+json" and name == "ann-shard"
        self.patches.append(body)
        spec = self.shard["spec"]
        for key, value in body["spec"].items():
            if value is None:
                spec.pop(key, None)
            elif isinstance(value, dict):
                spec[key] = {k: v for k, v in {**spec.get(key, {}), **value}.items() if v is not None}
            else:
                spec[key] = value
        generation = self.shard["metadata"]["generation"] + 1
        self.shard = {**_shard(generation, generation), "spec": spec}


def test_stopping_a_learners_scheduler_points_their_shard_at_a_partition_nobody_has():
    kube = _ShardKube(_shard(1, 1))
    control = shards.ShardSchedulerControl(kube, "ann", timeout=1)
    assert control.running()
    control.stop()
    assert kube.patches == [{"spec": {"partitionLabelValue": "ann.stopped"}}]
    assert not control.running()  # in effect, but not in ann's partition
    assert from_names(["ann"]).names and "." not in "".join(from_names(["ann", "bob"]).names)


def test_starting_it_patches_the_settings_into_their_shard_and_waits_until_in_effect():
    kube = _ShardKube(_shard(1, 1, partition="ann.stopped"))
    control = shards.ShardSchedulerControl(kube, "ann", timeout=1)
    control.start(SchedulerSettings(gpu_placement="spread", reclaim_min_runtime="1m"))
    assert kube.patches[-1]["spec"]["partitionLabelValue"] == "ann"
    assert control.running() and control.settings == SchedulerSettings(gpu_placement="spread", reclaim_min_runtime="1m")
    control.start(SchedulerSettings(gpu_placement="spread", reclaim_min_runtime="1m"))
    assert len(kube.patches) == 1  # running with these settings already: nothing to do


def test_while_watching_a_lesson_reads_its_fair_shares_from_the_watch_and_a_learner_who_may_not_list_gets_them(
    monkeypatch,
):
    from kailab.labels import SHARD_FAIR_SHARES_ANNOTATION, SHARD_METRICS_ANNOTATION

    published = {SHARD_METRICS_ANNOTATION: "http://127.0.0.1:1/metrics", SHARD_FAIR_SHARES_ANNOTATION: "shares 1\n"}
    shard = {**_shard(1, 1), "metadata": {**_shard(1, 1)["metadata"], "annotations": published}}
    kube = _ShardKube(shard)
    kube.api, gets, listed, watches = None, [], [], []
    kube.get = lambda *a, **kw: gets.append(a) or shard
    may_list = {"yes": True}

    def path_lister(api, path):
        assert path == "/apis/kai.scheduler/v1/schedulingshards"

        def listing(**kw):
            listed.append(kw["field_selector"])
            if not may_list["yes"]:
                raise ApiException(status=403, reason="Forbidden")
            return SimpleNamespace(read=lambda: b"{}")

        return listing

    class FakeWatched:
        def __init__(self, listing, **kw):
            watches.append(kw)
            self.stopped = False

        def start(self):
            return self

        def snapshot(self):
            return [shard]

        def stop(self):
            self.stopped = True

    monkeypatch.setattr(shards, "path_lister", path_lister)
    monkeypatch.setattr(shards, "Watched", FakeWatched)
    control = shards.ShardSchedulerControl(kube, "ann", timeout=1)
    with control.watching():
        assert control.metrics() == control.metrics() == "shares 1\n"
    assert gets == [] and watches == [{"field_selector": "metadata.name=ann-shard"}]  # the shard alone, no GET
    assert control.metrics() == "shares 1\n" and len(gets) == 1  # not watching: read now
    may_list["yes"] = False  # a learner's credential: get, not list
    with control.watching():
        assert control.metrics() == "shares 1\n"
    assert len(gets) == 2 and len(watches) == 1 and listed == ["metadata.name=ann-shard"] * 2


def test_a_patch_never_put_in_effect_times_out_saying_what_was_seen():
    kube = _ShardKube(_shard(1, 1))
    kube._patch = lambda *a, **k: None  # nothing runs the shard: its status stays at generation 1
    kube.dyn = SimpleNamespace(patch=kube._patch)
    kube.shard["metadata"]["generation"] = 2
    with pytest.raises(KailabError) as e:
        shards.ShardSchedulerControl(kube, "ann", timeout=0.3).stop()
    assert "ann's scheduler to stop" in e.value.message and "generation 2 not observed" in e.value.message


def _deployment(generation: int, observed: int, updated: int, replicas: int, available: int):
    return SimpleNamespace(
        metadata=SimpleNamespace(generation=generation),
        spec=SimpleNamespace(replicas=1),
        status=SimpleNamespace(
            observed_generation=observed, updated_replicas=updated, replicas=replicas, available_replicas=available
        ),
    )


@pytest.mark.parametrize(
    "deployment, done",
    [
        (None, True),  # the local runtime: no Deployment, the supervisor stops the old scheduler first
        (_deployment(3, 2, 1, 1, 1), False),  # the operator's change not seen yet
        (_deployment(3, 3, 1, 2, 1), False),  # the old scheduler pod still runs beside the new one
        (_deployment(3, 3, 1, 1, 0), False),  # the new one is not available yet
        (_deployment(3, 3, 1, 1, 1), True),
    ],
)
def test_a_shard_run_by_kais_operator_is_in_effect_once_its_deployment_has_rolled_out(deployment, done):
    control = shards.ShardSchedulerControl(_ShardKube(_shard(1, 1), deployment), "ann", timeout=0.3)
    assert bool(control.rolled_out()) is done
    if done:
        control.stop()
    else:
        with pytest.raises(KailabError) as e:
            control.stop()
        assert "Deployment kai-scheduler-ann-shard rolled out" in e.value.message


def test_a_learner_without_a_shard_is_told_to_ask_for_one():
    with pytest.raises(KailabError) as e:
        _ = shards.ShardSchedulerControl(_ShardKube(None), "ann").settings
    assert "ann-shard does not exist" in e.value.message and "class up --learner ann" in e.value.hint


# -- the local supervisor: what of a shard's args the scheduler gets ---------------------------------------------


def test_the_supervisor_passes_only_flags_the_scheduler_defines_and_keeps_its_own_ports(monkeypatch, tmp_path):
    options = tmp_path / "cmd/scheduler/app/options/options.go"
    options.parent.mkdir(parents=True)
    options.write_text(
        'fs.DurationVar(&s.SchedulePeriod, "schedule-period", d, "x")\n'
        'fs.StringVar(&s.ListenAddress, "listen-address", a, "x")\n'
        'fs.BoolVar(&s.FullHierarchyFairness, "full-hierarchy-fairness", true, "x")\n'
    )
    monkeypatch.setenv("KAILAB_KAI_MODULE_DIR", str(tmp_path))
    known = supervisor.scheduler_flags_known()
    assert known == {"schedule-period", "listen-address", "full-hierarchy-fairness"}
    args = {"schedule-period": "1s", "listen-address": ":9", "no-such-flag": "1", "full-hierarchy-fairness": False}
    assert supervisor.shard_args({"args": args}, known) == {
        "full-hierarchy-fairness": "False",
        "schedule-period": "1s",
    }
    assert supervisor.shard_args({}, known) == {}


def test_the_supervisor_reports_as_kais_operator_does():
    ok = supervisor.condition("Available", True, 4, "runs")
    assert ok["status"] == "True" and ok["observedGeneration"] == 4 and ok["reason"] == "Available"
    assert shards.in_effect({"metadata": {"generation": 4}, "status": {"conditions": [ok]}}) is True
    bad = supervisor.condition("Available", False, 4, "x" * 5000)
    assert bad["status"] == "False" and bad["reason"] == "NotAvailable" and len(bad["message"]) == 1000
    spec = local_partitions.supervisor_spec(Path("/lab"))
    assert spec.name == "kailab-shard-supervisor" and "--home=/lab" in spec.argv


# -- kind and existing: the class's objects, and the refusals ----------------------------------------------------


class _Cluster:
    """A cluster that serves SchedulingShards or not, with or without KAI's operator and KWOK's controller."""

    def __init__(self, crd=True, operator_ready=1, kwok=True):
        self.crd, self.applied = crd, []
        ready = SimpleNamespace(status=SimpleNamespace(ready_replicas=operator_ready))
        self.apps = SimpleNamespace(
            list_deployment_for_all_namespaces=lambda field_selector: SimpleNamespace(
                items=[ready] if operator_ready is not None else []
            ),
            list_namespaced_deployment=lambda ns, field_selector=None: SimpleNamespace(
                items=[object()] if kwok and field_selector else []  # KWOK's controller; no shard's scheduler yet
            ),
        )
        self.core = SimpleNamespace(list_node=lambda label_selector: SimpleNamespace(items=[]))

    def resource(self, api_version, kind):
        if not self.crd:
            raise ResourceNotFoundError(f"{api_version} {kind}")
        return (api_version, kind)

    def get(self, *a, **k):
        return None

    def apply(self, obj):
        self.applied.append(obj)


def operator_class(runtime: str, home: Path) -> Class:
    """A class on a cluster KAI's operator runs shards on (kind, existing), without the runtime itself."""
    return Class(OperatorPartitions(SimpleNamespace(traits=Traits(runtime), home=home)))


@pytest.mark.parametrize(
    "cluster, says",
    [
        (_Cluster(crd=False), "SchedulingShard CRD (schedulingshards.kai.scheduler)"),
        (_Cluster(operator_ready=None), "KAI's operator"),
        (_Cluster(operator_ready=0), "KAI's operator"),
        (_Cluster(kwok=False), "KWOK's controller"),
    ],
)
def test_a_class_on_kind_or_an_existing_cluster_is_refused_without_what_runs_it(tmp_path, cluster, says):
    klass = operator_class("existing", tmp_path)
    with pytest.raises(KailabError) as e:
        klass.up(cluster, from_names(["ann"]), load_fleet(), None)
    assert says in e.value.message and "Nothing was applied" in e.value.message
    assert "Helm chart" in e.value.hint
    assert cluster.applied == [] and not (tmp_path / "class.json").exists()


def test_a_cluster_with_the_operator_crd_and_kwok_can_hold_a_class(tmp_path):
    assert operator_missing(_Cluster()) == ""
    klass = operator_class("kind", tmp_path)
    assert klass.check(_Cluster(), from_names(["ann", "bob"])) == ["ann", "bob"]


def test_each_runtime_gets_its_class(tmp_path):
    from kailab.runtimes.kind import KindRuntime
    from kailab.runtimes.local import LocalRuntime

    assert isinstance(LocalRuntime(home=tmp_path).capabilities().partitions, LocalPartitions)
    kind = Class(KindRuntime(home=tmp_path).capabilities().partitions)
    assert isinstance(kind.host, OperatorPartitions) and kind.state_file == tmp_path / "class.json"


# -- kailab down on an adopted cluster: the class first ----------------------------------------------------------


@pytest.mark.parametrize(
    "makes_cluster, learners, taken_down", [(False, ["ann"], True), (True, ["ann"], False), (False, [], False)]
)
def test_down_on_an_adopted_cluster_takes_its_class_down_first(
    monkeypatch, tmp_path, makes_cluster, learners, taken_down
):
    from kailab.lab import OwnLab
    from kailab.runtimes.base import Capabilities

    rt = SimpleNamespace(traits=Traits("existing", makes_cluster=makes_cluster), home=tmp_path)
    (tmp_path / "class.json").write_text(json.dumps({"learners": learners}))
    calls = []
    lab = OwnLab(tmp_path)
    lab.__dict__.update(runtime=rt, capabilities=Capabilities(partitions=OperatorPartitions(rt)), kube="kube")
    monkeypatch.setattr(Class, "down", lambda self, kube, names, progress: calls.append((kube, names)))
    lab.remove_class(None)
    assert calls == ([("kube", None)] if taken_down else [])


def test_partitions_made_at_once_start_one_supervisor(monkeypatch, tmp_path):
    """demo all makes its partitions in threads: each asks for the supervisor, and exactly one is started (two would
    each run every shard, and the second's pid file would hide the first from kailab down)."""
    import sys
    import threading

    from kailab.labels import SHARD_SUPERVISOR
    from kailab.runtimes.local import LocalRuntime
    from kailab.runtimes.processes import ProcessSpec

    rt = LocalRuntime(home=tmp_path)
    sleeper = ProcessSpec(SHARD_SUPERVISOR, [sys.executable, "-c", "import time; time.sleep(60)"])
    monkeypatch.setattr(local_partitions, "supervisor_spec", lambda home: sleeper)
    started = []
    start = rt.kai_processes.start

    def counted(spec):
        started.append(spec.name)
        return start(spec)

    monkeypatch.setattr(rt.kai_processes, "start", counted)
    klass = LocalPartitions(rt)
    threads = [threading.Thread(target=klass.ready, args=(None,)) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert started == [SHARD_SUPERVISOR]
        assert rt.kai_processes.identity(SHARD_SUPERVISOR) is not None
    finally:
        rt.kai_processes.stop_all(timeout=5)


def test_the_supervisor_runs_no_scheduler_for_a_stopped_partition_and_says_the_shard_is_in_effect(
    monkeypatch, tmp_path
):
    from kailab.runtimes.local import LocalRuntime
    from kailab.runtimes.local_controls import LocalSchedulerControl

    patches: list[tuple[str, dict]] = []
    status = SimpleNamespace(name="status")
    kube = SimpleNamespace(
        resource=lambda api, kind: SimpleNamespace(name="shards", subresources={"status": status}),
        dyn=SimpleNamespace(patch=lambda resource, body, name, content_type: patches.append((resource.name, body))),
    )
    sup = object.__new__(supervisor.Supervisor)
    sup.rt, sup.kube, sup.known = LocalRuntime(home=tmp_path), kube, None
    stopped_calls = []
    monkeypatch.setattr(LocalSchedulerControl, "stop", lambda self: stopped_calls.append(self.name))
    monkeypatch.setattr(LocalSchedulerControl, "start", lambda self, s=None: pytest.fail("started a scheduler"))
    shard = shards.shard_object("ann", partitions.owner("ann").labels)
    shard["spec"]["partitionLabelValue"] = shards.stopped("ann")
    shard["metadata"]["generation"] = 3
    sup.reconcile(shard)
    assert stopped_calls == ["kai-scheduler-ann-shard"]
    [(_, body)] = [p for p in patches if p[0] == "status"]
    reported = {**shard, "status": body["status"]}
    assert shards.in_effect(reported) is True  # what ShardSchedulerControl.stop waits for


def test_the_supervisor_publishes_a_shards_fair_shares_when_they_change_and_none_while_it_is_stopped(
    monkeypatch, tmp_path
):
    """Every second the supervisor reads the scheduler's metrics on loopback and, when its fair shares changed,
    patches them onto the shard (``kailab.io/fair-shares``), which the learner may read; nothing else of the
    metrics, and no patch when nothing changed."""
    from kailab.labels import SHARD_FAIR_SHARES_ANNOTATION
    from kailab.runtimes.local import LocalRuntime
    from kailab.runtimes.local_controls import LocalSchedulerControl

    patches: list[dict] = []
    kube = SimpleNamespace(
        resource=lambda api, kind: SimpleNamespace(name="shards"),
        dyn=SimpleNamespace(patch=lambda resource, body, name, content_type: patches.append(body)),
    )
    sup = object.__new__(supervisor.Supervisor)
    sup.rt, sup.kube, sup.known, sup.published = LocalRuntime(home=tmp_path), kube, None, {}
    metrics = {"text": 'go_goroutines 9\nkai_queue_fair_share_gpu{queue_name="ann-a"} 4\n'}
    monkeypatch.setattr(LocalSchedulerControl, "running", lambda self: True)
    monkeypatch.setattr(LocalSchedulerControl, "metrics", lambda self: metrics["text"])
    shard = shards.shard_object("ann", partitions.owner("ann").labels)
    sup.publish(shard)
    sup.publish(shard)  # the same fair shares: no second patch
    assert patches == [
        {
            "metadata": {
                "annotations": {SHARD_FAIR_SHARES_ANNOTATION: 'kai_queue_fair_share_gpu{queue_name="ann-a"} 4\n'}
            }
        }
    ]
    metrics["text"] = 'kai_queue_fair_share_gpu{queue_name="ann-a"} 10\n'
    sup.publish(shard)
    assert patches[-1]["metadata"]["annotations"][SHARD_FAIR_SHARES_ANNOTATION].endswith(" 10\n")
    shard["metadata"]["annotations"] = dict(patches[-1]["metadata"]["annotations"])  # as the watch brings it back
    shard["spec"]["partitionLabelValue"] = shards.stopped("ann")  # stopped: no fair shares shown, not stale ones
    sup.publish(shard)
    assert patches[-1] == {"metadata": {"annotations": {SHARD_FAIR_SHARES_ANNOTATION: None}}} and len(patches) == 3


def test_a_shards_worker_reads_fair_shares_on_its_own_clock_not_on_each_change_and_not_at_once_after_an_error(
    monkeypatch,
):
    """Its own patch of the fair shares comes back as a change of the shard: reconciled, not read again; a scheduler
    it started is read at once; an error waits for the next second (it never spins)."""
    import threading
    import time

    monkeypatch.setattr(supervisor, "PUBLISH", 0.5)
    calls: list[str] = []
    sup = object.__new__(supervisor.Supervisor)
    sup.stopping, sup.lock = threading.Event(), threading.Lock()
    sup.latest, sup.wake = {"s": {"metadata": {"name": "s"}}}, {"s": threading.Event()}
    answers = iter([True, False, False, False])  # started a scheduler, then only its own patches come back

    def reconcile(shard):
        calls.append("reconcile")
        return next(answers, False)

    sup.reconcile, sup.publish = reconcile, lambda shard: calls.append("publish")
    worker = threading.Thread(target=sup.work, args=("s",), daemon=True)
    worker.start()
    for _ in range(3):
        time.sleep(0.05)
        sup.wake["s"].set()  # as the supervisor's own annotation patch comes back through its watch
    time.sleep(0.1)
    assert calls.count("publish") == 1 and calls.count("reconcile") == 4, calls
    time.sleep(0.5)  # 0.75 s in: read at 0 and at 0.5
    assert calls.count("publish") == 2, calls  # its clock: PUBLISH after the last reading

    def failing(shard):
        calls.append("failed")
        raise OSError("the API server is away")

    sup.publish = failing
    time.sleep(0.6)  # 1.35 s in: failed at 1.0, next at 1.5
    sup.stopping.set()
    sup.wake["s"].set()
    worker.join(2)
    assert 1 <= calls.count("failed") <= 2, calls  # once per PUBLISH, not in a loop
