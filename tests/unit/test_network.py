"""A lab opened to a network (``kailab up --address``, ``class up``): which addresses are accepted, what the local and
kind runtimes are told, the address the learners' kubeconfigs name, and what class up says. The fleet test with
network namespaces proves it across a real link (tests/fleet/test_class_network_fleet.py)."""

from __future__ import annotations

import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from kailab import network
from kailab.classroom.klass import Class
from kailab.errors import KailabError
from kailab.labstate import LabState
from kailab.runtimes.kind_plan import kind_config
from kailab.runtimes.local import LocalRuntime
from kailab.runtimes.local_partitions import LocalPartitions
from kailab.runtimes.operator_partitions import OperatorPartitions

HERE = ["127.0.0.1", "::1", "10.20.0.1", "192.168.1.23", "fe80::1", "2001:db8::5"]


@pytest.mark.parametrize(
    "given, says",
    [
        ("laptop.local", "is not an IP address"),
        ("10.20.0.300", "is not an IP address"),
        ("127.0.0.1", "is loopback"),
        ("::1", "is loopback"),
        ("0.0.0.0", "is no address"),
        ("fe80::1", "link-local"),
        ("192.0.2.77", "is not an address of this machine"),
    ],
)
def test_an_address_that_is_not_one_learners_can_reach_here_is_refused_with_this_machines_own(given, says):
    with pytest.raises(KailabError, match=says) as refused:
        network.check_address(given, HERE)
    if "not an address of this machine" in says or "not an IP" in says:
        assert "10.20.0.1, 192.168.1.23, 2001:db8::5" in refused.value.hint  # what to give instead


def test_an_address_of_this_machine_is_kept_in_its_normal_form():
    assert network.check_address(" 10.20.0.1 ", HERE) == "10.20.0.1"
    assert network.check_address("[2001:0db8::0005]", HERE) == "2001:db8::5"
    assert "127.0.0.1" in network.machine_addresses()  # read from this machine's interfaces


def test_learners_reach_the_api_server_at_the_address_on_its_own_port():
    assert network.with_host("https://127.0.0.1:41000", "10.20.0.1") == "https://10.20.0.1:41000"
    assert network.with_host("https://127.0.0.1:41000", "2001:db8::5") == "https://[2001:db8::5]:41000"
    assert network.listen_all("10.20.0.1") == "0.0.0.0" and network.listen_all("2001:db8::5") == "::"


def test_a_port_taken_at_the_address_is_seen():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        # held on loopback: binding every address at that port fails, so the API server could not listen there
        assert network.port_taken("10.20.0.1", held.getsockname()[1])
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert not network.port_taken("10.20.0.1", port)


