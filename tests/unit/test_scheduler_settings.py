"""Scheduler settings → what KAI reads: the local config file and flags, the kind runtime's plan of commands.

The expected plugin lists are what KAI v0.17.0's operator renders (``SchedulerForShard.DesiredState`` for a
SchedulingShard with the given ``placementStrategy`` and ``args``, run once on the operator's code); the
scheduler runs its plugins in this order.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import yaml

from kailab.errors import KailabError
from kailab.labels import KAI_SCHEDULER_DEPLOYMENT, KAI_SCHEDULER_PROCESS
from kailab.progress import Progress
from kailab.runtimes import kind_plan, local_kai
from kailab.runtimes.existing import ExistingRuntime
from kailab.runtimes.kind import KindRuntime
from kailab.runtimes.kind_plan import (
    KAI_CONFIG,
    SCHEDULER_SHARD,
    Result,
    scheduler_start_plan,
    scheduler_stop_plan,
    shard_patch,
)
from kailab.runtimes.local import LocalRuntime
from kailab.scheduler_settings import SchedulerSettings
from kailab.shards import settings_of as settings_from_shard

HEAD = [
    "predicates",
    "proportion",
    "priority",
    "nodeavailability",
    "resourcetype",
    "podaffinity",
    "elastic",
    "kubeflow",
    "ray",
    "subgrouporder",
    "taskorder",
    "nominatednode",
    "dynamicresources",
    "minruntime",
    "topology",
    "snapshot",
    "sg-nodelocalgreedy",
    "sg-multinodegang",
]
ALL_ACTIONS = "allocate, consolidation, reclaim, preempt, stalegangeviction"
NO_CONSOLIDATION = "allocate, reclaim, preempt, stalegangeviction"

# (settings, actions, plugins after HEAD, nodeplacement arguments), as KAI's operator renders them.
OPERATOR = [
    (
        SchedulerSettings(),
        ALL_ACTIONS,
        ["gpupack", "nodeplacement", "gpusharingorder"],
        {"gpu": "binpack", "cpu": "binpack"},
    ),
    (
        SchedulerSettings(gpu_placement="spread"),
        NO_CONSOLIDATION,
        ["gpuspread", "nodeplacement"],
        {"gpu": "spread", "cpu": "binpack"},
    ),
    (
        SchedulerSettings(cpu_placement="spread"),
        NO_CONSOLIDATION,
        ["gpupack", "nodeplacement", "gpusharingorder"],
        {"gpu": "binpack", "cpu": "spread"},
    ),
    (
        SchedulerSettings("spread", "spread"),
        NO_CONSOLIDATION,
        ["gpuspread", "nodeplacement"],
        {"gpu": "spread", "cpu": "spread"},
    ),
    (
        SchedulerSettings(full_hierarchy_fairness=False),
        ALL_ACTIONS,
        ["gpupack", "nodeplacement", "gpusharingorder"],
        {"gpu": "binpack", "cpu": "binpack"},
    ),
]


def test_default_settings_are_kai_defaults_and_give_the_lab_config_unchanged():
    s = SchedulerSettings()
    assert (s.gpu_placement, s.cpu_placement, s.full_hierarchy_fairness) == ("binpack", "binpack", True)
    assert local_kai.scheduler_config(s) == local_kai.SCHEDULER_CONFIG.read_text()
    # beyond KAI's defaults only the lab's cycle period, on both runtimes
    assert local_kai.scheduler_flags(s) == ["--schedule-period=250ms"] and s.args() == {"schedule-period": "250ms"}
    shard_args = {k: v for k, v in kind_plan.shard_patch(s)["spec"]["args"].items() if v is not None}
    assert kind_plan.kai_values()["scheduler"]["args"] == s.args() == shard_args


@pytest.mark.parametrize(
    "settings,actions,tail,arguments", OPERATOR, ids=lambda v: getattr(v, "describe", lambda: None)()
)
def test_config_file_is_what_kais_operator_renders(settings, actions, tail, arguments):
    conf = yaml.safe_load(local_kai.scheduler_config(settings))
    assert conf["actions"] == actions
    plugins = conf["tiers"][0]["plugins"]
    assert [p["name"] for p in plugins] == HEAD + tail
    assert next(p for p in plugins if p["name"] == "nodeplacement")["arguments"] == arguments
    assert all("arguments" not in p for p in plugins if p["name"] != "nodeplacement")


def test_full_hierarchy_fairness_is_a_flag_not_the_config_file():
    off = SchedulerSettings(full_hierarchy_fairness=False)
    assert local_kai.scheduler_flags(off) == ["--schedule-period=250ms", "--full-hierarchy-fairness=false"]
    assert local_kai.scheduler_config(off) == local_kai.scheduler_config(SchedulerSettings())


def test_scheduler_spec_writes_its_config_and_takes_the_flags(tmp_path):
    spec = local_kai.scheduler_spec(
        {"kai-scheduler": tmp_path / "bin"},
        tmp_path / "kc",
        tmp_path / "kai",
        SchedulerSettings(gpu_placement="spread", full_hierarchy_fairness=False),
    )
    assert spec.name == "kai-scheduler" and spec.env == {"KUBECONFIG": str(tmp_path / "kc")}
    assert f"--scheduler-conf={tmp_path / 'kai' / 'scheduler-config.yaml'}" in spec.argv
    assert spec.argv[-1] == "--full-hierarchy-fairness=false"
    assert "gpuspread" in (tmp_path / "kai" / "scheduler-config.yaml").read_text()
    listen = next(a for a in spec.argv if a.startswith("--listen-address="))
    assert spec.health_url == f"http://{listen.split('=', 1)[1]}/metrics"


def test_components_start_the_scheduler_with_the_default_config(tmp_path):
    bins = type("AnyBinary", (dict,), {"__missing__": lambda self, name: tmp_path / name})()
    specs = local_kai.components(bins, tmp_path / "kc", tmp_path / "kai")
    sched = next(s for s in specs if s.name == KAI_SCHEDULER_PROCESS)
    assert not any(a.startswith("--full-hierarchy-fairness") for a in sched.argv)
    assert (tmp_path / "kai" / "scheduler-config.yaml").read_text() == local_kai.SCHEDULER_CONFIG.read_text()


def test_settings_are_checked_and_made_from_a_partial_change():
    with pytest.raises(KailabError, match="binpack or spread"):
        SchedulerSettings(gpu_placement="pack")
    assert SchedulerSettings.of(None) == SchedulerSettings()


def test_a_scenario_step_gives_the_settings_with_the_rest_left_at_the_defaults(tmp_path):
    from kailab.scenarios.loader import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nsteps: [{schedulerConfig: {gpuPlacement: spread}}, {startScheduler: true},\n"
        "  {schedulerConfig: {cpuPlacement: spread, fullHierarchyFairness: false}}]\n"
    )
    one, two, three = load_scenario(path).steps
    assert (one.settings, one.restart) == (SchedulerSettings(gpu_placement="spread"), True)
    assert (two.settings, two.restart) == (SchedulerSettings(), False)
    assert three.settings == SchedulerSettings(cpu_placement="spread", full_hierarchy_fairness=False)
    assert three.settings.changes() == "cpu spread, full-hierarchy fairness off"
    assert two.settings.changes() == "the lab's defaults"


def test_actions_run_are_read_from_the_scheduler_metrics():
    text = (
        "# HELP kai_action_scheduling_latency_milliseconds x\n"
        'kai_action_scheduling_latency_milliseconds{action="allocate"} 0\n'
        'kai_action_scheduling_latency_milliseconds{action="reclaim"} 1\n'
        "kai_e2e_scheduling_latency_milliseconds 3\n"
    )
    assert local_kai.actions_run(text) == {"allocate", "reclaim"}
    assert local_kai.actions_run("kai_e2e_scheduling_latency_milliseconds 0\n") == set()


def test_every_runtime_has_a_scheduler_control_or_says_it_has_none(tmp_path):
    assert LocalRuntime(home=tmp_path).capabilities().scheduler.settings == SchedulerSettings()
    assert KindRuntime(home=tmp_path).capabilities().scheduler is not None
    assert ExistingRuntime(home=tmp_path).capabilities().scheduler is None  # KAI's scheduler there is not kailab's


def test_local_start_refuses_a_lab_without_kai(tmp_path):
    from kailab.labstate import LabState

    LabState("local", str(tmp_path / "kubeconfig.yaml"), kai_components=[]).write(tmp_path)
    with pytest.raises(KailabError, match="without KAI"):
        LocalRuntime(home=tmp_path).scheduler_control().start()


# -- kind: a plan of commands through the objects KAI's operator reads ------------------------------------------


def _patch_of(cmd: list[str]) -> dict:
    return json.loads(cmd[cmd.index("-p") + 1])


def test_kind_stop_disables_the_scheduler_in_kai_config_and_waits_for_its_pods(tmp_path):
    [step] = scheduler_stop_plan(tmp_path)
    [cmd] = step.commands
    assert cmd[:3] == ["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig.yaml")]
    assert cmd[3:6] == ["patch", *KAI_CONFIG] and cmd[6:8] == ["--type", "merge"]
    assert _patch_of(cmd) == {"spec": {"scheduler": {"service": {"enabled": False}}}}
    assert step.wait_gone == (KAI_SCHEDULER_DEPLOYMENT,) and not step.wait_for
    assert not any(c in ("scale", "edit") or "configmap" in c for c in cmd), "the operator reverts hand edits"


def test_kind_start_patches_the_shard_then_enables_and_waits_until_ready(tmp_path):
    shard, enable, rollout = scheduler_start_plan(
        tmp_path, SchedulerSettings(gpu_placement="spread", full_hierarchy_fairness=False)
    )
    [cmd] = shard.commands
    assert cmd[3:6] == ["patch", *SCHEDULER_SHARD]
    assert _patch_of(cmd) == {
        "spec": {
            "placementStrategy": {"gpu": "spread", "cpu": "binpack"},
            "args": {"full-hierarchy-fairness": "false", "schedule-period": "250ms"},
            "kValue": None,  # settings left at KAI's default are removed from the shard
            "minRuntime": None,
            "queueDepthPerAction": None,
            "usageDBConfig": None,
        }
    }
    [cmd] = enable.commands
    assert cmd[3:6] == ["patch", *KAI_CONFIG] and _patch_of(cmd) == {
        "spec": {"scheduler": {"service": {"enabled": True}}}
    }
    assert enable.wait_for == (KAI_SCHEDULER_DEPLOYMENT,)
    assert rollout.commands == [
        [
            "kubectl",
            "--kubeconfig",
            str(tmp_path / "kubeconfig.yaml"),
            "-n",
            "kai-scheduler",
            "rollout",
            "status",
            f"deployment/{KAI_SCHEDULER_DEPLOYMENT}",
            "--timeout=180s",
        ]
    ]


def test_kind_defaults_are_the_charts_shard_and_remove_the_flag(tmp_path):
    """The chart's default shard: placementStrategy binpack for both, no args; null removes an arg or a field in a
    merge patch (kValue, minRuntime and queueDepthPerAction left at KAI's defaults)."""
    assert shard_patch(SchedulerSettings()) == {
        "spec": {
            "placementStrategy": {"gpu": "binpack", "cpu": "binpack"},
            "args": {"full-hierarchy-fairness": None, "schedule-period": "250ms"},
            "kValue": None,
            "minRuntime": None,
            "queueDepthPerAction": None,
            "usageDBConfig": None,
        }
    }
    assert (
        settings_from_shard({"spec": {"placementStrategy": {"gpu": "binpack", "cpu": "binpack"}}})
        == SchedulerSettings()
    )
    assert settings_from_shard(
        {"spec": {"placementStrategy": {"gpu": "spread"}, "args": {"full-hierarchy-fairness": "false"}}}
    ) == SchedulerSettings(gpu_placement="spread", full_hierarchy_fairness=False)


class FakeOperator:
    """KAI's operator in miniature: kai-config's scheduler switch makes or removes the scheduler's Deployment and pod;
    the shard holds the settings. Answers both the runner (kubectl) and the client."""

    def __init__(self):
        self.enabled = True
        self.shard = {"spec": {"placementStrategy": {"gpu": "binpack", "cpu": "binpack"}}}
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> Result:
        self.calls.append(argv)
        rest = argv[3:]
        if rest[:3] == ["patch", *KAI_CONFIG]:
            self.enabled = _patch_of(argv)["spec"]["scheduler"]["service"]["enabled"]
        elif rest[:3] == ["patch", *SCHEDULER_SHARD]:
            spec = _patch_of(argv)["spec"]
            self.shard["spec"]["placementStrategy"] = spec["placementStrategy"]
            self.shard["spec"]["args"] = {k: v for k, v in spec["args"].items() if v is not None}
        elif rest[:3] == ["get", *SCHEDULER_SHARD]:
            return Result(0, json.dumps(self.shard))
        elif rest[:2] == ["get", "--raw"]:
            return Result(0, "kai_e2e_scheduling_latency_milliseconds 1\n") if self.enabled else Result(1, "", "503")
        return Result(0, "")

    def connect(self, kubeconfig):
        def deployments(ns, **kw):
            names = ["binder", *([KAI_SCHEDULER_DEPLOYMENT] if self.enabled else [])]
            return SimpleNamespace(
                items=[
                    SimpleNamespace(
                        metadata=SimpleNamespace(name=n),
                        spec=SimpleNamespace(replicas=1),
                        status=SimpleNamespace(ready_replicas=1),
                    )
                    for n in names
                ]
            )

        def pods(ns, label_selector="", **kw):
            assert label_selector == f"app in ({KAI_SCHEDULER_DEPLOYMENT})"
            return SimpleNamespace(
                items=[SimpleNamespace(metadata=SimpleNamespace(name="sched-0"))] if self.enabled else []
            )

        return SimpleNamespace(
            apps=SimpleNamespace(list_namespaced_deployment=deployments), core=SimpleNamespace(list_namespaced_pod=pods)
        )


def test_kind_control_stops_starts_and_reconfigures_through_the_operator(tmp_path):
    op = FakeOperator()
    control = KindRuntime(home=tmp_path, runner=op, connect=op.connect, timeout=5).scheduler_control()
    assert control.running() and control.settings == SchedulerSettings()
    assert control.metrics()

    control.stop()
    assert not control.running() and op.enabled is False and control.metrics() is None
    control.stop()  # a second stop changes nothing
    assert not control.running()

    control.start(SchedulerSettings(gpu_placement="spread"))
    assert control.running() and control.settings == SchedulerSettings(gpu_placement="spread")
    ran = [c[3:6] for c in op.calls if c[3] == "patch"]
    assert ran[-2:] == [["patch", *SCHEDULER_SHARD], ["patch", *KAI_CONFIG]], "configured before it starts"

    before = len(op.calls)
    control.start(SchedulerSettings(gpu_placement="spread"))  # already so: nothing to do
    assert not any(c[3] == "patch" for c in op.calls[before:])

    control.start()  # other settings while it runs: stopped, configured, started
    patches = [(c[4], _patch_of(c)) for c in op.calls[before:] if c[3] == "patch"]
    assert [p[0] for p in patches] == [KAI_CONFIG[0], SCHEDULER_SHARD[0], KAI_CONFIG[0]]
    assert control.settings == SchedulerSettings() and control.running()


def test_kind_stop_that_never_ends_says_what_is_left(tmp_path):
    op = FakeOperator()
    rt = KindRuntime(home=tmp_path, runner=lambda argv: Result(0, ""), connect=op.connect, timeout=0.1)
    with pytest.raises(KailabError, match="sched-0"):
        for step in scheduler_stop_plan(tmp_path):
            rt.execute(step, None, Progress(quiet=True))


def test_kind_runtime_constants_match_the_operator_names():
    assert KAI_SCHEDULER_DEPLOYMENT in kind_plan.KAI_DEPLOYMENTS
    assert kind_plan.SCHEDULER_METRICS.endswith(f"/services/{KAI_SCHEDULER_DEPLOYMENT}:http-metrics/proxy/metrics")
