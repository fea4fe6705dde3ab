"""The kind runtime, tested by what it would run: commands, Helm values, pins, and its errors."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import yaml

from kailab import labdir, versions
from kailab.errors import KailabError, ToolMissing
from kailab.fleet import load_fleet
from kailab.labels import KAI_SCHEDULER_NAME
from kailab.progress import Progress
from kailab.runtimes import kind, local_kai
from kailab.runtimes.base import UpOptions
from kailab.runtimes.kind import KindRuntime
from kailab.runtimes.kind_plan import KAI_DEPLOYMENTS, Result, fake_gpu_operator_values, plan


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


class FakeKube:
    """Stands in for the kubernetes client: our labelled nodes, and KAI's Deployments with their readiness."""

    def __init__(self, ready: tuple[str, ...] = KAI_DEPLOYMENTS, labelled_nodes: int = 2, answers: bool = True):
        def deployment(name):
            return SimpleNamespace(
                metadata=SimpleNamespace(name=name),
                spec=SimpleNamespace(replicas=1),
                status=SimpleNamespace(ready_replicas=1),
            )

        def answer(value):
            def call(*args, **kwargs):
                if not answers:
                    raise ConnectionError("connection refused")
                return SimpleNamespace(items=value)

            return call

        self.core = SimpleNamespace(list_node=answer([object()] * labelled_nodes))
        self.apps = SimpleNamespace(list_namespaced_deployment=answer([deployment(d) for d in ready]))


@pytest.fixture
def fleets_made(monkeypatch):
    """Records create_fleet calls (create_fleet itself runs against a real API server in tests/fleet)."""
    made = []
    monkeypatch.setattr(kind, "create_fleet", lambda kube, fleet, **kw: made.append(fleet))
    return made


def runtime(tmp_path, runner, **kube) -> KindRuntime:
    fake = FakeKube(**kube)
    return KindRuntime(home=tmp_path, runner=runner, connect=lambda kubeconfig: fake, registry_unreachable=lambda: None)


def commands(steps):
    return [" ".join(c) for s in steps for c in s.commands]


def test_fresh_plan_runs_kind_kwok_fake_gpu_operator_kai_in_order(tmp_path):
    steps = plan(tmp_path, load_fleet(), cluster_exists=False)
    cmds = commands(steps)
    assert cmds[0].startswith(
        f"kind create cluster --name kailab --image {versions.KIND_NODE_IMAGE} --config {tmp_path}/kind.yaml"
    )
    kinds = [c.split()[0] for c in cmds]
    order = [
        kinds.index("kind"),
        next(i for i, c in enumerate(cmds) if "kwok.yaml" in c),
        next(i for i, c in enumerate(cmds) if "fake-gpu-operator" in c),
        next(i for i, c in enumerate(cmds) if "kai-scheduler/kai-scheduler" in c),
    ]
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
        "a100": (8, "NVIDIA-A100-SXM4-80GB"),
        "h100": (8, "NVIDIA-H100-80GB-HBM3"),
        "l40s": (4, "NVIDIA-L40S"),
    }
    assert yaml.safe_load(files["kai-values.yaml"]) == {
        "global": {"gpuSharing": True},
        "scheduler": {
            "args": {"schedule-period": "250ms"},
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "700m", "memory": "512Mi"}},
        },
    }
    # fake-gpu-operator's default reservation namespace is runai-reservation; KAI's is kai-resource-reservation.
    assert values["environment"]["resourceReservationNamespace"] == "kai-resource-reservation"
    kind_cfg = yaml.safe_load(files["kind.yaml"])
    assert [n["role"] for n in kind_cfg["nodes"]] == ["control-plane", "worker"]
    rbac = list(yaml.safe_load_all(files["reservation-rbac.yaml"]))
    binding = next(o for o in rbac if o["kind"] == "RoleBinding")
    role = next(o for o in rbac if o["kind"] == "ClusterRole" and o["metadata"]["name"] == binding["roleRef"]["name"])
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}]
    assert binding["metadata"]["namespace"] == "kai-resource-reservation"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "status-updater", "namespace": "gpu-operator"}]
    cmds = commands(steps)
    kai_install = next(i for i, c in enumerate(cmds) if c.startswith("helm upgrade -i kai-scheduler"))
    assert cmds[kai_install + 1].endswith("reservation-rbac.yaml"), "the namespace is KAI's chart's; bind after it"


def test_same_stages_and_queues_as_the_local_runtime(tmp_path):
    """The kind plan applies the very stage file the local runtime gives kwokctl."""
    from kailab.runtimes.local import STAGES

    cmds = commands(plan(tmp_path, load_fleet(), cluster_exists=False))
    assert any(c.endswith(str(STAGES)) for c in cmds)
    stages = [d["metadata"]["name"] for d in yaml.safe_load_all(STAGES.read_text())]
    assert "pod-complete" not in stages and "pod-complete-after-delay" in stages
    assert KAI_SCHEDULER_NAME == "kai-scheduler" and local_kai.QUEUE_LABEL == "kai.scheduler/queue"


