"""The kind runtime, tested by what it would run: commands, Helm values, pins, and its errors."""

from __future__ import annotations

import pytest
import yaml

from kailab import versions
from kailab.errors import KailabError, ToolMissing
from kailab.fleet import load_fleet
from kailab.progress import Progress
from kailab.runtimes import kai as local_kai
from kailab.runtimes.base import UpOptions
from kailab.runtimes.kind import KAI_DEPLOYMENTS, KindRuntime, Result, fake_gpu_operator_values, plan


class RecordingRunner:
    """Stands in for the external commands: records each one, answers from a script."""

    def __init__(self, answers: dict[tuple[str, ...], Result] | None = None, missing: tuple[str, ...] = ()):
        self.calls: list[list[str]] = []
        self.answers = answers or {}
        self.missing = missing

    def __call__(self, argv: list[str]) -> Result:
        self.calls.append(argv)
        if argv[0] == "which":
            return Result(1 if argv[1] in self.missing else 0, f"/usr/bin/{argv[1]}")
        for prefix, result in self.answers.items():
            if tuple(argv[: len(prefix)]) == prefix:
                return result
        return Result(0, "")


def commands(steps):
    return [" ".join(c) for s in steps for c in s.commands]


def test_fresh_plan_runs_kind_kwok_fake_gpu_operator_kai_in_order(tmp_path):
    steps = plan(tmp_path, load_fleet(), cluster_exists=False)
    cmds = commands(steps)
    assert cmds[0].startswith(f"kind create cluster --name kailab --image {versions.KIND_NODE_IMAGE} --config {tmp_path}/kind.yaml")
    kinds = [c.split()[0] for c in cmds]
    order = [kinds.index("kind"), next(i for i, c in enumerate(cmds) if "kwok.yaml" in c),
             next(i for i, c in enumerate(cmds) if "fake-gpu-operator" in c),
             next(i for i, c in enumerate(cmds) if "kai-scheduler/kai-scheduler" in c)]
    assert order == sorted(order)
    assert any(f"releases/download/{versions.KWOK_VERSION}/kwok.yaml" in c for c in cmds)
    assert not any("stage-fast" in c for c in cmds), "stage-fast has the instant pod-complete stage"
    assert any(c.endswith("manifests/kwok-stages.yaml") for c in cmds)


def test_existing_cluster_is_not_created_again(tmp_path):
    cmds = commands(plan(tmp_path, load_fleet(), cluster_exists=True))
    assert not any(c.startswith("kind create") for c in cmds)


def test_kai_chart_is_the_same_version_the_local_runtime_builds(tmp_path):
    cmds = commands(plan(tmp_path, load_fleet(), cluster_exists=False))
    helm = next(c for c in cmds if c.startswith("helm upgrade -i kai-scheduler"))
    assert f"oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler --version {versions.KAI_VERSION}" in helm
    assert versions.build("kai").version == versions.KAI_VERSION
    assert "--wait" in helm and "-n kai-scheduler --create-namespace" in helm


def test_rendered_values_give_the_lesson_fleet(tmp_path):
    steps = plan(tmp_path, load_fleet(), cluster_exists=False)
    files = {k: v for s in steps for k, v in s.files.items()}
    values = yaml.safe_load(files["fake-gpu-operator-values.yaml"])
    pools = values["topology"]["nodePools"]
    assert {k: (v["gpuCount"], v["gpuProduct"]) for k, v in pools.items()} == {
        "a100": (8, "NVIDIA-A100-SXM4-80GB"), "h100": (8, "NVIDIA-H100-80GB-HBM3"), "l40s": (4, "NVIDIA-L40S")}
    assert yaml.safe_load(files["kai-values.yaml"]) == {"global": {"gpuSharing": True}}
    kind_cfg = yaml.safe_load(files["kind.yaml"])
    assert [n["role"] for n in kind_cfg["nodes"]] == ["control-plane", "worker"]
    nodes = list(yaml.safe_load_all(files["fleet.yaml"]))
    assert sum(int(n["status"]["capacity"]["nvidia.com/gpu"]) for n in nodes) == 32
    rbac = list(yaml.safe_load_all(files["reservation-rbac.yaml"]))
    assert {o["kind"] for o in rbac} == {"Namespace", "Role", "RoleBinding"}
    assert all(o["metadata"].get("namespace", "kai-resource-reservation") == "kai-resource-reservation" for o in rbac)


