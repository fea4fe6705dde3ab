"""The local lab's cluster standing in for "a cluster kailab did not make": a second lab adopts it.

What it proves, on the real KAI of the local fleet: ``kailab up --runtime existing`` adopts a cluster through
its kubeconfig and changes nothing there; a lesson whose queue name is taken by an object kailab did not make
is refused, and that object is left as it was; with ``--prefix`` every lesson runs (or says it is not
applicable here) beside a foreign queue, priority class, namespace and pod; ``down`` removes the second lab's
objects — and those only: every foreign object keeps its resourceVersion, and the local lab still runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from waits import until  # tests/fleet/waits.py

from kailab.labels import KWOK_TOLERATION, LAB_ID_LABEL, QUEUE_API
from kailab.labstate import LabState
from kailab.ownership import Owner
from kailab.preflight import blocking, findings
from kailab.runtimes.existing import leaves_first
from kailab.runtimes.existing_facts import read_facts
from kailab.scenarios.live import clear_scenarios

PC_API = "scheduling.k8s.io/v1"
FOREIGN_NS, FOREIGN_POD = "platform-team", "keeper"
FOREIGN_QUEUE = "team-prod"  # the lessons' own queue name, on purpose
FOREIGN_CLASS = "platform-critical"
KAI_DEFAULT_QUEUES = ("default-queue", "default-parent-queue")  # the local lab's install of KAI, kept throughout
PREFIX = "guest"
# Lessons the adopted local cluster cannot run: they stop or reconfigure KAI's scheduler (not the guest's to
# touch; time-fairshare turns on its usage database), read fair shares from its metrics (no metrics Service here),
# or need GPU sharing known to be on (no KAI Config here).
# The operators' lessons: the adopted cluster runs none of their operators (kailab names each and how to install it)
NOT_APPLICABLE = {"fairshare", "placement", "consolidation", "fractions", "time-fairshare"}
NOT_APPLICABLE |= {"ray-gang", "ray-sharing", "ray-autoscale", "pytorchjob", "jobset-lws"}


def unlimited(gpu_quota: int) -> dict:
    free = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {"gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1}, "cpu": free, "memory": free}


FOREIGN = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FOREIGN_NS, "labels": {"team": "platform"}}},
    {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": FOREIGN_QUEUE, "labels": {"team": "platform"}},
        "spec": {"resources": unlimited(0)},
    },
    {
        "apiVersion": PC_API,
        "kind": "PriorityClass",
        "metadata": {"name": FOREIGN_CLASS, "labels": {"team": "platform"}},
        "value": 1000,
        "globalDefault": False,
    },
    # No GPU, the default scheduler: it sits on a KWOK node through every lesson and holds nothing they count.
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": FOREIGN_POD, "namespace": FOREIGN_NS, "labels": {"team": "platform"}},
        "spec": {
            "tolerations": [dict(KWOK_TOLERATION)],
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
    },
]


def key(obj: dict) -> tuple:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")


def versions_now(kube) -> dict[tuple, str]:
    """The resourceVersion of each foreign object (and of the local lab's KAI default queues)."""
    objs = [*(key(o) for o in FOREIGN), *((QUEUE_API, "Queue", q, None) for q in KAI_DEFAULT_QUEUES)]
    out = {}
    for api, kind, name, ns in objs:
        got = kube.get(api, kind, name, ns)
        out[(kind, name)] = got["metadata"]["resourceVersion"] if got else None
    return out


def settled(kube) -> dict[tuple, str]:
    """The versions once nothing changes them for 3 s (KAI's queue-controller writes a new queue's status once)."""

    def stable():
        first = versions_now(kube)
        time.sleep(3)
        return first if versions_now(kube) == first else None

    return until("the foreign objects to settle", stable, timeout=60, every=0)


@pytest.fixture
def foreign(kai_lab):
    """Foreign objects on the local lab's cluster; the local lab's own exercises and queues out of the way while
    the guest runs (their quotas would add up past the fleet), and restored after."""
    kube = kai_lab.kube
    clear_scenarios(kube)  # the local lab's exercise pods would leave the guest's lessons no GPUs
    host_queues = [
        q
        for q in kube.list(QUEUE_API, "Queue", label_selector=Owner().selector())
        if q["metadata"]["name"] not in KAI_DEFAULT_QUEUES
    ]
    for name in leaves_first(host_queues):
        kube.delete(QUEUE_API, "Queue", name)
    until(
        "the local lab's queues to be gone",
        lambda: all(kube.get(QUEUE_API, "Queue", q["metadata"]["name"]) is None for q in host_queues),
    )
    for obj in FOREIGN[:-1]:
        kube.apply(obj)
    until(
        "the foreign namespace's default ServiceAccount",  # pods are refused until it exists
        lambda: any(a.metadata.name == "default" for a in kube.core.list_namespaced_service_account(FOREIGN_NS).items),
    )
    kube.apply(FOREIGN[-1])
    until(
        "the foreign pod to run",
        lambda: kube.core.read_namespaced_pod(FOREIGN_POD, FOREIGN_NS).status.phase == "Running",
    )
    try:
        yield settled(kube)
    finally:
        kube.delete_namespace(FOREIGN_NS)
        kube.delete(QUEUE_API, "Queue", FOREIGN_QUEUE)
        kube.delete(PC_API, "PriorityClass", FOREIGN_CLASS)
        for name in reversed(leaves_first(host_queues)):  # parents first
            q = next(q for q in host_queues if q["metadata"]["name"] == name)
            kube.apply(
                {
                    "apiVersion": QUEUE_API,
                    "kind": "Queue",
                    "metadata": {"name": name, "labels": q["metadata"].get("labels") or {}},
                    "spec": q["spec"],
                }
            )


class Guest:
    """A second lab, in its own KAILAB_HOME, on the local lab's cluster — driven through the command line."""

    def __init__(self, home, kubeconfig):
        self.home, self.kubeconfig = home, str(kubeconfig)

    def cli(self, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
        env = {**os.environ, "KAILAB_HOME": str(self.home)}
        env.pop("KAILAB_KUBECONFIG", None)
        return subprocess.run(
            [sys.executable, "-m", "kailab", *args], capture_output=True, text=True, env=env, timeout=timeout
        )

    def up(self, *extra: str) -> tuple[str, str]:
        """Adopt the cluster; (the lab's id, what up printed)."""
        proc = self.cli("up", "--runtime", "existing", "--kubeconfig", self.kubeconfig, *extra, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return LabState.read(self.home).lab_id, proc.stdout

    def down(self) -> None:
        proc = self.cli("down", timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not (self.home / LabState.FILE).exists()


@pytest.fixture
def guest(kai_lab, foreign, tmp_path):
    """The second lab; removed at the end if a failed test left it up (before the foreign objects go)."""
    g = Guest(tmp_path / "guest", kai_lab.runtime.kubeconfig())
    yield g
    if (g.home / LabState.FILE).exists():
        g.cli("down", timeout=300)


def owned_by(kube, lab_id: str) -> dict[str, list[str]]:
    selector = f"{LAB_ID_LABEL}={lab_id}"
    return {
        "namespaces": [n.metadata.name for n in kube.core.list_namespace(label_selector=selector).items],
        "queues": [q["metadata"]["name"] for q in kube.list(QUEUE_API, "Queue", label_selector=selector)],
        "priority classes": [
            p["metadata"]["name"] for p in kube.list(PC_API, "PriorityClass", label_selector=selector)
        ],
    }


def test_a_lesson_whose_queue_name_is_taken_is_refused_and_the_queue_left_as_it_was(kai_lab, foreign, guest):
    kube = kai_lab.kube
    lab_id, said = guest.up()
    assert "The cluster, before kailab adopts it" in said and "KAI's CRDs" in said, said  # the findings table
    # What it found on the local lab: KAI's CRDs; no scheduler Deployment (KAI runs as processes) — a warning; 32 GPUs
    rows = {f.check: f for f in findings(read_facts(kube, Owner(lab_id), None))}
    assert {c: rows[c].status for c in ("API server", "KAI's CRDs", "KAI's scheduler", "GPU nodes")} == {
        "API server": "ok",
        "KAI's CRDs": "ok",
        "KAI's scheduler": "warning",
        "GPU nodes": "ok",
    }
    assert rows["GPU nodes"].found.startswith("5 nodes with 32 GPUs") and not blocking(list(rows.values()))
    state = LabState.read(guest.home)
    assert state.kubeconfig == str(kai_lab.runtime.kubeconfig())  # used where it is, not copied
    assert sorted(p.name for p in guest.home.iterdir()) == [".kailab-lab", "lab.json"]
    proc = guest.cli("demo", "quota")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Queue team-prod" in proc.stderr and "--prefix" in proc.stderr
    assert owned_by(kube, lab_id) == {"namespaces": [], "queues": [], "priority classes": []}  # nothing applied
    guest.down()
    assert versions_now(kube) == foreign
    assert kube.get(QUEUE_API, "Queue", FOREIGN_QUEUE)["spec"]["resources"]["gpu"]["quota"] == 0


def test_with_a_prefix_every_lesson_runs_beside_foreign_objects_and_down_leaves_them(kai_lab, foreign, guest):
    kube = kai_lab.kube
    lab_id, _ = guest.up("--prefix", PREFIX)
    assert LabState.read(guest.home).prefix == PREFIX

    proc = guest.cli("demo", "all", "--json")
    result = json.loads(proc.stdout or "{}")
    outcomes = {v["scenario"]: v["outcome"] for v in result.get("verdicts", [])}
    failed = [
        f"{v['scenario']}: {v.get('error') or ''} "
        + "; ".join(
            f"{c['title']}: expected {c['expected']}, observed {c['observed']}" for c in v["checks"] if not c["passed"]
        )
        for v in result.get("verdicts", [])
        if v["outcome"] == "FAIL"
    ]
    assert proc.returncode == 0 and not failed, "\n".join(failed) + proc.stderr[-3000:]
    assert {n for n, o in outcomes.items() if o == "NOT APPLICABLE"} == NOT_APPLICABLE
    assert all(v["not_applicable"].startswith("on this cluster: ") for v in result["verdicts"] if v["not_applicable"])
    assert {n for n, o in outcomes.items() if o == "PASS"} == set(outcomes) - NOT_APPLICABLE

    mine = owned_by(kube, lab_id)
    assert mine["namespaces"] and all(n.startswith(f"{PREFIX}-kailab-") for n in mine["namespaces"])
    baseline = kube.core.list_namespaced_pod(
        f"{PREFIX}-kailab-baseline"
    ).items  # the last lesson's pods are still there
    assert baseline and all(p.metadata.labels.get(LAB_ID_LABEL) == lab_id for p in baseline)
    assert versions_now(kube) == foreign, "a lesson changed an object kailab did not make"

    guest.down()
    assert owned_by(kube, lab_id) == {"namespaces": [], "queues": [], "priority classes": []}
    assert versions_now(kube) == foreign, "down changed an object kailab did not make"
    assert kube.ping()
    status = json.loads(kai_lab.cli("status", "--json", check=True).stdout)
    assert status["healthy"] and status["runtime"] == "local"  # the local lab runs on, untouched


USER_POD = "users-own"  # in `default`, beside the foreign namespace's pod


def scenario_in(folder, namespace: str):
    """A scenario that names a namespace it did not make: nothing may be cleared, labelled or applied there."""
    path = folder / f"in-{namespace}.yaml"
    path.write_text(
        f"name: mine\nnamespace: {namespace}\nqueues: [{{name: mine-q}}]\n"
        "workloads: [{name: w, queue: mine-q, pods: 1, gpus: 1}]\nsteps: [{apply: w}, {wait: {workload: w, running: 1}}]\n"
    )
    return path


def users_things(kube) -> dict:
    """The user's pods (uid, phase, not being deleted) and namespaces (uid, labels), as they are now."""
    pods = {
        (ns, name): kube.core.read_namespaced_pod(name, ns)
        for ns, name in (("default", USER_POD), (FOREIGN_NS, FOREIGN_POD))
    }
    spaces = {ns: kube.core.read_namespace(ns) for ns in ("default", FOREIGN_NS)}
    return {
        "pods": {k: (p.metadata.uid, p.status.phase, p.metadata.deletion_timestamp) for k, p in pods.items()},
        "namespaces": {
            k: (n.metadata.uid, n.metadata.labels, n.metadata.deletion_timestamp) for k, n in spaces.items()
        },
    }


def test_a_scenario_naming_a_namespace_kailab_did_not_make_is_refused_and_the_users_pods_are_left(
    kai_lab, foreign, guest, tmp_path
):
    kube = kai_lab.kube
    pod = {**FOREIGN[-1], "metadata": {"name": USER_POD, "namespace": "default", "labels": {"team": "me"}}}
    kube.apply(pod)
    try:
        until(
            "the user's pod in default to run",
            lambda: kube.core.read_namespaced_pod(USER_POD, "default").status.phase == "Running",
        )
        before = users_things(kube)
        assert all(phase == "Running" for _, phase, _ in before["pods"].values())
        paths = {ns: scenario_in(tmp_path, ns) for ns in ("default", FOREIGN_NS)}

        # An adopted cluster: refused before anything is applied; a lesson and down leave the user's things.
        lab_id, _ = guest.up()
        for ns, path in paths.items():
            proc = guest.cli("run", str(path))
            assert proc.returncode == 1, proc.stdout + proc.stderr
            assert f"kailab will not change or delete Namespace {ns}: it exists on this cluster" in proc.stderr, (
                proc.stderr
            )
            assert f"give {path} namespace: kailab-mine (or leave namespace: out)" in proc.stderr, proc.stderr
        assert owned_by(kube, lab_id) == {"namespaces": [], "queues": [], "priority classes": []}  # nothing applied
        guest.down()
        # A lesson of the guest's: with a prefix of its own (kailab-baseline may be the host lab's, and a guest
        # without a prefix is refused it like any namespace it did not make).
        guest.up("--prefix", "guest")
        proc = guest.cli("demo", "baseline")
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert users_things(kube) == before
        guest.down()
        assert users_things(kube) == before, "down touched a namespace or pod kailab did not make"

        # The cluster kailab made: the same refusal, and its lesson leaves the user's things too.
        for ns, path in paths.items():
            proc = kai_lab.cli("run", str(path))
            assert proc.returncode == 1 and f"Namespace {ns}: it exists" in proc.stderr, proc.stdout + proc.stderr
        proc = kai_lab.cli("demo", "baseline")
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert users_things(kube) == before
    finally:
        clear_scenarios(kube)  # the lessons' pods: the next test starts from an empty fleet
        kube.delete("v1", "Pod", USER_POD, "default")