def test_kwok_stage_crd_is_established_before_the_stages_are_applied(tmp_path):
    cmds = commands(plan(tmp_path, load_fleet(), cluster_exists=True))
    wait = next(i for i, c in enumerate(cmds) if "crd/stages.kwok.x-k8s.io" in c)
    stages = next(i for i, c in enumerate(cmds) if c.endswith("kwok-stages.yaml"))
    assert next(i for i, c in enumerate(cmds) if c.endswith("/kwok.yaml")) < wait < stages


def test_fleet_is_created_last_through_the_shared_client_code(tmp_path):
    """kubectl apply would drop the nodes' status (capacity); the fleet goes through kailab.fleet.create_fleet."""
    from kailab.runtimes import local

    steps = plan(tmp_path, load_fleet(), cluster_exists=False)
    assert [s.create_fleet for s in steps].index(True) == len(steps) - 1
    assert "5 KWOK nodes, 32 GPUs" in steps[-1].title and steps[-1].commands == []
    assert kind.create_fleet is local.create_fleet


def test_up_runs_the_plan_and_a_second_up_changes_nothing(tmp_path, fleets_made):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, "")})
    runtime(tmp_path, runner).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    ran = [" ".join(c) for c in runner.calls if c[0] != "which"]
    assert any(c.startswith("kind create cluster") for c in ran)
    assert any(c.startswith("helm upgrade -i kai-scheduler") for c in ran)
    assert [f.total_gpus for f in fleets_made] == [32]
    assert json.loads((tmp_path / "lab.json").read_text())["complete"] is True

    again = RecordingRunner({("kind", "get", "clusters"): Result(0, "kailab\n")})
    runtime(tmp_path, again).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert not any(c[0] == "helm" or c[:2] == ["kind", "create"] for c in again.calls)
    assert len(fleets_made) == 1


def test_an_interrupted_up_is_completed_by_the_next_without_recreating_the_cluster(tmp_path, fleets_made):
    failing = RecordingRunner(
        {
            ("kind", "get", "clusters"): Result(0, ""),
            ("helm", "upgrade", "-i", "gpu-operator"): Result(1, "", "context deadline exceeded"),
        }
    )
    with pytest.raises(KailabError, match="Installing fake-gpu-operator"):
        runtime(tmp_path, failing).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    state = json.loads((tmp_path / "lab.json").read_text())
    assert state["runtime"] == "kind" and state["complete"] is False, "down must find a half-made cluster"

    # The cluster exists now, but KAI was never installed: none of its Deployments are Ready.
    resumed = RecordingRunner({("kind", "get", "clusters"): Result(0, "kailab\n")})
    runtime(tmp_path, resumed).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    ran = [" ".join(c) for c in resumed.calls]
    assert not any(c.startswith("kind create") for c in ran)
    assert any(c.startswith("helm upgrade -i gpu-operator") for c in ran)
    assert json.loads((tmp_path / "lab.json").read_text())["complete"] is True


def test_down_deletes_only_the_kailab_cluster(tmp_path):
    runner = RecordingRunner()
    labdir.claim(tmp_path)
    (tmp_path / "lab.json").write_text("{}")
    runtime(tmp_path, runner).down(Progress(quiet=True))
    assert runner.calls == [["kind", "delete", "cluster", "--name", "kailab"]]
    assert not tmp_path.exists()


def test_down_leaves_a_folder_kailab_did_not_make_and_deletes_no_cluster(tmp_path):
    runner = RecordingRunner()
    (tmp_path / "lab.json").write_text("{}")
    (tmp_path / "thesis.tex").write_text("chapter 1")
    with pytest.raises(KailabError, match="not a lab folder made by kailab"):
        runtime(tmp_path, runner).down(Progress(quiet=True))
    assert runner.calls == []
    assert (tmp_path / "thesis.tex").read_text() == "chapter 1" and (tmp_path / "lab.json").exists()


def test_down_removes_only_the_files_the_plan_wrote(tmp_path, fleets_made):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, "")})
    runtime(tmp_path, runner).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    written = {p.name for p in tmp_path.iterdir()} - {labdir.MARKER}
    assert written <= set(kind.OWN_ENTRIES), (
        f"the plan writes files down would not remove: {written - set(kind.OWN_ENTRIES)}"
    )
    (tmp_path / labdir.VERDICTS).write_text('{"scenario": "quota"}\n')
    runtime(tmp_path, RecordingRunner()).down(Progress(quiet=True))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([labdir.MARKER, labdir.VERDICTS]), (
        "uncaptured verdicts are kept"
    )


