"""Runs a scenario against a cluster: prepare, play the steps, decide each expectation.

The cluster comes in as a :class:`~kailab.kube.Kube`; waits are driven by watches
of the scenario's pods and events, with a timeout per step and no fixed sleeps.
"""

from __future__ import annotations

import re
import threading
import time
from datetime import datetime, timezone

from kubernetes.client.exceptions import ApiException

from kailab.checks import (
    Observation,
    PodView,
    Verdict,
    evaluate,
    gpus_by_queue,
    stragglers,
)
from kailab.kube import Kube, Watched, wait_until, watch_events, watch_pods
from kailab.progress import Progress
from kailab.scenarios.manifests import (
    POD_GROUP_ANNOTATION,
    QUEUE_API,
    QUEUE_LABEL,
    SCENARIO_LABEL,
    WORKLOAD_LABEL,
    priority_class_object,
    queue_object,
    workload_objects,
)
from kailab.scenarios.model import Scenario, Step

EVICTION_REASONS = {"Evict", "Evicted", "Preempted", "Preempting", "Killing"}
EVICTION_WORDS = ("preempted", "evict", "reclaim")
VICTIM = re.compile(r"Pod ([\w.-]+)/([\w.-]+) was (?:preempted|evicted|reclaimed)")
WAITING_REASONS = {"Unschedulable", "FailedScheduling", "NotReady", "FailedBinding", "StaleJob", "PodGrouperWarning"}


def failure_text(e: Exception) -> str:
    """One line for an error that ended a scenario: the API's status and reason, or the error's own words."""
    if isinstance(e, ApiException):
        return f"the API server answered {e.status} {e.reason}" + (f": {str(e.body)[:300]}" if e.body else "")
    return f"{type(e).__name__}: {getattr(e, 'message', None) or str(e)}"[:400]


def clear_scenarios(kube: Kube, progress: Progress) -> None:
    """Empty every scenario namespace (workloads, pods, events) so the fleet is free for the next one."""
    namespaces = [ns.metadata.name for ns in kube.core.list_namespace(label_selector=SCENARIO_LABEL).items]
    busy = [n for n in namespaces if kube.core.list_namespaced_pod(n, limit=1).items]
    with progress.step(f"Clearing earlier exercises ({', '.join(busy) or 'none running'})"):
        for name in namespaces:
            kube.empty_namespace(name)


