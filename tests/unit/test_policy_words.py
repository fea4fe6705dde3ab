"""The policy, resource, Queue and timing words (issue 26), without a cluster: what they make, how checks read them.

Each word's bad inputs are in tests/badinput/scenarios/; on the real KAI: tests/fleet/test_policies_on_kai.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kailab.checks import Observation, evaluate, timed
from kailab.errors import ScenarioError
from kailab.pods import PodGroupView, PodView, QueueView, podgroup_view, queue_view
from kailab.scenarios.fold import Change, RunState, fold, observe
from kailab.scenarios.loader import load_queue_file, load_scenario
from kailab.scenarios.manifests import queue_object, workload_objects
from kailab.scenarios.model import Expectation
from kailab.scenarios.prefix import prefixed
from kailab.scenarios.values import Bound

SCENARIOS = Path(__file__).parent.parent / "scenarios"


def scenario(tmp_path: Path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path)


def exp(measure: str, want: str = "", **kw) -> Expectation:
    bound = Bound.parse(want) if measure == "queue_allocated" else None
    return Expectation(title=measure, measure=measure, want=want, bound=bound, **kw)


def test_resources_and_policies_land_where_kai_reads_them(tmp_path):
    s = scenario(
        tmp_path,
        "name: s\nworkloads:\n"
        "  - {name: j, cpu: 500m, cpuLimit: '1', memory: 1Gi, memoryLimit: 2Gi, preemptionDelay: 30s,"
        " stalenessGracePeriod: '-1s'}\n"
        "  - {name: g, kind: PodGroup, pods: 2, minMember: 3, preemptionDelay: 1m, stalenessGracePeriod: 2m,"
        " podGroupAnnotations: {example.com/a: b}}\n"
        "  - {name: joiner, kind: Pod, pods: 1, podGroup: g}\n"
        "steps: [{apply: j}, {apply: g}, {apply: joiner}]\n",
    )
    (job,) = workload_objects(s.workload("j"), s)
    annotations = job["metadata"]["annotations"]
    assert annotations["kai.scheduler/preemption-delay"] == "30s"
    assert annotations["kai.scheduler/staleness-grace-period"] == "-1s"  # negative: never evicted when stale
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert resources["limits"] == {"nvidia.com/gpu": "1", "cpu": "1", "memory": "2Gi"}
    group = next(o for o in workload_objects(s.workload("g"), s) if o["kind"] == "PodGroup")
    assert group["spec"]["preemptionDelay"] == "1m" and group["spec"]["stalenessGracePeriod"] == "2m"
    assert group["metadata"]["annotations"] == {"example.com/a": "b"}
    assert "kai.scheduler/preemption-delay" not in (group["metadata"].get("annotations") or {})
    (joined,) = workload_objects(s.workload("joiner"), s)
    assert joined["metadata"]["annotations"]["pod-group-name"] == "g"
    assert joined["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"] == "true"


def test_a_queue_file_means_what_kai_reads(tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text(
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\n"
        "spec: {resources: {gpu: {quota: 0, limit: 4, overQuotaWeight: 1}}}\n"
    )
    (q,) = load_queue_file(path)
    cpu = queue_object(q)["spec"]["resources"]["cpu"]
    assert cpu == {"quota": 0, "limit": 0, "overQuotaWeight": 0}  # left out: 0 to KAI, so 0 here too
    path.write_text(
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\nspec: {resources: {gpu: {quota: 4}}}\n"
    )
    with pytest.raises(ScenarioError, match="KAI reads an unset limit as 0"):
        load_queue_file(path)


def test_pod_group_reasons_and_annotations_are_read_and_decided():
    group = podgroup_view(
        {
            "metadata": {
                "name": "pg",
                "annotations": {"kai.scheduler/last-eviction-timestamp": "2026-01-01T00:00:00Z"},
            },
            "status": {
                "schedulingConditions": [
                    {
                        "type": "UnschedulableOnNodePool",
                        "reasons": [
                            {
                                "reason": "PreemptionDelayNotElapsed",
                                "message": "Workload is within  its window until 2026-07-12T10:33:43Z",
                            }
                        ],
                    }
                ]
            },
        }
    )
    assert group.reasons == (("PreemptionDelayNotElapsed", "Workload is within its window until 2026-07-12T10:33:43Z"),)
    assert PodGroupView.from_json(group.to_json()) == group  # a recording replays it whole
    obs = Observation(groups={"w": [group]})
    said = evaluate(exp("pod_group_reason", "PreemptionDelayNotElapsed: within its", workload="w"), obs)
    assert said.passed and said.observed.endswith("until <time>")  # the same row on every run
    assert not evaluate(exp("pod_group_reason", "OverLimit", workload="w"), obs).passed
    assert evaluate(exp("pod_group_annotation", "kai.scheduler/last-eviction-timestamp", workload="w"), obs).passed
    missing = evaluate(exp("pod_group_annotation", "kai.scheduler/stale-podgroup-timestamp", workload="w"), obs)
    assert not missing.passed and missing.observed == "on 0 of 1 PodGroups"


def test_queue_objects_fold_and_decide():
    view = queue_view({"metadata": {"name": "q"}, "status": {"allocated": {"nvidia.com/gpu": "1500m"}}})
    assert view == QueueView("q", 1.5) and QueueView.from_json(view.to_json()) == view
    state = fold(RunState(), Change("ADDED", queue=view))
    assert Change.from_json(Change("ADDED", queue=view).to_json()).queue == view
    obs = observe(state)
    assert evaluate(exp("queue_exists", "true", queue="q"), obs).passed
    assert evaluate(exp("queue_allocated", "1.5", queue="q"), obs).passed
    assert not evaluate(exp("queue_allocated", ">=2", queue="q"), obs).passed
    gone = observe(fold(state, Change("DELETED", queue=view)))
    assert evaluate(exp("queue_exists", "false", queue="q"), gone).passed
    assert evaluate(exp("queue_allocated", "0", queue="q"), gone).observed == "no such Queue"


def test_two_workloads_on_one_node():
    def pod(name, workload, node):
        return PodView(name, workload=workload, node=node, phase="Running")

    together = Observation(pods=[pod("a", "w", "n1"), pod("b", "v", "n1"), pod("c", "v", "n2")])
    apart = Observation(pods=[pod("a", "w", "n1"), pod("c", "v", "n2")])
    assert evaluate(exp("on_node_with", "v", workload="w"), together).observed == "both on n1"
    check = evaluate(exp("on_node_with", "v", workload="w"), apart)
    assert not check.passed and check.observed == "no node in common (w on n1; v on n2)"


def test_either_or_holds_when_one_alternative_holds_whole(tmp_path):
    s = scenario(
        tmp_path,
        "name: s\nworkloads: [{name: w, kind: Pod, pods: 2}]\nsteps:\n  - apply: w\n"
        "  - expect:\n      anyOf:\n        - {workload: w, running: 2}\n        - {workload: w, pending: 1, running: 1}\n",
    )
    (claim,) = s.steps[-1].expectations
    assert claim.measure == "any_of" and [len(g) for g in claim.either] == [1, 2]

    def pods(*phases):
        return Observation(pods=[PodView(f"w-{i}", workload="w", phase=p) for i, p in enumerate(phases)])

    assert evaluate(claim, pods("Running", "Running")).passed
    assert evaluate(claim, pods("Pending", "Running")).passed
    neither = evaluate(claim, pods("Pending", "Pending"))
    assert not neither.passed and neither.observed.count("✗") == 2
    assert prefixed(s, "p").steps[-1].expectations[0].either == claim.either  # no queue in it to rename


def test_time_bounds_say_early_late_or_never():
    e = Expectation(title="runs", measure="running", want="1", not_before=17, within=35)
    assert [r.passed for r in timed(e, 20.0)] == [True, True]
    early, _ = timed(e, 3.0)
    assert not early.passed and early.observed == "already after 3.0s"
    _, late = timed(e, 40.0)
    assert not late.passed and late.observed == "only after 40.0s"
    assert [r.observed for r in timed(e, None)] == ["never held", "never held"]


def test_the_policy_words_scenarios_load():
    load_scenario(SCENARIOS / "words-policies.yaml")
    load_scenario(SCENARIOS / "fail" / "words-policies-fail.yaml")
