"""Every runbook's failure, reproduced on the real KAI: what KAI reports is what the runbook says, and what
`kailab explain` then says of the pods names that runbook.

The scenarios in tests/scenarios/ pin down single behaviours of kailab's manifests on the real KAI.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kailab.paths import RUNBOOKS
from kailab.scenarios.loader import load_scenario

# scenario → the workloads whose pods `kailab explain` must name the scenario's runbook for, read right after the run.
EXPLAINED = {
    "old-queue-label": ("old-label-serve", "old-label-train"),
    "node-pool-unserved": ("unserved",),
    "node-constraints": ("wants-b200", "wants-b200-pool", "no-toleration"),
    "scheduling-gate": ("gated",),
    "too-big": ("sixteen",),
    "misspelt-priority-class": ("typo", "label-typo"),
    "preemption-policy-never": ("filler",),
    "gang-stuck": ("gang",),
    "borrow-blocked": ("service",),
    # the Job's pod made again after KAI evicted its stale gang (the bare pods are gone for good)
    "stale-gang": ("job-gang",),
    # the workers made again after KAI evicted them while the gang's other pods had finished
    "completing-gang": ("workers",),
    "non-preemptible-capped": ("serve", "cpu-serve"),
    "pod-affinity": ("follower", "spread"),
    "unbound-volume": ("with-data",),
    "pods-refused": ("gang",),
    "topology-unmet": ("rack-gang",),
    "queue-annotation": ("annotated-job", "annotated-serve"),
    "pdb-not-honoured": ("borrower",),
    "partition-parent": ("split",),
    "quotas-past-fleet": ("b-train",),
    # the RayCluster's workers (their template has the label), by the RayCluster's own name: KAI's gang of it
    "operator-queue-on-template": ("RayCluster/ray-template-queue",),
    "operator-group-too-big": ("ray-big-group",),
}
# The runbook of a scenario whose runbook has another name than the scenario.
RUNBOOK = {
    "gang-stuck": "gang-not-binding",
    "borrow-blocked": "borrowing-not-happening",
    "completing-gang": "completing-gang-evicted",
}
# Scenarios whose pods KubeRay makes: built first, on the machine's network (conftest.py, kuberay_built)
RAY = ("operator-queue-on-template", "operator-group-too-big")
# Explained while it runs, below: once the scenario has ended its pod is bound.
DURING = "gpu-sharing-reservation"
# Run by their own tests below: one needs a node without its GPU-memory label, one is explained while KAI's
# scheduler is stopped.
OWN_TEST = ("gpu-memory-label", "kai-component-down")

SCENARIOS = sorted(
    p for p in (RUNBOOKS / "scenarios").glob("*.yaml") if p.stem != DURING and p.stem not in OWN_TEST
) + sorted((Path(__file__).parent.parent / "scenarios").glob("*.yaml"))


def failures(result: dict) -> list[str]:
    return [
        f"{c['title']}: expected {c['expected']}, observed {c['observed']}; " + " / ".join(c["detail"])
        for v in result.get("verdicts", [])
        for c in v["checks"]
        if not c["passed"]
    ]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_holds_on_kai(kai_lab, path, request):
    if path.stem in RAY:
        request.getfixturevalue("kuberay_built")
    proc = kai_lab.cli("run", str(path), "--json")
    failed = failures(json.loads(proc.stdout or "{}"))
    assert proc.returncode == 0 and not failed, "\n".join(failed) + proc.stderr[-2000:]
    namespace = load_scenario(path).namespace
    runbook = RUNBOOK.get(path.stem, path.stem)
    for workload in EXPLAINED.get(path.stem, ()):
        found = json.loads(kai_lab.cli("explain", workload, "-n", namespace, "--json", check=True).stdout)
        named = {e["runbook"] for e in found}
        assert f"runbooks/{runbook}.md" in named, (workload, found)
    if path.stem == "quotas-past-fleet":  # `kailab status --queues` warns of it
        status = json.loads(kai_lab.cli("status", "--queues", "--json").stdout)
        assert any("add up to 48, more than the fleet's 32 GPUs" in w for w in status["warnings"]), status["warnings"]


def _explained(kai_lab, name: str, namespace: str) -> list[dict]:
    proc = kai_lab.cli("explain", name, "-n", namespace, "--json")
    return json.loads(proc.stdout) if proc.returncode == 0 else []


def test_a_gpu_memory_request_on_a_node_without_the_memory_label_waits_and_is_explained(kai_lab):
    """The scenario pins a gpu-memory pod to kwok-l40s-1, whose nvidia.com/gpu.memory label the test removes first
    (as on a cluster whose GPU operator does not label memory) and puts back after."""
    from kailab.labels import GPU_MEMORY_LABEL

    path = RUNBOOKS / "scenarios" / "gpu-memory-label.yaml"
    node = kai_lab.kube.core.read_node("kwok-l40s-1")
    memory = node.metadata.labels[GPU_MEMORY_LABEL]
    kai_lab.kube.core.patch_node("kwok-l40s-1", {"metadata": {"labels": {GPU_MEMORY_LABEL: None}}})
    try:
        proc = kai_lab.cli("run", str(path), "--json")
        failed = failures(json.loads(proc.stdout or "{}"))
        assert proc.returncode == 0 and not failed, "\n".join(failed) + proc.stderr[-2000:]
        (waiting,) = _explained(kai_lab, "by-memory-0", load_scenario(path).namespace)  # a bare pod: by its name
        assert waiting["state"] == "Pending" and waiting["runbook"] == "runbooks/gpu-memory-label.md", waiting
    finally:
        kai_lab.kube.core.patch_node("kwok-l40s-1", {"metadata": {"labels": {GPU_MEMORY_LABEL: memory}}})


def test_kais_scheduler_down_is_explained_while_it_is_down(kai_lab):
    """The scenario stops KAI's scheduler and submits a pod: it has a PodGroup and no word from KAI. While it waits,
    `kailab explain` names the runbook; the scenario then starts the scheduler again and the pod runs."""
    path = RUNBOOKS / "scenarios" / "kai-component-down.yaml"
    namespace = load_scenario(path).namespace
    seen: list[dict] = []
    with kai_lab.running("run", str(path), "--json") as run:
        while run.poll() is None and not seen:
            found = _explained(kai_lab, "stuck", namespace)
            if any(e["state"] == "Pending" and e["runbook"] == "runbooks/kai-component-down.md" for e in found):
                seen = found
            time.sleep(1)
        out, err = run.communicate(timeout=300)
    failed = failures(json.loads(out or "{}"))
    assert run.returncode == 0 and not failed, "\n".join(failed) + err[-2000:]
    assert seen, "kailab explain never named the runbook while the scheduler was down"
    assert "is kai-scheduler running?" in seen[0]["summary"], seen


def _restarted(kai_lab, component: str):
    """Stop one of the lab's KAI components and, on leaving, start it again with the same command line."""
    import contextlib

    from kailab.runtimes.processes import ProcessSpec

    @contextlib.contextmanager
    def down():
        group = kai_lab.runtime.kai_processes
        pid = group.pid(component)
        assert pid, f"{component} does not run"
        argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")]
        env = {"KUBECONFIG": str(kai_lab.runtime.kubeconfig())}
        group.stop_one(component, component)
        try:
            yield
        finally:
            group.start(ProcessSpec(component, argv, env))

    return down()


