"""The fleet file → KWOK nodes, and the Go build's mirrored replace lines."""

import pytest

from kailab.build import parse_go_version, replaces_from_gomod_json
from kailab.errors import KailabError
from kailab.fleet import load_fleet, node_objects


def test_lesson_fleet_is_32_gpus_on_5_nodes():
    fleet = load_fleet()
    nodes = node_objects(fleet)
    assert fleet.total_gpus == 32
    assert [(n["metadata"]["name"], n["status"]["allocatable"]["nvidia.com/gpu"]) for n in nodes] == [
        ("kwok-a100-0", "8"),
        ("kwok-a100-1", "8"),
        ("kwok-h100-0", "8"),
        ("kwok-l40s-0", "4"),
        ("kwok-l40s-1", "4"),
    ]
    a100 = nodes[0]
    labels = a100["metadata"]["labels"]
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert labels["run.ai/simulated-gpu-node-pool"] == "a100"
    assert a100["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert a100["spec"]["taints"] == [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]


def test_pool_override_and_unknown_pool():
    fleet = load_fleet().with_counts({"h100": 3})
    assert fleet.total_gpus == 48
    with pytest.raises(KailabError, match="No pool named v100"):
        load_fleet().with_counts({"v100": 1})


def test_malformed_fleet_file(tmp_path):
    bad = tmp_path / "fleet.yaml"
    bad.write_text("pools:\n  - name: x\n    nodes: 1\n")
    with pytest.raises(KailabError) as err:
        load_fleet(bad)
    assert err.value.message == f"{bad}:2: pools[1]: 'gpusPerNode' is missing"


def test_replaces_mirror_local_paths_as_versions():
    parsed = {
        "Replace": [
            {"Old": {"Path": "k8s.io/api"}, "New": {"Path": "./staging/src/k8s.io/api"}},
            {"Old": {"Path": "k8s.io/apimachinery"}, "New": {"Path": "k8s.io/apimachinery", "Version": "v0.35.4"}},
            {"Old": {"Path": "go.etcd.io/etcd"}, "New": {"Path": "./FORBIDDEN_DEPENDENCY"}},
        ]
    }
    assert replaces_from_gomod_json(parsed, "v0.35.4") == [
        ("k8s.io/api", "k8s.io/api@v0.35.4"),
        ("k8s.io/apimachinery", "k8s.io/apimachinery@v0.35.4"),
    ]


def test_go_version_parse():
    assert parse_go_version("go1.26.8") == (1, 26)
    assert parse_go_version("devel") is None
