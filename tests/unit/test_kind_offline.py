"""The offline kind runtime, tested by what it would run and write: the kind config for this host, the offline
plan (images made here, no fake-gpu-operator), image archives in Docker's ``docker save`` layout, and down."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import yaml

from kailab import versions
from kailab.fleet import load_fleet
from kailab.progress import Progress
from kailab.runtimes import kind_offline
from kailab.runtimes.image_archive import FileEntry, write_archive, write_layer
from kailab.runtimes.kind import KindRuntime
from kailab.runtimes.kind_offline import OfflineKit
from kailab.runtimes.kind_plan import HostFacts, Result, kind_config, plan, runtime_class


def kit(tmp_path: Path) -> OfflineKit:
    return OfflineKit(
        kind=tmp_path / "kind",
        helm=tmp_path / "helm",
        kubectl=tmp_path / "kubectl",
        images=tmp_path / "images",
        kai_chart=tmp_path / "chart",
        kwok_manifest=tmp_path / "kwok.yaml",
    )


def patches(config: dict) -> str:
    return "\n".join(config.get("kubeadmConfigPatches", []) + config.get("containerdConfigPatches", []))


def test_cgroup_v1_host_tells_kubelet_not_to_refuse_it():
    assert "failCgroupV1: false" in patches(kind_config(HostFacts(cgroup_version="1")))
    assert "failCgroupV1" not in patches(kind_config(HostFacts(cgroup_version="2")))
    assert any("failCgroupV1: false" in line for line in HostFacts(cgroup_version="1").describe())


def test_host_without_sys_resource_gets_containerd_restrict_oom_score_adj():
    assert "restrict_oom_score_adj = true" in patches(kind_config(HostFacts(sys_resource=False)))
    assert "restrict_oom_score_adj" not in patches(kind_config(HostFacts()))


def test_online_config_has_two_nodes_offline_one_with_the_images_mounted(tmp_path):
    assert [n["role"] for n in kind_config()["nodes"]] == ["control-plane", "worker"]
    config = kind_config(HostFacts(), tmp_path / "images")
    (node,) = config["nodes"]
    assert node["extraMounts"][0]["hostPath"] == str(tmp_path / "images")
    assert node["extraMounts"][0]["containerPath"] == kind_offline.NODE_IMAGES_PATH
    text = patches(config)
    assert f"imageTag: {kind_offline.ETCD_TAG}" in text
    assert f'sandbox_image = "registry.k8s.io/pause:{versions.PAUSE_VERSION}"' in text


def test_offline_plan_uses_what_kailab_made_and_no_registry(tmp_path):
    steps = plan(tmp_path, load_fleet(), cluster_exists=False, kit=kit(tmp_path))
    cmds = [" ".join(c) for s in steps for c in s.commands]
    assert f"--image {kind_offline.NODE_IMAGE}" in cmds[0]
    assert not any("oci://" in c or "https://" in c or "fake-gpu-operator" in c for c in cmds), cmds
    helm = next(c for c in cmds if c.startswith("helm upgrade -i"))
    assert f"{tmp_path / 'chart'} --set global.registry={kind_offline.KAI_REGISTRY}" in helm
    assert f"global.tag={versions.KAI_VERSION}" in helm
    assert any(c.endswith(str(tmp_path / "kwok.yaml")) for c in cmds)
    files = {k: v for s in steps for k, v in s.files.items()}
    assert yaml.safe_load(files["runtimeclass.yaml"]) == runtime_class()
    titles = [s.title for s in steps]
    ledger = next(i for i, s in enumerate(steps) if s.start_ledger)
    fleet = next(i for i, s in enumerate(steps) if s.create_fleet)
    assert next(i for i, t in enumerate(titles) if t.startswith("Waiting until every KAI")) < ledger < fleet


def test_online_plan_starts_no_ledger(tmp_path):
    assert not any(s.start_ledger for s in plan(tmp_path, load_fleet(), cluster_exists=False))


def test_docker_save_archive_names_its_layers_by_their_hash(tmp_path):
    binary = tmp_path / "app"
    binary.write_bytes(b"#!/bin/true\n")
    layer = write_layer(tmp_path / "layer.tar", [FileEntry("workspace/app", binary, mode=0o755)])
    assert layer.sha256 == hashlib.sha256((tmp_path / "layer.tar").read_bytes()).hexdigest()
    with tarfile.open(tmp_path / "layer.tar") as tar:
        assert [(m.name, m.mode) for m in tar.getmembers()] == [("workspace", 0o755), ("workspace/app", 0o755)]
    out = io.BytesIO()
    write_archive(out, ["kailab.local/x:v1"], [layer], {"Entrypoint": ["/workspace/app"]})
    with tarfile.open(fileobj=io.BytesIO(out.getvalue())) as tar:
        (manifest,) = json.load(tar.extractfile("manifest.json"))
        assert manifest["RepoTags"] == ["kailab.local/x:v1"]
        assert manifest["Layers"] == [f"{layer.sha256}/layer.tar"]
        config_blob = tar.extractfile(manifest["Config"]).read()
        assert manifest["Config"] == hashlib.sha256(config_blob).hexdigest() + ".json"
        config = json.loads(config_blob)
        assert config["rootfs"]["diff_ids"] == [f"sha256:{layer.sha256}"]
        assert config["config"]["Entrypoint"] == ["/workspace/app"]
        assert tar.extractfile(manifest["Layers"][0]).read() == (tmp_path / "layer.tar").read_bytes()


def test_node_image_is_removed_only_when_it_carries_kailabs_label():
    calls: list[list[str]] = []

    def runner(label):
        def run(argv):
            calls.append(argv)
            return Result(0, label + "\n") if argv[:3] == ["docker", "image", "inspect"] else Result(0, "")

        return run

    assert kind_offline.remove_node_image(runner("kailab"))
    assert calls[-1] == ["docker", "image", "rm", kind_offline.NODE_IMAGE]
    calls.clear()
    assert not kind_offline.remove_node_image(runner("someone-else"))
    assert not any("rm" in c for c in calls)


def test_up_goes_offline_and_says_so_when_no_registry_answers(tmp_path, monkeypatch, capsys):
    made = []

    def ensure_kit(progress):
        made.append(True)
        raise SystemExit("stop here: the kit is what offline builds")

    monkeypatch.setattr(kind_offline, "ensure_kit", ensure_kit)
    rt = KindRuntime(
        home=tmp_path, runner=lambda argv: Result(0, "28.0"), registry_unreachable=lambda: "no image registry answers"
    )
    from kailab.runtimes.base import UpOptions

    try:
        rt.up(UpOptions(fleet=load_fleet()), Progress())
    except SystemExit:
        pass
    assert made
    assert "Offline: no image registry answers" in capsys.readouterr().err


def test_doctor_counts_kind_and_helm_as_buildable_where_go_is(tmp_path, monkeypatch):
    import stat

    from kailab import doctor

    go = tmp_path / "go"
    go.write_text("#!/bin/sh\necho go1.26.0\n")
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = {f.tool: f for f in doctor.diagnose()}
    assert found["kind"].ok and "--offline builds it" in found["kind"].found
    assert found["helm"].ok and "--offline builds it" in found["helm"].found
    assert not found["docker"].ok  # Docker itself is never built