class Engine:
    """Plays scenarios on one cluster; each verdict carries a timeline of GPUs per queue and what was applied."""

    def __init__(self, kube: Kube, progress: Progress):
        self.kube = kube
        self.progress = progress

    # -- setup -----------------------------------------------------------------------------

    def prepare(self, scenario: Scenario, verdict: Verdict) -> None:
        """Empty the fleet of earlier exercises, then apply this scenario's queues and priority classes."""
        clear_scenarios(self.kube, self.progress)
        with self.progress.step(f"Preparing {scenario.name}: {len(scenario.queues)} queues, namespace {scenario.namespace}"):
            for name in scenario.missing_queues:
                self.kube.delete(QUEUE_API, "Queue", name)
            for obj in [*map(priority_class_object, scenario.priority_classes), *map(queue_object, scenario.queues)]:
                self.kube.apply(obj)
                verdict.applied.append(obj)
            self.kube.ensure_namespace(scenario.namespace, {SCENARIO_LABEL: scenario.name})

    # -- run -------------------------------------------------------------------------------

    def run(self, scenario: Scenario) -> Verdict:
        started = time.monotonic()
        verdict = Verdict(scenario=scenario.name, title=scenario.title, verify=verify_command(scenario),
                          namespace=scenario.namespace,
                          started=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        try:
            self.prepare(scenario, verdict)
            run = _Run(self.kube, scenario, verdict)
            try:
                for step in scenario.steps:
                    ok = self._play(run, step, verdict)
                    if not ok:
                        break
            finally:
                run.sample(final=True)
                run.stop()
        except Exception as e:  # an API error ends this scenario, on its verdict; the next one still runs
            verdict.error = failure_text(e)
            self.progress.info(f"[red]✗ {scenario.name} stopped: {verdict.error}[/red]")
        verdict.seconds = time.monotonic() - started
        return verdict

    def _play(self, run: "_Run", step: Step, verdict: Verdict) -> bool:
        s = run.scenario
        if step.action == "apply":
            w = s.workload(step.workload)
            with self.progress.step(f"Apply {w.kind} {w.name}: {w.pods} pods × {w.gpus} GPU, queue {w.queue or '-'}"):
                for obj in workload_objects(w, s):
                    self.kube.apply(obj)
                    verdict.applied.append(obj)
                run.sizes[w.name] = w.pods
                run.mark = time.monotonic()
            return True
        if step.action == "delete":
            w = s.workload(step.workload)
            with self.progress.step(f"Delete {w.kind} {w.name}"):
                for obj in reversed(workload_objects(w, s)):
                    self.kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], s.namespace)
                # Its ReplicaSets and pods go now rather than when the garbage collector gets to
                # them (until then a ReplicaSet would replace the pods deleted below).
                selector = f"{WORKLOAD_LABEL}={w.name}"
                if w.kind == "Deployment":
                    self.kube.apps.delete_collection_namespaced_replica_set(
                        s.namespace, label_selector=selector, propagation_policy="Background")
                self.kube.core.delete_collection_namespaced_pod(s.namespace, label_selector=selector, grace_period_seconds=0)
                run.sizes.pop(w.name, None)
                run.mark = time.monotonic()
            return True
        if step.action == "scale":
            w = s.workload(step.workload)
            with self.progress.step(f"Scale {w.name} to {step.pods} pods"):
                self._scale(run, w, step.pods)
                run.sizes[w.name] = step.pods
                run.mark = time.monotonic()
            return True
        if step.action == "queue":
            with self.progress.step(f"Set queue {step.queue.name}: GPU quota {step.queue.gpu.quota}, limit {step.queue.gpu.limit}"):
                self.kube.apply(queue_object(step.queue))
                verdict.applied.append(queue_object(step.queue))
                run.mark = time.monotonic()
            return True
        return self._expect(run, step, verdict)

    def _scale(self, run: "_Run", w, pods: int) -> None:
        s = run.scenario
        if w.kind in ("Job", "Deployment"):
            self.kube.apply(workload_objects(w, s, pods)[0])
            return
        wanted = {o["metadata"]["name"]: o for o in workload_objects(w, s, pods) if o["kind"] == "Pod"}
        current = {p.name for p in run.observe().pods if p.workload == w.name}
        for name in current - set(wanted):
            self.kube.delete("v1", "Pod", name, s.namespace)
        for name in set(wanted) - current:
            self.kube.apply(wanted[name])

    def _expect(self, run: "_Run", step: Step, verdict: Verdict) -> bool:
        """Wait (watch-driven) until every condition holds, then keep it for ``stable`` seconds.

        A ``wait`` step only gates the run (it shows as a row only when it fails);
        an ``expect`` step adds one row per condition. Either ends the run on failure.
        """
        exps = step.expectations
        label = step.note or "; ".join(f"{e.title} = {e.want}" for e in exps)
        hold = max(e.stable for e in exps)
        broke_at: list[Observation] = []

        def all_hold() -> bool:
            return all(evaluate(e, run.observe()).passed for e in exps)

        def broken() -> bool:
            obs = run.observe()
            if all(evaluate(e, obs).passed for e in exps):
                return False
            broke_at.append(obs)
            return True

        with self.progress.step(f"{'Wait' if step.action == 'wait' else 'Expect'}: {label}") as st:
            reached = wait_until(run.cond, all_hold, step.timeout)
            if reached:
                verdict.timings[label] = round(time.monotonic() - run.mark, 2)
                if hold:
                    wait_until(run.cond, broken, hold)
            ok = reached and not broke_at
            st.note("held" if ok else f"not reached within {step.timeout:.0f}s" if not reached else f"did not hold for {hold:.0f}s")
        obs = broke_at[0] if broke_at else run.observe()
        for e in exps:
            check = evaluate(e, obs)
            if step.action == "wait" and check.passed:
                continue
            if not check.passed:
                check.detail = stragglers(e, obs)
                if step.action == "wait":
                    check.title = f"wait: {check.title}"
                if broke_at:
                    check.observed += f" (changed within {hold:.0f}s)"
            verdict.checks.append(check)
        return ok


