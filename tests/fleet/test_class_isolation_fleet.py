"""Isolation of a class's learners on the local lab, proved the way multi-tenancy benchmarks prove it
(tests/fleet/isolation.py): for each ordered pair of learners, every resource kind the API server serves × every
verb, in the learner's own namespaces, the other's, the lab's and cluster-wide, from the learner's own
SelfSubjectRulesReview — only what a learner is meant to do is allowed — and every write RBAC allows on shared kinds
but the admission policy guards, tried for real with their credential: refused, with the policy's words, and nothing
changed; what is theirs to do still works. The test prints the matrix it checked. The kind test does the same on
kind's API server (tests/kind/test_kind_class.py).
"""

from __future__ import annotations

import itertools

import isolation  # tests/fleet/isolation.py
import pytest

from kailab.classroom import access
from kailab.kube import Kube

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

LEARNERS = ("ann", "bob", "cai")


@pytest.fixture
def a_class_of_three(kai_lab, tmp_path):
    from kailab.scenarios.live import clear_scenarios

    clear_scenarios(kai_lab.kube)
    out = tmp_path / "creds"
    kai_lab.cli("class", "up", *[a for n in LEARNERS for a in ("--learner", n)], "--out", str(out), check=True)
    for learner in LEARNERS:
        for obj in isolation.others_objects(learner):
            kai_lab.kube.apply(obj)
    yield {n: Kube(out / f"{n}.kubeconfig") for n in LEARNERS}
    kai_lab.cli("class", "down")


def test_each_learner_is_refused_everything_outside_their_slice(kai_lab, a_class_of_three, capsys):
    admin = kai_lab.kube
    kinds = isolation.served(admin)
    verbs = isolation.every_verb(kinds)
    names = {k.name for k in kinds}
    assert {"scheduling.run.ai/queues", "kai.scheduler/schedulingshards", "core/pods/binding"} <= names
    lab_namespaces = sorted(
        ns.metadata.name
        for ns in admin.core.list_namespace().items
        if not any(ns.metadata.name in access.lesson_namespaces(n) for n in LEARNERS)
    )
    checked = 0
    for learner, creds in a_class_of_three.items():
        want = isolation.expected(learner)
        own = access.lesson_namespaces(learner)
        seen: dict[str, isolation.Matrix] = {}
        for ns in own:
            found = isolation.rules(creds, ns)
            seen["own namespace"] = isolation.matrix(found, kinds, verbs, namespaced=True)
            assert seen["own namespace"] == want["own namespace"], (learner, ns)
            seen["cluster"] = isolation.matrix(found, kinds, verbs, namespaced=False)
            assert seen["cluster"] == want["cluster"], (learner, ns, seen["cluster"])
            checked += 1
        for other in (n for n in LEARNERS if n != learner):
            for ns in access.lesson_namespaces(other):
                got = isolation.matrix(isolation.rules(creds, ns), kinds, verbs, namespaced=True)
                assert got == want["another learner's namespace"], (learner, other, ns, got)
                seen["another learner's namespace"] = got
                checked += 1
        for ns in lab_namespaces:
            got = isolation.matrix(isolation.rules(creds, ns), kinds, verbs, namespaced=True)
            scope = isolation.lab_scope(ns)
            assert got == want[scope], (learner, ns, got)
            seen.setdefault(scope, got)
            checked += 1
        if learner == LEARNERS[0]:
            with capsys.disabled():
                print(
                    "\n"
                    + isolation.table(
                        f"Learner {learner}'s isolation matrix (allowed verbs; '-' nothing) — the same checked for "
                        f"{', '.join(LEARNERS[1:])}, each against the others",
                        kinds,
                        verbs,
                        {s: seen[s] for s in want},
                    )
                )
    with capsys.disabled():
        print(f"Rules reviewed in {checked} (learner, namespace) scopes: {len(kinds)} kinds × {len(verbs)} verbs each.")


def test_each_learners_writes_on_shared_kinds_stay_in_their_slice(kai_lab, a_class_of_three, capsys):
    admin = kai_lab.kube

    def changeable(obj: dict) -> dict:  # what a learner could change: labels and spec (a class: its value and default)
        keep = ("spec", "value", "globalDefault", "description", "preemptionPolicy")
        return {"labels": obj["metadata"].get("labels"), **{k: obj.get(k) for k in keep}}

    before = {
        (api, kind, name): changeable(admin.get(api, kind, name))
        for learner in LEARNERS
        for api, kind, name in (
            (isolation.QUEUE_API, "Queue", f"{learner}-team"),
            (isolation.PC_API, "PriorityClass", f"{learner}-pc"),
            (isolation.SHARD_API, "SchedulingShard", f"{learner}-shard"),
        )
    }
    said = []
    for a, b in itertools.permutations(LEARNERS, 2):
        for what, (who, call) in isolation.guarded_writes(a, a_class_of_three[a], b).items():
            status, words = isolation.refusal(call)
            assert status == 403, (a, b, what, status, words)
            if who == "policy":  # RBAC allowed it: the admission policy refused it, in its own words
                assert isolation.POLICY in words, (a, b, what, words)
            said.append((a, b, what, who))
    for (api, kind, name), obj in before.items():  # nothing was changed by any attempt
        assert changeable(admin.get(api, kind, name)) == obj, (kind, name)
    for n in LEARNERS:
        assert admin.get(isolation.PC_API, "PriorityClass", f"{n}-everyone") is None
        assert admin.core.list_namespaced_pod(access.lesson_namespaces(n)[0]).items == []
    for learner, creds in a_class_of_three.items():  # and what is theirs to do is allowed
        for what, (do, undo) in isolation.allowed_writes(learner, creds).items():
            assert isolation.refusal(do) == (0, ""), (learner, what)
            undo()
    with capsys.disabled():
        print(
            f"\nWrites refused: {len(said)} ({len(said) // 6} for each of the 6 ordered pairs of {', '.join(LEARNERS)}):"
        )
        for what in dict.fromkeys(w for _, _, w, _ in said):
            who = next(x for _, _, w, x in said if w == what)
            print(f"  403 ({'admission policy' if who == 'policy' else 'RBAC'}): {what}")
