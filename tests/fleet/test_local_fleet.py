"""The local fleet itself: nodes, the default scheduler path, up/status idempotence, down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from kailab.kube import as_json
from kailab.labstate import LabState
from kailab.runtimes.processes import Identity
from kailab.scenarios.live import clear_scenarios
from kailab.watched import Watched

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "plain", "namespace": "default"},
    "spec": {
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "c", "image": "pause", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    },
}


def wait_pod(kube, name, namespace, predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = kube.core.read_namespaced_pod(name, namespace)
        if predicate(pod):
            return pod
        time.sleep(0.2)
    raise AssertionError(
        f"pod {namespace}/{name} did not get there: phase {pod.status.phase}, node {pod.spec.node_name}"
    )


def test_fleet_has_32_gpus_on_ready_kwok_nodes(lab):
    nodes = lab.kube.core.list_node().items
    assert sorted(n.metadata.name for n in nodes) == [
        "kwok-a100-0",
        "kwok-a100-1",
        "kwok-h100-0",
        "kwok-l40s-0",
        "kwok-l40s-1",
    ]
    assert sum(int(n.status.allocatable["nvidia.com/gpu"]) for n in nodes) == 32
    assert all(any(c.type == "Ready" and c.status == "True" for c in n.status.conditions) for n in nodes)


def test_default_scheduler_binds_a_pod_that_names_no_scheduler(lab):
    clear_scenarios(lab.kube)  # exercises run earlier leave their pods on the fleet
    lab.kube.apply(POD)
    try:
        pod = wait_pod(lab.kube, "plain", "default", lambda p: p.status.phase == "Running")
        assert pod.spec.scheduler_name == "default-scheduler"
        assert pod.spec.node_name.startswith("kwok-")
        events = lab.kube.core.list_namespaced_event("default", field_selector="involvedObject.name=plain").items
        assert any(e.reason == "Scheduled" and e.reporting_component in ("default-scheduler", "") for e in events)
    finally:
        lab.kube.delete("v1", "Pod", "plain", "default")


def test_up_again_is_a_fast_no_op_and_status_reports_health(lab):
    start = time.monotonic()
    proc = lab.cli("up", check=True)
    assert "already running" in proc.stderr
    assert time.monotonic() - start < 15
    status = json.loads(lab.cli("status", "--json", check=True).stdout)
    assert status["healthy"] and status["runtime"] == "local"
    names = {c["name"] for c in status["components"]}
    assert {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"} <= names
    assert sum(n["gpus"] for n in status["nodes"]) == 32
    assert lab.cli("kubeconfig", check=True).stdout.strip() == str(lab.runtime.kubeconfig())


def test_a_stopped_component_shows_as_down(lab, tmp_path):
    """status must not claim health it does not have: a fake component pid that is dead shows as down."""
    group = lab.runtime.kai_processes
    group.pids.mkdir(parents=True, exist_ok=True)
    state_file = lab.home / LabState.FILE
    original = state_file.read_text()
    state = LabState.read(lab.home)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (group.pids / "ghost.pid").write_text(Identity(dead.pid, 1.0).dump())
    state.kai_components.append("ghost")
    state.write(lab.home)
    try:
        proc = lab.cli("status", "--json")
        status = json.loads(proc.stdout)
        assert proc.returncode == 1 and not status["healthy"]
        assert [c["healthy"] for c in status["components"] if c["name"] == "ghost"] == [False]
    finally:
        state_file.write_text(original)
        (group.pids / "ghost.pid").unlink()


def test_watch_stop_ends_its_thread(lab):
    """stop() must end the watch thread: one left reading TLS at interpreter exit aborts Python (exit -6). Both
    ways a watch is read: the client's typed objects in its own thread, the API's JSON by the process's reader."""
    for list_nodes in (lab.kube.core.list_node, as_json(lab.kube.core.list_node)):
        nodes = Watched(list_nodes).start()
        assert len(nodes.snapshot()) == 5
        started = time.monotonic()
        nodes.stop()
        assert not nodes._thread.is_alive(), "the watch thread still runs after stop()"
        assert time.monotonic() - started < 5


def test_up_then_down_leaves_no_process_and_spares_strangers(tmp_path, processes_naming):
    """A second, separate lab: up (without KAI, binaries cached by now), down, nothing of the lab left behind —
    and a user's processes that merely name the lab's files, or a sibling path, survive."""
    home = tmp_path / "home"
    env = {**os.environ, "KAILAB_HOME": str(home)}
    up = subprocess.run(
        [sys.executable, "-m", "kailab", "up", "--runtime", "local", "--no-kai", "--pool", "l40s=0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert up.returncode == 0, up.stderr
    assert len(processes_naming(home)) >= 5
    log = home / "kwok" / "clusters" / "kailab" / "logs" / "kube-apiserver.log"
    strangers = [
        subprocess.Popen(["tail", "-f", str(log)], stdout=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", f"{home}-other"]),
    ]
    try:
        down = subprocess.run(
            [sys.executable, "-m", "kailab", "down"], env=env, capture_output=True, text=True, timeout=120
        )
        assert down.returncode == 0, down.stderr
        assert [p.poll() for p in strangers] == [None, None], "down stopped a process it did not start"
        assert processes_naming(home, spare=tuple(p.pid for p in strangers)) == []
        assert not home.exists()
    finally:
        for p in strangers:
            p.kill()
            p.wait()