def test_missing_tools_are_named_with_how_to_install(tmp_path):
    rt = runtime(tmp_path, RecordingRunner(missing=("kind", "helm")))
    with pytest.raises(ToolMissing) as err:
        rt.up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert "kind, helm" in err.value.message
    assert "Install kind" in err.value.hint and "Helm" in err.value.hint and "--runtime local" in err.value.hint


def test_docker_engine_not_answering(tmp_path):
    runner = RecordingRunner({("docker", "info"): Result(1, "", "Cannot connect to the Docker daemon")})
    with pytest.raises(ToolMissing, match="Docker engine does not answer"):
        runtime(tmp_path, runner).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))


def test_cluster_name_taken_by_something_else(tmp_path):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, "kailab\n")})
    with pytest.raises(KailabError, match="not made by kailab"):
        runtime(tmp_path, runner, labelled_nodes=0).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))


def test_existing_cluster_that_does_not_answer(tmp_path):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, "kailab\n")})
    with pytest.raises(KailabError, match="API server does not answer") as err:
        runtime(tmp_path, runner, answers=False).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert "kind delete cluster --name kailab" in err.value.hint


def test_kai_components_never_ready_is_a_clear_failure(tmp_path, fleets_made):
    runner = RecordingRunner({("kind", "get", "clusters"): Result(0, "")})
    rt = runtime(tmp_path, runner, ready=("kai-operator", "binder"))
    rt.timeout = 0
    with pytest.raises(KailabError, match="not Ready after 0s: admission, pod-grouper"):
        rt.up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert fleets_made == []


def test_failed_helm_install_names_the_step_and_the_command(tmp_path, fleets_made):
    runner = RecordingRunner(
        {
            ("kind", "get", "clusters"): Result(0, ""),
            ("helm", "upgrade", "-i", "kai-scheduler"): Result(1, "", "Error: failed to pull chart"),
        }
    )
    with pytest.raises(KailabError) as err:
        runtime(tmp_path, runner).up(UpOptions(fleet=load_fleet()), Progress(quiet=True))
    assert err.value.message == f"Step failed: Installing KAI Scheduler {versions.KAI_VERSION} (Helm chart)."
    assert (
        err.value.details.startswith("$ helm upgrade -i kai-scheduler") and "failed to pull chart" in err.value.details
    )
    assert json.loads((tmp_path / "lab.json").read_text())["complete"] is False


def test_fleet_values_follow_a_resized_fleet():
    values = fake_gpu_operator_values(load_fleet().with_counts({"a100": 4}))
    assert values["topology"]["nodePools"]["a100"]["gpuCount"] == 8


def test_kai_podgroup_crd_gets_the_labs_one_patch_after_the_chart(tmp_path):
    """kind installs KAI's CRDs through Helm, then makes the same change the local runtime makes before applying them."""
    from kailab.kai_patches import PODGROUP_CRD, PODGROUP_CRD_PATCH

    steps = plan(tmp_path, load_fleet(), cluster_exists=False)
    argvs = [argv for s in steps for argv in s.commands]
    helm = next(i for i, a in enumerate(argvs) if a[:4] == ["helm", "upgrade", "-i", "kai-scheduler"])
    patch = next(i for i, a in enumerate(argvs) if "patch" in a and "crd" in a)
    assert patch > helm
    argv = argvs[patch]
    assert argv[argv.index("crd") + 1] == PODGROUP_CRD and "--type=json" in argv
    assert json.loads(argv[argv.index("-p") + 1]) == PODGROUP_CRD_PATCH


def crd(first_version: str) -> dict:
    spec_schema = {"type": "object", "properties": {"subGroups": {"type": "array", "items": {"type": "object"}}}}
    return {
        "spec": {
            "versions": [{"name": first_version, "schema": {"openAPIV3Schema": {"properties": {"spec": spec_schema}}}}]
        }
    }


def test_podgroup_patch_defaults_subgroups_to_an_empty_list_and_leaves_the_chart_object_alone():
    from kailab.kai_patches import PODGROUP_CRD_PATCH, apply_json_patch

    chart = crd("v2alpha2")
    patched = apply_json_patch(chart, PODGROUP_CRD_PATCH)
    sub = patched["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["subGroups"]
    assert sub == {"type": "array", "items": {"type": "object"}, "default": []}
    assert "default" not in json.dumps(chart)


def test_podgroup_patch_refuses_a_crd_of_another_shape():
    from kailab.kai_patches import PODGROUP_CRD_PATCH, apply_json_patch

    with pytest.raises(KailabError) as refused:
        apply_json_patch(crd("v2alpha3"), PODGROUP_CRD_PATCH)
    assert "/spec/versions/0/name" in refused.value.message and "v2alpha3" in refused.value.message