def _job(name: str, namespace: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kai.scheduler/queue": "team-research"}},
        "spec": {
            "template": {
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "restartPolicy": "Never",
                    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "c", "image": "pause", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                }
            }
        },
    }


@pytest.mark.parametrize(
    ("component", "says"),
    [("kai-binder", "is kai-binder running?"), ("kai-podgrouper", "is kai-podgrouper running?")],
)
def test_a_kai_component_down_is_explained(kai_lab, component, says):
    """The binder down: KAI's scheduler chose a node (a BindRequest) and nothing binds. The pod-grouper down: no
    PodGroup, so the scheduler never sees the pod. `kailab explain` names the runbook; started again, the pod runs."""
    kube, namespace = kai_lab.kube, f"down-{component}"
    kai_lab.cli("queues", check=True)
    kube.ensure_namespace(namespace)
    try:
        with _restarted(kai_lab, component):
            kube.apply(_job("w", namespace))
            deadline, found = time.monotonic() + 60, []
            while time.monotonic() < deadline:
                found = _explained(kai_lab, "w", namespace)
                if any(says in e["summary"] for e in found):
                    break
                time.sleep(1)
            assert any(says in e["summary"] and e["runbook"] == "runbooks/kai-component-down.md" for e in found), found
            if component == "kai-binder":
                binds = kube.list("scheduling.run.ai/v1alpha2", "BindRequest", namespace=namespace)
                assert binds and binds[0]["spec"]["selectedNode"], binds
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            p["status"].get("phase") == "Running" for p in kube.pods(namespace)
        ):
            time.sleep(1)
        assert any(p["status"].get("phase") == "Running" for p in kube.pods(namespace)), "it did not run once started"
    finally:
        kube.delete_namespace(namespace)


