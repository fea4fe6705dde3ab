"""A class on the kind runtime, offline: ``kailab class up`` gives each of two learners a SchedulingShard that KAI's
operator (from KAI's chart, its image made here) turns into a scheduler Deployment of their own; the lab is opened
at an address of this machine (``kailab up --address``: kind's apiServerAddress), each learner is refused
everything outside their slice (the isolation matrix, tests/fleet/isolation.py); a learner joins with only their
kubeconfig (it names the kind API server at that address) from a lab folder of their own,
runs lessons that reconfigure their scheduler through their shard (placement) and read its fair shares through
the API server's proxy (fairshare) while the other learner's lesson runs, each with the verdict the local runtime
recorded (tests/golden/<lesson>/verdict.json); the admission policy refuses a PodGroup aimed at the other
learner's partition on kind's API server too; ``class status`` shows both; ``class down`` revokes the credential
and removes the schedulers; ``kailab down`` leaves Docker as it was.

Needs a Docker engine (CI: .ci/docker-setup.sh) and the offline kit (tests/kind/test_kind_e2e.py says what a
first build needs). It skips without Docker, except under CI=true, where it fails.

Run it:  python -m pytest tests/kind/test_kind_class.py -m kind
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_kind_e2e import assert_down_left_nothing, docker_before, kailab, same_on_kind

from kailab import network, partitions, shards
from kailab.classroom import access, credentials
from kailab.kube import Kube
from kailab.labels import KAI_NAMESPACE, NODEPOOL_LABEL, PODGROUP_API
from kailab.runtimes.kind_offline import KAI_REGISTRY
from kailab.runtimes.kind_plan import SCHEDULER_RESOURCES

GOLDEN = Path(__file__).parent.parent / "golden"
sys.path.insert(0, str(Path(__file__).parent.parent / "fleet"))
import isolation  # noqa: E402  (tests/fleet/isolation.py)
from golden_rows import rows  # noqa: E402  (tests/fleet/golden_rows.py)

pytestmark = [pytest.mark.kind]
LESSONS = {"ann": ["placement", "fairshare"], "bob": ["quota"]}


def verdicts_of(run: subprocess.CompletedProcess) -> list[dict]:
    assert run.stdout.startswith("{"), run.stderr[-4000:]
    return json.loads(run.stdout)["verdicts"]


def assert_golden(learner: str, verdicts: list[dict]) -> None:
    assert [v["scenario"] for v in verdicts] == LESSONS[learner]
    for v in verdicts:
        assert v["outcome"] == "PASS", (learner, v["scenario"], v["error"], [c for c in v["checks"] if not c["passed"]])
        golden = json.loads((GOLDEN / v["scenario"] / "verdict.json").read_text())
        assert same_on_kind(rows(v, learner), rows(golden)), (learner, v["scenario"], rows(v, learner))


def refusal(call) -> tuple[int, str]:
    from kubernetes.client.exceptions import ApiException

    try:
        call()
    except ApiException as e:
        return e.status, str(e.body)
    return 0, ""


def podgroup(name: str, namespace: str, pool: str, queue: str) -> dict:
    return {
        "apiVersion": PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**partitions.owner("ann").labels, NODEPOOL_LABEL: pool},
        },
        "spec": {"minMember": 1, "queue": queue},
    }


def assert_isolated(admin: Kube, learners: dict[str, Kube]) -> None:
    """The isolation matrix on kind's API server (tests/fleet/isolation.py, as the local fleet test checks it):
    each learner's rules in every namespace and cluster-wide are what a learner is meant to have, and the guarded
    writes against the other learner are refused; the matrix is printed."""
    kinds = isolation.served(admin)
    verbs = isolation.every_verb(kinds)
    for name in learners:
        for obj in isolation.others_objects(name):
            admin.apply(obj)
    everyone = {ns for n in learners for ns in access.lesson_namespaces(n)}
    for name, creds in learners.items():
        want, seen = isolation.expected(name), {}
        for ns in [n.metadata.name for n in admin.core.list_namespace().items]:
            found = isolation.rules(creds, ns)
            got = isolation.matrix(found, kinds, verbs, namespaced=True)
            scope = (
                "own namespace"
                if ns in access.lesson_namespaces(name)
                else "another learner's namespace"
                if ns in everyone
                else isolation.lab_scope(ns)
            )
            assert got == want[scope], (name, ns, got)
            seen.setdefault(scope, got)
            seen["cluster"] = isolation.matrix(found, kinds, verbs, namespaced=False)
            assert seen["cluster"] == want["cluster"], (name, ns, seen["cluster"])
        print(isolation.table(f"{name} on kind", kinds, verbs, {s: seen[s] for s in want if s in seen}))
    for x, y in itertools.permutations(learners, 2):
        for what, (who, call) in isolation.guarded_writes(x, learners[x], y).items():
            status, words = isolation.refusal(call)
            assert status == 403 and (who == "rbac" or isolation.POLICY in words), (x, y, what, status, words)


def test_a_class_of_two_on_kind_runs_each_learners_scheduler_and_lessons_as_on_a_lab_of_ones_own(tmp_path):
    before = docker_before("kind class")
    env = {**os.environ, "KAILAB_HOME": str(tmp_path / "lab")}
    ann_env = {**os.environ, "KAILAB_HOME": str(tmp_path / "ann-machine")}  # the learner's own lab folder
    creds = tmp_path / "creds"
    # Opened at an address of this machine (not loopback): kind publishes its API server there, with a certificate
    # for it, and every learner's kubeconfig names it.
    address = next(
        a
        for a in network.machine_addresses()
        if ipaddress.ip_address(a).version == 4 and not ipaddress.ip_address(a).is_loopback
    )
    up = kailab("up", "--runtime", "kind", "--offline", "--address", address, env=env)
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        joined = kailab(
            "class", "up", "--learner", "ann", "--learner", "bob", "--out", str(creds), env=env, timeout=600
        )
        assert joined.returncode == 0, joined.stderr[-4000:]
        admin = Kube(tmp_path / "lab" / "kubeconfig.yaml")
        for (
            learner
        ) in LESSONS:  # KAI's operator made each shard a scheduler Deployment of KAI's image, for their partition
            deployment = admin.apps.read_namespaced_deployment(shards.scheduler_name(learner), KAI_NAMESPACE)
            container = deployment.spec.template.spec.containers[0]
            assert container.image.startswith(KAI_REGISTRY), container.image
            assert f"--partition-label-value={learner}" in container.args, container.args
            assert container.resources.requests == SCHEDULER_RESOURCES["requests"]  # the lab's, so a class fits
            assert (deployment.status.ready_replicas or 0) == 1
        ann_file = yaml.safe_load((creds / "ann.kubeconfig").read_text())
        assert ann_file["clusters"][0]["cluster"]["server"] == admin.api.configuration.host  # kind's, at the address
        assert admin.api.configuration.host.startswith(f"https://{address}:")
        assert f"Learners reach the lab at https://{address}:" in joined.stdout

        assert kailab("join", str(creds / "ann.kubeconfig"), env=ann_env, timeout=120).returncode == 0
        ann = Kube(creds / "ann.kubeconfig")
        assert_isolated(admin, {n: Kube(creds / f"{n}.kubeconfig") for n in LESSONS})
        ns = access.lesson_namespaces("ann")[0]
        theirs = refusal(lambda: ann.apply(podgroup("aimed", ns, "bob", "bob-team")))
        assert theirs[0] == 403 and credentials.POLICY in theirs[1] and "PodGroup" in theirs[1], theirs
        assert refusal(lambda: ann.apply(podgroup("hers", ns, "ann", "ann-team"))) == (0, "")
        admin.delete(PODGROUP_API, "PodGroup", "hers", ns)

        # bob's lesson (the instructor runs it in his slice) while ann's run from her own folder
        bob = subprocess.Popen(
            [sys.executable, "-m", "kailab", "class", "demo", "quota", "--learner", "bob", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ann_verdicts = [
            v for lesson in LESSONS["ann"] for v in verdicts_of(kailab("demo", lesson, "--json", env=ann_env))
        ]
        out, err = bob.communicate(timeout=600)
        assert_golden("ann", ann_verdicts)
        assert_golden("bob", verdicts_of(subprocess.CompletedProcess(bob.args, bob.returncode, out, err)))
        assert admin.get("kai.scheduler/v1", "SchedulingShard", shards.shard_name("bob"))["metadata"]["generation"] == 1

        status = kailab("class", "status", "--json", env=env, timeout=120)
        assert status.returncode == 0, status.stderr
        report = json.loads(status.stdout)
        for learner, lessons in LESSONS.items():
            assert report[learner]["scheduler"] == "running"
            assert {n: r["outcome"] for n, r in report[learner]["lessons"].items()} == dict.fromkeys(lessons, "PASS")

        down = kailab("class", "down", env=env, timeout=600)
        assert down.returncode == 0, down.stderr[-2000:]
        assert [
            d.metadata.name
            for d in admin.apps.list_namespaced_deployment(KAI_NAMESPACE).items
            if "-shard" in d.metadata.name
        ] == []
        left = kailab("demo", "quota", env=ann_env, timeout=120)
        assert left.returncode != 0 and "credential was revoked" in left.stderr, left.stderr
    finally:
        removed = kailab("down", env=env, timeout=600)
    assert_down_left_nothing(removed, before)
    assert "did not write" not in removed.stderr, removed.stderr  # the class's file went with the class
