"""The scenario words of issue 13, without a cluster: what they make, and how checks read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kailab.checks import FleetNode, Observation, evaluate, misfit
from kailab.pods import PodGroupView, PodView
from kailab.scenarios.fold import Change, RunState, fold, observe
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import workload_objects
from kailab.scenarios.model import Expectation
from kailab.scenarios.objects import RequiresFile
from kailab.scenarios.values import Bound

SCENARIOS = Path(__file__).parent.parent / "scenarios"


def write(tmp_path: Path, workloads: str, steps: str = "[{apply: w}]") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nworkloads: {workloads}\nsteps: {steps}\n")
    return path


def test_jobs_make_separate_one_pod_jobs(tmp_path):
    s = load_scenario(write(tmp_path, "[{name: w, jobs: 3, gpus: 1}]"))
    objs = workload_objects(s.workload("w"), s)
    assert [o["metadata"]["name"] for o in objs] == ["w-0", "w-1", "w-2"]
    assert {o["spec"]["parallelism"] for o in objs} == {1} and s.workload("w").total_pods == 3


def test_a_fraction_is_an_annotation_not_a_limit(tmp_path):
    s = load_scenario(write(tmp_path, "[{name: w, kind: Pod, gpus: 0.5}]"))
    (pod,) = workload_objects(s.workload("w"), s)
    assert pod["metadata"]["annotations"]["gpu-fraction"] == "0.5"
    assert "limits" not in pod["spec"]["containers"][0]["resources"]


def test_priority_class_name_goes_to_the_spec_only(tmp_path):
    s = load_scenario(write(tmp_path, "[{name: w, priorityClassName: inference}, {name: v, priorityClass: train}]"))
    (only_spec,), (both,) = workload_objects(s.workload("w"), s), workload_objects(s.workload("v"), s)
    assert "priorityClassName" not in only_spec["metadata"]["labels"]
    assert only_spec["spec"]["template"]["spec"]["priorityClassName"] == "inference"
    assert both["metadata"]["labels"]["priorityClassName"] == "train"


def test_subgroups_label_their_pods_and_the_pod_group_can_come_last(tmp_path):
    s = load_scenario(
        write(
            tmp_path,
            "[{name: w, kind: PodGroup, pods: 3, podGroupAfterPods: true, node: kwok-a100-0, "
            "subGroups: [{name: a, pods: 1}, {name: b, pods: 2, minMember: 2}]}]",
        )
    )
    objs = workload_objects(s.workload("w"), s)
    assert [o["kind"] for o in objs] == ["Pod", "Pod", "Pod", "PodGroup"]
    assert [o["metadata"]["labels"]["kai.scheduler/subgroup-name"] for o in objs[:3]] == ["a", "b", "b"]
    assert objs[3]["spec"]["subGroups"] == [{"name": "a"}, {"name": "b", "minMember": 2}]
    assert objs[0]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "kwok-a100-0"}


def exp(measure: str, want: str = "", **kw) -> Expectation:
    bound = Bound.parse(want) if measure in ("pods", "nodes", "allocated", "bound") else None
    return Expectation(title=measure, measure=measure, want=want, bound=bound, **kw)


def pod(name, node="", workload="w", gpus=1.0, deleting=False, subgroup=""):
    return PodView(
        name,
        workload=workload,
        node=node,
        phase="Running" if node else "Pending",
        gpus=gpus,
        deleting=deleting,
        subgroup=subgroup,
    )


def test_counts_of_existing_pods_nodes_and_fractions():
    obs = Observation(
        pods=[pod("a", "n1", gpus=0.5), pod("b", "n1", gpus=0.5), pod("c", "n2", deleting=True), pod("d")]
    )
    assert evaluate(exp("pods", "4"), obs).passed  # a pod being deleted still exists
    assert evaluate(exp("nodes", "2"), obs).passed
    check = evaluate(exp("allocated", "2"), obs)
    assert check.passed and check.observed == "2"
    assert evaluate(exp("allocated", "1", node="n1"), obs).passed  # two halves on n1


def test_placement_distinct_and_one_node():
    spread = Observation(pods=[pod("a", "n1"), pod("b", "n2")])
    packed = Observation(pods=[pod("a", "n1"), pod("b", "n1"), pod("c")])
    assert (
        evaluate(exp("placement", "distinct"), spread).passed
        and not evaluate(exp("placement", "oneNode"), spread).passed
    )
    assert (
        evaluate(exp("placement", "oneNode"), packed).passed
        and not evaluate(exp("placement", "distinct"), packed).passed
    )
    assert not evaluate(exp("placement", "distinct"), Observation()).passed  # nothing bound proves nothing


def test_subgroup_scope():
    obs = Observation(pods=[pod("a", "n1", subgroup="x"), pod("b", subgroup="y")])
    assert evaluate(exp("bound", "1", workload="w", subgroup="x"), obs).passed
    assert evaluate(exp("bound", "0", workload="w", subgroup="y"), obs).passed


def test_pod_group_fields_and_conditions_fold_and_decide():
    state = RunState()
    fold(state, Change("ADDED", pod=PodView("w-0", workload="w", pod_group="pg-w")))
    fold(
        state,
        Change(
            "ADDED",
            group=PodGroupView("pg-w", "", {"spec.preemptibility": "preemptible"}, ("UnschedulableOnNodePool",)),
        ),
    )
    obs = observe(state)
    assert evaluate(exp("pod_group_field", "spec.preemptibility=preemptible", workload="w"), obs).passed
    assert not evaluate(exp("pod_group_field", "spec.preemptibility=non-preemptible", workload="w"), obs).passed
    assert evaluate(exp("scheduling_condition", "UnschedulableOnNodePool", workload="w"), obs).passed
    assert not evaluate(exp("no_scheduling_condition", "UnschedulableOnNodePool", workload="w"), obs).passed
    fold(state, Change("DELETED", group=PodGroupView("pg-w")))
    check = evaluate(exp("no_scheduling_condition", "UnschedulableOnNodePool", workload="w"), observe(state))
    assert not check.passed and check.observed == "no PodGroup yet"


def test_not_reason():
    obs = Observation(reasons={"w": ["Resources were found for 4 pods while 6 are required for gang scheduling"]})
    assert not evaluate(exp("not_reason", "gang", workload="w"), obs).passed
    assert evaluate(exp("not_reason", "over quota", workload="w"), obs).passed


@pytest.mark.parametrize(
    "requires, nodes, words",
    [
        (RequiresFile(gpus=Bound.parse("32")), [8, 8, 8, 4, 4], ""),
        (RequiresFile(gpus=Bound.parse(">=64")), [8, 8, 8, 4, 4], "it needs ≥ 64 GPUs, the fleet has 32"),
        (RequiresFile(homogeneous=True), [8, 8, 8, 4, 4], "the fleet mixes 4, 8 GPUs per node"),
        (RequiresFile(homogeneous=True, cpuOnlyNodes=Bound.parse("1")), [8, 8, 0], ""),
        (RequiresFile(cpuOnlyNodes=Bound.parse(">=1")), [8, 8], "it needs ≥ 1 CPU-only nodes, the fleet has 0"),
        (
            RequiresFile(gpusPerNode=Bound.parse("8")),
            [8, 4],
            "it needs 8 GPUs on every GPU node, the fleet's nodes have 4, 8",
        ),
    ],
)
def test_misfit_says_why_a_fleet_does_not_fit(requires, nodes, words):
    said = misfit(requires, [FleetNode(f"n{i}", g) for i, g in enumerate(nodes)])
    assert said == words if not words else words in said


def test_the_words_scenarios_load():
    for path in sorted(SCENARIOS.rglob("*.yaml")):
        assert load_scenario(path).steps, path


def test_the_engine_does_not_run_a_scenario_the_fleet_cannot_hold(tmp_path):
    from kailab.progress import Progress
    from kailab.scenarios.engine import Engine
    from kailab.scenarios.replay import ReplayCluster

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nrequires: {gpus: '>=64'}\nworkloads: [{name: w}]\nsteps: [{stopScheduler: true}, {apply: w}, "
        "{schedulerConfig: {gpuPlacement: spread}}, {expect: {workload: w, pods: 0}}]\n"
    )
    s = load_scenario(path)
    small = ReplayCluster([], node_gpus=[8, 8])
    verdict = Engine(small, Progress(quiet=True)).run(s)
    assert verdict.outcome == "NOT APPLICABLE" and verdict.ok and not verdict.passed and small.calls == []
    big = ReplayCluster([], node_gpus=[8] * 8)
    verdict = Engine(big, Progress(quiet=True)).run(s)
    assert verdict.outcome == "PASS"
    # ... and the scheduler is left running with the lab's defaults for the next scenario
    assert [c for c in big.calls if c[0] in ("stop", "start", "apply")][-5:] == [
        ("stop", "kai-scheduler"),
        ("apply", "Job/w"),
        ("stop", "kai-scheduler"),
        ("start", "kai-scheduler"),
        ("start", "kai-scheduler"),
    ]


def test_node_words_gates_and_node_pool_go_where_kubernetes_and_kai_read_them(tmp_path):
    s = load_scenario(
        write(
            tmp_path,
            "[{name: w, kind: Pod, node: kwok-a100-0, nodeSelector: {nvidia.com/gpu.product: NVIDIA-B200}, "
            "tolerations: [{key: example.com/gpu, operator: Exists, effect: NoSchedule}], "
            "schedulingGates: [example.com/wait], nodePool: pool-b}, {name: v}, {name: u, tolerations: []}]",
        )
    )
    (pod,) = workload_objects(s.workload("w"), s)
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-B200", "kubernetes.io/hostname": "kwok-a100-0"}
    assert spec["tolerations"] == [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["schedulingGates"] == [{"name": "example.com/wait"}]
    assert pod["metadata"]["labels"]["kai.scheduler/node-pool"] == "pool-b"
    (job,) = workload_objects(s.workload("v"), s)
    plain = job["spec"]["template"]["spec"]
    assert "nodeSelector" not in plain and "schedulingGates" not in plain
    assert plain["tolerations"] == [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
    (none,) = workload_objects(s.workload("u"), s)
    assert none["spec"]["template"]["spec"]["tolerations"] == []


def test_a_priority_class_carries_its_preemption_policy_only_when_given(tmp_path):
    from kailab.scenarios.manifests import priority_class_object

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nmissingPriorityClasses: [trian]\npriorityClasses: [{name: polite, value: 200, preemptionPolicy: Never},"
        " {name: plain, value: 10}]\nworkloads: [{name: w, priorityClass: trian}]\nsteps: [{apply: w}]\n"
    )
    s = load_scenario(path)
    polite, plain = (priority_class_object(pc) for pc in s.priority_classes)
    assert polite["preemptionPolicy"] == "Never" and "preemptionPolicy" not in plain
    (job,) = workload_objects(s.workload("w"), s)
    assert job["spec"]["template"]["spec"]["priorityClassName"] == "trian"  # the typo goes out as written


def test_node_affinity_is_one_required_term_of_every_requirement(tmp_path):
    s = load_scenario(
        write(
            tmp_path,
            "[{name: w, kind: Pod, nodeAffinity: [{key: pool, operator: In, values: [a, b]}, "
            "{key: spare, operator: DoesNotExist}]}]",
        )
    )
    (pod,) = workload_objects(s.workload("w"), s)
    required = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required == {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "pool", "operator": "In", "values": ["a", "b"]},
                    {"key": "spare", "operator": "DoesNotExist"},
                ]
            }
        ]
    }