class _Run:
    """The live state of one scenario run: watches of its pods and events, and what they imply."""

    def __init__(self, kube: Kube, scenario: Scenario, verdict: Verdict):
        self.scenario = scenario
        self.cond = threading.Condition()
        self.sizes: dict[str, int] = {}
        self.mark = time.monotonic()
        self.seen: dict[str, tuple[str, str]] = {}  # pod name → (workload, queue), including deleted pods
        self.pod_groups: dict[str, str] = {}  # PodGroup name → workload
        self.pods: Watched = watch_pods(kube, scenario.namespace, self.cond)
        self.events: Watched = watch_events(kube, scenario.namespace, self.cond)
        self.start = time.monotonic()
        self.timeline = verdict.timeline
        self.sample()
        self.pods.on_change(lambda *_: self.sample())

    def sample(self, final: bool = False) -> None:
        """Add a timeline point (GPUs per queue) when the allocation changed, and at the end."""
        point = gpus_by_queue(self.observe())
        if final or not self.timeline or self.timeline[-1][1] != point:
            self.timeline.append([round(time.monotonic() - self.start, 2), point])

    def stop(self) -> None:
        self.pods.stop()
        self.events.stop()

    def observe(self) -> Observation:
        obs = Observation(sizes=dict(self.sizes))
        for pod in self.pods.snapshot():
            view = pod_view(pod)
            obs.pods.append(view)
            self.seen[view.name] = (view.workload, view.queue)
            pg = (pod.metadata.annotations or {}).get(POD_GROUP_ANNOTATION)
            if pg:
                self.pod_groups[pg] = view.workload
            if view.bound_at is not None:
                first = obs.first_bound.get(view.workload)
                obs.first_bound[view.workload] = view.bound_at if first is None else min(first, view.bound_at)
            for cond in pod.status.conditions or []:
                if cond.type == "PodScheduled" and cond.status == "False" and cond.message:
                    obs.reasons.setdefault(view.workload, []).append(cond.message)
        for _, _, pod in self.pods.history:
            name = pod.metadata.name
            if name not in self.seen:
                labels = pod.metadata.labels or {}
                self.seen[name] = (labels.get(WORKLOAD_LABEL, ""), labels.get(QUEUE_LABEL, ""))
        for ev in sorted(self.events.snapshot(), key=_event_time):
            self._read_event(ev, obs)
        return obs

    def _read_event(self, ev, obs: Observation) -> None:
        ref = ev.involved_object
        message = ev.message or ""
        victim = evicted_pod(ev)
        if victim:
            workload, queue = self.seen.get(victim, ("", ""))
            obs.evicted.setdefault(workload, set()).add(victim)
            if queue:
                obs.evicted_queue.setdefault(queue, set()).add(victim)
            return
        if ref.kind == "Pod":
            workload = self.seen.get(ref.name, ("", ""))[0]
        elif ref.kind == "PodGroup":
            workload = self.pod_groups.get(ref.name, "")
        else:
            return
        if ev.reason in WAITING_REASONS and workload:
            obs.reasons.setdefault(workload, []).append(message)


def evicted_pod(ev) -> str | None:
    """The pod an eviction or preemption event is about, or None.

    KAI reports it on the victim's PodGroup: "Pod <ns>/<pod> was preempted by ...";
    kube-scheduler on the pod itself (reason Preempted).
    """
    message = ev.message or ""
    m = VICTIM.search(message)
    if m and ev.reason in EVICTION_REASONS:
        return m.group(2)
    ref = ev.involved_object
    if ref.kind == "Pod" and ev.reason in EVICTION_REASONS and any(w in message.lower() for w in EVICTION_WORDS):
        return ref.name
    return None


def pod_view(pod) -> PodView:
    labels = pod.metadata.labels or {}
    gpus = 0
    for c in pod.spec.containers or []:
        limits = (c.resources.limits or {}) if c.resources else {}
        gpus += int(limits.get("nvidia.com/gpu", 0) or 0)
    bound_at, unschedulable = None, False
    for cond in pod.status.conditions or []:
        if cond.type == "PodScheduled":
            if cond.status == "True" and cond.last_transition_time:
                bound_at = cond.last_transition_time.timestamp()
            elif cond.status == "False" and cond.reason == "Unschedulable":
                unschedulable = True
    if pod.spec.node_name and bound_at is None:
        bound_at = pod.metadata.creation_timestamp.timestamp() if pod.metadata.creation_timestamp else time.time()
    return PodView(
        name=pod.metadata.name,
        workload=labels.get(WORKLOAD_LABEL, ""),
        queue=labels.get(QUEUE_LABEL, ""),
        phase=pod.status.phase or "Pending",
        node=pod.spec.node_name or "",
        gpus=gpus,
        deleting=pod.metadata.deletion_timestamp is not None,
        bound_at=bound_at,
        unschedulable=unschedulable,
    )


def _event_time(ev) -> float:
    for t in (ev.last_timestamp, ev.event_time, ev.first_timestamp, ev.metadata.creation_timestamp):
        if isinstance(t, datetime):
            return t.timestamp()
    return 0.0


def verify_command(scenario: Scenario) -> str:
    """The kubectl command a learner runs to check the result by hand."""
    if scenario.verify:
        return scenario.verify
    return (f"kubectl --kubeconfig \"$(kailab kubeconfig)\" get pods -n {scenario.namespace} "
            f"-L {QUEUE_LABEL},{WORKLOAD_LABEL} -o wide")