def test_pods_an_admission_policy_refuses_are_explained(kai_lab):
    """Another admission control than a ResourceQuota (the scenario's): a ValidatingAdmissionPolicy, which the local
    API server runs (KAI's own webhook is not run on the local runtime). The Job gets no pod, and says why."""
    kube, namespace = kai_lab.kube, "refused-by-policy"
    api, name = "admissionregistration.k8s.io/v1", "kailab-test-no-big-pods"
    spec = {
        "ValidatingAdmissionPolicy": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ]
            },
            "validations": [{"expression": "false", "message": "no pods in this namespace"}],
        },
        "ValidatingAdmissionPolicyBinding": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
        },
    }
    kube.ensure_namespace(namespace)
    for kind in spec:  # the policy, then its binding
        kube.apply({"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": spec[kind]})
    try:
        time.sleep(2)  # the API server loads the policy
        kube.apply(_job("refused", namespace))
        deadline, found = time.monotonic() + 30, []
        while time.monotonic() < deadline:
            found = _explained(kai_lab, "refused", namespace)
            if found and found[0]["runbook"]:
                break
            time.sleep(1)
        (job,) = found
        assert job["state"] == "NoPods" and job["runbook"] == "runbooks/pods-refused.md", job
        assert "denied request" in job["reported"] and "no pods in this namespace" in job["reported"], job
    finally:
        kube.delete_namespace(namespace)
        for kind in reversed(spec):
            kube.delete(api, kind, name)


def test_a_reservation_that_gets_no_gpu_is_explained_while_it_waits_and_after(kai_lab):
    """The scenario stops the lab's GPU ledger, so KAI's binder gives up on the fraction's reservation pod; while
    the pod waits (the scenario holds it there 15 s), `kailab explain` names the runbook; the scenario then starts
    the ledger, the pod binds, and explain still tells why it bound late. Nothing of the ledger is left stopped."""
    path = RUNBOOKS / "scenarios" / f"{DURING}.yaml"
    namespace = load_scenario(path).namespace
    seen: list[dict] = []
    with kai_lab.running("run", str(path), "--json") as run:
        while run.poll() is None:
            proc = kai_lab.cli("explain", "half", "-n", namespace, "--json")
            found = json.loads(proc.stdout) if proc.returncode == 0 else []
            if any(e["state"] == "Pending" and "gpu-sharing-reservation" in e["runbook"] for e in found):
                seen = found
                break
            time.sleep(1)
        out, err = run.communicate(timeout=300)
    failed = failures(json.loads(out or "{}"))
    assert run.returncode == 0 and not failed, "\n".join(failed) + err[-2000:]
    assert seen, "kailab explain never named the runbook while the pod waited"
    (waiting,) = seen
    assert "failed waiting for GPU reservation pod to allocate" in waiting["reported"], waiting
    (bound,) = json.loads(kai_lab.cli("explain", "half", "-n", namespace, "--json", check=True).stdout)
    assert bound["state"] == "Bound" and bound["runbook"] == "runbooks/gpu-sharing-reservation.md", bound
    assert kai_lab.runtime.gpu_ledger_control().running()


def test_an_operator_not_running_or_not_installed_is_explained(kai_lab, kuberay_built):
    """KubeRay's CRD served and its operator stopped: a RayCluster gets no pods, and `kailab explain` says whose
    they are to make; a kind whose CRD the lab does not serve (an operator never started here): which operator, and
    the lessons that need it. KubeRay is started again after."""
    from kailab import operators
    from kailab.progress import Progress

    kube, namespace = kai_lab.kube, "operator-missing"
    control = kai_lab.runtime.capabilities().operators
    control.ensure("kuberay", Progress())
    ray = operators.OPERATORS["kuberay"]
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "orphan", "namespace": namespace, "labels": {"kai.scheduler/queue": "team-research"}},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": _job("x", namespace)["spec"]["template"]}},
    }
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = "Always"
    kube.ensure_namespace(namespace)
    try:
        control.group.stop_one(ray.binary, ray.title)
        kube.apply(cluster)
        (found,) = _explained(kai_lab, "orphan", namespace)
        assert found["state"] == "NoPods" and found["runbook"] == "runbooks/operator-not-installed.md", found
        assert "KubeRay makes its pods" in found["summary"], found
        unserved = [
            (op, kind)
            for op in operators.OPERATORS.values()
            for api_version, kind in op.kinds[:1]
            if kube.get(
                "apiextensions.k8s.io/v1", "CustomResourceDefinition", f"{kind.lower()}s.{api_version.split('/')[0]}"
            )
            is None
        ]
        if unserved:  # an operator no test of this lab started: its kind is not served
            op, kind = unserved[0]
            (said,) = _explained(kai_lab, f"{kind}/anything", namespace)
            assert said["state"] == "NotServed" and said["runbook"] == "runbooks/operator-not-installed.md", said
            assert op.title in said["summary"] and f"does not serve {kind}" in said["summary"], said
    finally:
        kube.delete_namespace(namespace)
        control.ensure("kuberay", Progress())