def test_the_local_runtime_opens_only_its_api_server_at_the_address_with_a_certificate_for_it(tmp_path):
    bins = {n: Path(f"/bin/{n}") for n in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")}
    bins |= {"kwok": Path("/bin/kwok"), "kubectl": Path("/bin/kubectl")}
    rt = LocalRuntime(home=tmp_path)
    plain = rt.kwokctl_config(bins)[0]
    opened = rt.kwokctl_config(bins, None, "10.20.0.1")[0]
    assert plain["options"]["bindAddress"] == opened["options"]["bindAddress"] == "127.0.0.1"  # every component
    assert "kubeApiserverCertSANs" not in plain["options"]
    assert opened["options"]["kubeApiserverCertSANs"] == ["10.20.0.1"]

    def apiserver_args(conf):
        patch = next(p for p in conf["componentsPatches"] if p["name"] == "kube-apiserver")
        return {a["key"]: a for a in patch["extraArgs"]}

    assert "bind-address" not in apiserver_args(plain)
    assert apiserver_args(opened)["bind-address"] == {"key": "bind-address", "value": "0.0.0.0", "override": True}
    assert [p["name"] for p in opened["componentsPatches"]] == [p["name"] for p in plain["componentsPatches"]]


def test_kind_publishes_its_api_server_at_the_address():
    assert "apiServerAddress" not in (kind_config().get("networking") or {})
    assert kind_config(address="10.20.0.1")["networking"] == {"apiServerAddress": "10.20.0.1"}
    offline = kind_config(offline_images=Path("/images"), address="10.20.0.1")["networking"]
    assert offline["apiServerAddress"] == "10.20.0.1" and "podSubnet" in offline


def test_the_labs_address_is_kept_in_its_state(tmp_path):
    LabState("local", "k", address="10.20.0.1").write(tmp_path)
    assert LabState.read(tmp_path).address == "10.20.0.1"
    LabState("local", "k").write(tmp_path)
    assert LabState.read(tmp_path).address == ""


def _kube(host: str):
    return SimpleNamespace(api=SimpleNamespace(configuration=SimpleNamespace(host=host)))


def _local_class(tmp_path, address: str, listening=()):
    rt = LocalRuntime(home=tmp_path)
    LabState("local", str(rt.kubeconfig()), address=address).write(tmp_path)
    rt.listening_beyond_loopback = lambda: list(listening)  # type: ignore[method-assign]
    return Class(LocalPartitions(rt), address=LabState.read(tmp_path).address)


def test_class_up_names_the_labs_address_in_every_kubeconfig_and_says_what_is_open(tmp_path, monkeypatch):
    monkeypatch.setattr(network, "machine_addresses", lambda: HERE)
    klass = _local_class(tmp_path, "10.20.0.1", [("kube-apiserver", "0.0.0.0", 41000)])
    server, said = klass.learners_server(_kube("https://127.0.0.1:41000"))
    assert server == "https://10.20.0.1:41000"
    assert "https://10.20.0.1:41000 (TCP port 41000)" in said
    assert "Nothing else of the lab listens beyond this machine's loopback" in said
    assert klass.learners_server(_kube("https://127.0.0.1:41000"), "10.20.0.1")[0] == server  # the same, checked

    leaky = _local_class(tmp_path, "10.20.0.1", [("kube-apiserver", "0.0.0.0", 41000), ("kai-x", "0.0.0.0", 8080)])
    assert (
        "Also listening beyond this machine's loopback: kai-x on 0.0.0.0:8080"
        in leaky.learners_server(_kube("https://127.0.0.1:41000"))[1]
    )


def test_class_up_at_an_address_the_lab_does_not_listen_at_is_refused_before_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(network, "machine_addresses", lambda: HERE)
    loopback = _local_class(tmp_path, "")
    server, said = loopback.learners_server(_kube("https://127.0.0.1:41000"))
    assert server == "https://127.0.0.1:41000" and "work on this machine only" in said and "--address" in said
    with pytest.raises(KailabError, match="listens on this machine's loopback only, not at 10.20.0.1") as refused:
        loopback.learners_server(_kube("https://127.0.0.1:41000"), "10.20.0.1")
    assert "kailab down && kailab up --address 10.20.0.1" in refused.value.hint
    with pytest.raises(KailabError, match="listens at 10.20.0.1, not at 192.168.1.23"):
        _local_class(tmp_path, "10.20.0.1").learners_server(_kube("https://127.0.0.1:41000"), "192.168.1.23")
    with pytest.raises(KailabError, match="not an address of this machine"):
        _local_class(tmp_path, "10.20.0.1").learners_server(_kube("https://127.0.0.1:41000"), "192.0.2.77")


def test_on_an_adopted_cluster_learners_get_its_api_server_as_the_kubeconfig_names_it(tmp_path):
    adopted = Class(OperatorPartitions(SimpleNamespace(home=tmp_path)), adopted=True)  # type: ignore[arg-type]
    server, said = adopted.learners_server(_kube("https://cluster.example:6443"))
    assert server == "https://cluster.example:6443" and "must be an address they reach" in said
    with pytest.raises(KailabError, match="--address is for labs kailab makes"):
        adopted.learners_server(_kube("https://cluster.example:6443"), "10.20.0.1")