def test_same_stages_and_queues_as_the_local_runtime(tmp_path):
    """The kind plan applies the very stage file the local runtime gives kwokctl."""
    from kailab.runtimes.local import STAGES

    cmds = commands(plan(tmp_path, load_fleet(), cluster_exists=False))
    assert any(c.endswith(str(STAGES)) for c in cmds)
    stages = [d["metadata"]["name"] for d in yaml.safe_load_all(STAGES.read_text())]
    assert "pod-complete" not in stages and "pod-complete-after-delay" in stages
    assert local_kai.SCHEDULER_NAME == "kai-scheduler" and local_kai.QUEUE_LABEL == "kai.scheduler/queue"


KAI_READY = '{"items": [%s]}' % ", ".join(
    '{"metadata": {"name": "%s"}, "spec": {"replicas": 1}, "status": {"readyReplicas": 1}}' % d for d in KAI_DEPLOYMENTS)


def test_up_runs_the_plan_and_a_second_up_changes_nothing(tmp_path):
    kc = str(tmp_path / "kubeconfig.yaml")
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, ""),
                              ("kubectl", "--kubeconfig", kc, "-n", "kai-scheduler", "get"): Result(0, KAI_READY)})
    rt = KindRuntime(home=tmp_path, runner=runner)
    rt.up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    ran = [" ".join(c) for c in runner.calls if c[0] != "which"]
    assert any(c.startswith("kind create cluster") for c in ran)
    assert (tmp_path / "lab.json").exists()

    deployments = KAI_READY
    again = RecordingRunner({("kind", "get", "clusters"): Result(0, "kailab\n"),
                             ("kubectl", "--kubeconfig", str(tmp_path / "kubeconfig.yaml"), "get", "nodes"): Result(0, "node/x"),
                             ("kubectl", "--kubeconfig", str(tmp_path / "kubeconfig.yaml"), "-n"): Result(0, deployments)})
    KindRuntime(home=tmp_path, runner=again).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert not any(c[0] in ("helm",) or c[:2] == ["kind", "create"] for c in again.calls)


def test_missing_tools_are_named_with_how_to_install(tmp_path):
    rt = KindRuntime(home=tmp_path, runner=RecordingRunner(missing=("kind", "helm")))
    with pytest.raises(ToolMissing) as err:
        rt.up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert "kind, helm" in err.value.message
    assert "Install kind" in err.value.hint and "Helm" in err.value.hint and "--runtime local" in err.value.hint


def test_docker_engine_not_answering(tmp_path):
    runner = RecordingRunner({("docker", "info"): Result(1, "", "Cannot connect to the Docker daemon")})
    with pytest.raises(ToolMissing, match="Docker engine does not answer"):
        KindRuntime(home=tmp_path, runner=runner).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))


def test_cluster_name_taken_by_something_else(tmp_path):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, "kailab\n"),
                              ("kubectl", "--kubeconfig"): Result(0, "")})
    with pytest.raises(KailabError, match="not made by kailab"):
        KindRuntime(home=tmp_path, runner=runner).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))


def test_kai_components_never_ready_is_a_clear_failure(tmp_path):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, "")})
    with pytest.raises(KailabError, match="not Ready after 0s: kai-operator, admission"):
        KindRuntime(home=tmp_path, runner=runner, timeout=0).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))


def test_failed_helm_install_names_the_step_and_the_command(tmp_path):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, ""),
                              ("helm", "upgrade", "-i", "kai-scheduler"): Result(1, "", "Error: failed to pull chart")})
    with pytest.raises(KailabError) as err:
        KindRuntime(home=tmp_path, runner=runner).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert err.value.message == f"Step failed: Installing KAI Scheduler {versions.KAI_VERSION} (Helm chart)."
    assert err.value.details.startswith("$ helm upgrade -i kai-scheduler") and "failed to pull chart" in err.value.details
    assert not (tmp_path / "lab.json").exists()


def test_fleet_values_follow_a_resized_fleet():
    values = fake_gpu_operator_values(load_fleet().with_counts({"a100": 4}))
    assert values["topology"]["nodePools"]["a100"]["gpuCount"] == 8
