"""Plays a scenario on a cluster: prepare, play each step, decide each expectation.

The cluster is anything with :class:`Cluster`'s methods — the live one (``live.py``) or a
recorded change stream (``replay.py``, for the golden tests). The engine alone owns the
run's state: the cluster's changes arrive through :meth:`Changes.next` and are folded
into it (``fold.py``); the checks (``kailab.checks``) decide on what it observes.
No fixed sleeps: a wait ends when a change makes its conditions hold, or at its limit — its timeout, grown with how
busy the lab is; what KAI times is decided by the cluster's clock; what the lab could not tell is UNDECIDED
(``timing.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import singledispatchmethod
from pathlib import Path
from typing import Protocol

from kubernetes.client.exceptions import ApiException

from kailab import ownership, pace
from kailab.checks import (
    BUSY_PREFIX,
    Check,
    FleetNode,
    Verdict,
    evaluate,
    misfit,
    stragglers,
    timed,
    unable,
)
from kailab.errors import KailabError, ScenarioError
from kailab.labels import QUEUE_LABEL, SCENARIO_LABEL, TOPOLOGY_API, WORKLOAD_LABEL
from kailab.progress import Progress
from kailab.queues import queue_ref
from kailab.scenarios import model
from kailab.scenarios.fold import Change
from kailab.scenarios.manifests import (
    NAMESPACE_QUOTA,
    namespace_objects,
    priority_class_object,
    queue_object,
    topology_object,
    workload_objects,
)
from kailab.scenarios.model import Scenario, Step
from kailab.scenarios.objects import OPERATED_KINDS, WorkloadFile
from kailab.scenarios.run import Held, Recorder, Run
from kailab.scheduler_settings import SchedulerSettings
from kailab.waiting import timed_out

CHANGES_FILE = "changes.jsonl"


class Changes(Protocol):
    """The changes of one namespace's pods and events, in the order they happened."""

    def next(self, timeout: float) -> Change | None:
        """The next change, waiting at most ``timeout`` seconds (0: only one already here); None if none came."""

    def note(self, change: Change) -> None:
        """Put a change of the engine's own among the cluster's (a STEP mark), so it is folded, and recorded, in
        order; a recording, which holds it already, ignores it."""

    def close(self) -> None: ...


class Cluster(Protocol):
    """What the engine needs of a cluster. Every call that changes the cluster is here."""

    def clock(self) -> float:
        """Seconds on a monotonic clock; the times of changes are on it."""

    def clear_scenarios(self, namespace: str = "") -> list[str]:
        """Empty every earlier scenario's namespace that has pods, and ``namespace`` (the next one's);
        the names of those that had pods."""

    def ensure_namespace(self, name: str, labels: dict[str, str]) -> None: ...

    def apply(self, obj: dict) -> float | None:
        """Apply the object; the cluster's time of the write (seconds since the epoch), None when unknown."""

    def delete(self, obj: dict) -> float | None:
        """Delete the object ``obj`` names (apiVersion, kind, metadata.name/namespace); gone already is fine.
        The cluster's time of the deletion, None when unknown."""

    def delete_pods(self, namespace: str, workload: str) -> None:
        """Delete a workload's pods (and ReplicaSets) now, not when the garbage collector gets to them."""

    def changes(self, namespace: str, queues: Iterable[str] = (), node_labels: tuple[str, ...] = ()) -> Changes:
        """Changes in the namespace, and of the Queue objects of these names; first, when ``node_labels`` names
        some, each fleet node with those labels."""

    def fleet_nodes(self) -> list[FleetNode] | None:
        """The fleet's nodes (name, GPUs, CPUs, labels); None when unknown (a recording)."""

    def node_names(self) -> list[str] | None:
        """The names of the fleet's nodes; None when unknown (a recording)."""

    def scenario_objects(self) -> list[dict]:
        """Queues and priority classes an earlier scenario of this lab made (by its labels): apiVersion, kind, metadata."""

    def foreign(self, objects: list[dict]) -> list[str]:
        """Of these objects (apiVersion, kind, metadata.name), the ones that exist and are not this lab's: "Kind name"."""

    def abilities(self) -> frozenset[str]:
        """What this cluster lets a scenario do (see model.ABILITIES)."""

    def stop_scheduler(self) -> None:
        """Stop KAI's scheduler; return once it no longer runs."""

    def start_scheduler(self, settings: SchedulerSettings) -> None:
        """Start KAI's scheduler with these settings (unset ones: the lab's defaults); return once it is healthy."""

    def stop_gpu_ledger(self) -> None:
        """Stop what gives KAI's GPU reservation pods their GPU; return once it no longer runs."""

    def start_gpu_ledger(self) -> None:
        """Start it again; return once it is healthy."""

    def ensure_operators(self, objects: list[dict], progress: Progress) -> None:
        """Start the workload operators these objects need (KubeRay for a RayCluster …), each the first time (built
        then, with progress); return once each serves."""

    def pace(self, namespace: str = "default") -> pace.Pace | None:
        """How fast the lab answers now (KAI's cycle, the API server's latency; ``namespace``: one whose pods this
        lab may list); None when it cannot be read."""


class Engine:
    """Plays scenarios on one cluster; each verdict carries a timeline of GPUs per queue and what was applied.

    ``record``: a folder; each scenario's change stream is written to ``record/<scenario>/changes.jsonl``.
    """

    def __init__(self, cluster: Cluster, progress: Progress, record: Path | None = None):
        self.cluster = cluster
        self.progress = progress
        self.record = record
        # Called with the verdict so far each time an expect step is decided (kailab/classroom/records.py publishes
        # it for the pages); nothing by default.
        self.decided: Callable[[Verdict], None] = lambda verdict: None

    def run(self, scenario: Scenario) -> Verdict:
        """Play every step until one fails; an API error ends the scenario with the error on its verdict."""
        verdict = Verdict(
            scenario=scenario.name,
            title=scenario.title,
            verify=verify_command(scenario),
            namespace=scenario.namespace,
            started=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        start = self.cluster.clock()
        if why := self.not_applicable(scenario):
            verdict.not_applicable = why
            self.progress.info(f"– {scenario.name} is not applicable {why}", style="yellow")
            return verdict
        for warning in scenario.warnings:  # what KAI accepts but may surprise: said, never refused
            self.progress.info(f"! {warning}", style="yellow")
        step: Step | None = None
        try:
            self.prepare(scenario, verdict)
            self.say_if_busy(verdict, scenario.namespace)
            run = Run(self.cluster, scenario, verdict, start, self._changes(scenario))
            try:
                for step in scenario.steps:
                    held = self.play(step, run)
                    if isinstance(step, model.Expect):
                        self.decided(verdict)
                    if not held:
                        break
                step = None
            finally:
                run.sample(final=True)
                run.changes.close()
                if any(isinstance(s, (model.StopScheduler, model.StartScheduler)) for s in scenario.steps):
                    # The next scenario starts from the lab's scheduler as it was: running, default settings.
                    with self.progress.step("Restoring KAI's scheduler (running, the lab's defaults)"):
                        self.cluster.start_scheduler(SchedulerSettings())
                if any(isinstance(s, model.GpuLedger) for s in scenario.steps):
                    # …and with reservation pods given their GPU again.
                    with self.progress.step("Restoring what gives GPU reservation pods their GPU (running)"):
                        self.cluster.start_gpu_ledger()
        except Exception as e:  # an API error ends this scenario, on its verdict; the next one still runs
            where = f"{scenario.path}:{step.line}: " if step is not None and step.line else ""  # 0: a hidden step
            if timed_out(e) and (busy := pace.busy_words(self.cluster.pace(scenario.namespace))):
                # The lab's own wait (a scheduler restart, a namespace emptied) ran out while the lab was measurably
                # slow: the scenario could not be played to its end — nothing about KAI was decided.
                row = Check("the lab's own step", "done in time", where + failure_text(e), False, measure="lab")
                verdict.checks.append(row.undecide(f"{BUSY_PREFIX} — {busy}"))
                self.progress.info(f"? {scenario.name} stopped, UNDECIDED: {row.observed}", style="yellow")
            else:
                verdict.error = where + failure_text(e)
                self.progress.info(f"✗ {scenario.name} stopped: {verdict.error}", style="red")
        verdict.seconds = self.cluster.clock() - start
        return verdict

    def say_if_busy(self, verdict: Verdict, namespace: str) -> None:
        """At the start of a lesson: say, and keep on its verdict, when the lab is far slower than quiet."""
        if said := pace.busy_words(self.cluster.pace(namespace)):
            verdict.load = said
            self.progress.info(f"! {said}", style="yellow")

    def not_applicable(self, scenario: Scenario) -> str:
        """Why this cluster cannot run the scenario, where ("on this fleet: …", "on this cluster: …"); "" if it can."""
        nodes = self.cluster.fleet_nodes()
        if nodes is not None and (why := misfit(scenario.requires, nodes)):
            return f"on this fleet: {why}"
        if why := unable(scenario.needs, self.cluster.abilities()):
            return f"on this cluster: {why}"
        return ""

    def refuse_foreign(self, scenarios: list[Scenario]) -> None:
        """Raise, before anything is applied, when a scenario would change or delete a queue or priority class
        of the same name that this lab did not make."""
        claimed = {(o["kind"], o["metadata"]["name"]): o for s in scenarios for o in claims(s)}
        names = self.cluster.foreign(list(claimed.values()))
        if names:
            raise ownership.refused(names, namespace_hint(scenarios, names))

    def refuse_unknown_nodes(self, scenarios: list[Scenario]) -> None:
        """Raise, before anything is applied, when a scenario names a node the fleet does not have (its pods would
        wait forever, its conditions count nothing). A scenario that does not fit this fleet is only not applicable."""
        if not any(s.nodes for s in scenarios):
            return  # none names a node: no need to read the fleet's
        fleet = self.cluster.node_names()
        if fleet is None:
            return
        have = set(fleet)
        for s in scenarios:
            if s.nodes.keys() <= have or self.not_applicable(s):
                continue
            for name, line in s.nodes.items():
                if name not in have:
                    shown = ", ".join(sorted(have)[:6]) + (" …" if len(have) > 6 else "")
                    raise ScenarioError(
                        f"{s.path}:{line}: node '{name}' is not in this lab's fleet (its nodes: {shown or 'none'})",
                        hint="Name one of the fleet's nodes (kailab status lists them), or start the "
                        "lab with a fleet that has it (kailab up --fleet FILE).",
                    )

    def prepare(self, scenario: Scenario, verdict: Verdict) -> None:
        """Refuse another's objects and unknown nodes; empty the fleet of earlier exercises; apply this scenario's
        queues and classes."""
        self.refuse_foreign([scenario])
        self.refuse_unknown_nodes([scenario])
        with self.progress.step("Clearing earlier exercises") as st:
            st.note(", ".join(self.cluster.clear_scenarios(scenario.namespace)) or "none running")
        with self.progress.step(
            f"Preparing {scenario.name}: {len(scenario.queues)} queues, namespace {scenario.namespace}"
        ):
            declared = (
                {("Queue", q.name) for q in scenario.queues}
                | {("PriorityClass", p.name) for p in scenario.priority_classes}
                | {("Topology", t.name) for t in scenario.topologies}
            )
            for obj in self.cluster.scenario_objects():  # an earlier scenario's, which this one does not declare
                if (obj["kind"], obj["metadata"]["name"]) not in declared:
                    self.cluster.delete(obj)
            for name in scenario.missing_queues:
                self.cluster.delete(queue_ref(name))
            for obj in [*map(priority_class_object, scenario.priority_classes), *map(queue_object, scenario.queues)]:
                self.cluster.apply(labelled(obj, scenario))
                verdict.applied.append(obj)
            for obj in map(topology_object, scenario.topologies):
                # KAI's CRD keeps a Topology's levels as they were made (only aliases may change): made anew.
                self.cluster.delete(obj)
                self.cluster.apply(labelled(obj, scenario))
                verdict.applied.append(obj)
            self.cluster.ensure_namespace(scenario.namespace, {SCENARIO_LABEL: scenario.name})
            # A quota an earlier run of the file set is gone unless the file still says it (runbooks' causes). A
            # learner may not touch ResourceQuotas (so none of theirs was ever made): refused is nothing to delete.
            try:
                self.cluster.delete(
                    {
                        "apiVersion": "v1",
                        "kind": "ResourceQuota",
                        "metadata": {"name": NAMESPACE_QUOTA, "namespace": scenario.namespace},
                    }
                )
            except ApiException as e:
                if e.status != 403:
                    raise
            for obj in namespace_objects(scenario):
                self.cluster.apply(obj)
                verdict.applied.append(obj)
        if any(n.startswith(model.OPERATOR_NEED) for n in scenario.needs):
            # before the first step: an operator's first build takes minutes, its start seconds
            objects = [o for w in scenario.workloads for o in workload_objects(w, scenario)]
            self.cluster.ensure_operators(objects, self.progress)

    def _changes(self, scenario: Scenario) -> Changes:
        queues = {q.name for q in scenario.queues} | set(scenario.missing_queues)
        queues |= {s.queue.name for s in scenario.steps if isinstance(s, model.SetQueue)}
        changes = self.cluster.changes(scenario.namespace, queues, scenario.node_label_keys)
        if self.record is None:
            return changes
        return Recorder(changes, self.record / scenario.name / CHANGES_FILE, self.cluster.clock())

    # -- steps, by type ---------------------------------------------------------------------

    @singledispatchmethod
    def play(self, step: Step, run: Run) -> bool:
        """Play one step; False ends the scenario."""
        raise TypeError(f"no player for step {type(step).__name__}")

    @play.register(model.Apply)
    def _(self, step: model.Apply, run: Run) -> bool:
        w = run.scenario.workload(step.workload)
        what = f"{w.jobs} Jobs {w.name}-0…{w.jobs - 1}" if w.jobs else f"{w.kind} {w.name}"
        size = (
            f"{w.total_pods} pods"
            if w.kind in OPERATED_KINDS
            else f"{w.pods} pods × {w.gpus:g} GPU{' each' if w.jobs else ''}"
        )
        with self.progress.step(f"Apply {what}: {size}, queue {w.queue or '-'}"):
            for obj in workload_objects(w, run.scenario):
                run.apply(obj)
            run.resized(w.name, w.total_pods)
        return True

    @play.register(model.Delete)
    def _(self, step: model.Delete, run: Run) -> bool:
        w = run.scenario.workload(step.workload)
        with self.progress.step(f"Delete {w.kind} {w.name}"):
            self._delete_workload(w, run)
        return True

    def _delete_workload(self, w: WorkloadFile, run: Run) -> None:
        for obj in reversed(workload_objects(w, run.scenario)):
            self.cluster.delete(obj)
        self.cluster.delete_pods(run.scenario.namespace, w.name)
        run.resized(w.name, None)

    @play.register(model.DeletePods)
    def _(self, step: model.DeletePods, run: Run) -> bool:
        where = " ".join(filter(None, [step.workload and f"of {step.workload}", step.node and f"on {step.node}"]))
        how_many = "the pods" if step.count is None else f"{step.count} pod{'s' if step.count != 1 else ''}"
        with self.progress.step(f"Delete {how_many} {where}") as st:
            chosen = [
                p
                for p in run.state.pods.values()
                if (step.node is None or p.node == step.node)
                and (step.workload is None or p.workload == step.workload)
                and not p.deleting
            ]
            chosen.sort(key=lambda p: (not p.node, p.name))  # bound pods first, then by name
            names = sorted(p.name for p in chosen[: step.count])
            run.state.removed.update(names)  # deleted by the lab: not evictions
            for name in names:
                run.wrote(
                    self.cluster.delete(
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "metadata": {"name": name, "namespace": run.scenario.namespace},
                        }
                    )
                )
            st.note(", ".join(names) or "none were there")
            run.stepped()
        return True

    @play.register(model.DeleteWorkloads)
    def _(self, step: model.DeleteWorkloads, run: Run) -> bool:
        with self.progress.step(f"Delete the workloads with a pod on {step.node}") as st:
            names = sorted({p.workload for p in run.state.pods.values() if p.node == step.node and p.workload})
            for name in names:
                self._delete_workload(run.scenario.workload(name), run)
            st.note(", ".join(names) or "none were there")
        return True

    @play.register(model.Sleep)
    def _(self, step: model.Sleep, run: Run) -> bool:
        with self.progress.step(f"Sleep {step.seconds:g}s"):
            run.sleep(step.seconds)
        return True

    @play.register(model.StopScheduler)
    def _(self, step: model.StopScheduler, run: Run) -> bool:
        with self.progress.step("Stop KAI's scheduler"):
            self.cluster.stop_scheduler()
            run.stepped()
        return True

    @play.register(model.StartScheduler)
    def _(self, step: model.StartScheduler, run: Run) -> bool:
        said = step.settings.changes()
        with self.progress.step(f"{'Restart' if step.restart else 'Start'} KAI's scheduler ({said})"):
            if step.restart:
                self.cluster.stop_scheduler()
            self.cluster.start_scheduler(step.settings)
            run.stepped()
        return True

    @play.register(model.GpuLedger)
    def _(self, step: model.GpuLedger, run: Run) -> bool:
        with self.progress.step(f"{'Start' if step.running else 'Stop'} what gives GPU reservation pods their GPU"):
            if step.running:
                self.cluster.start_gpu_ledger()
            else:
                self.cluster.stop_gpu_ledger()
            run.stepped()
        return True

    @play.register(model.Scale)
    def _(self, step: model.Scale, run: Run) -> bool:
        s, w = run.scenario, run.scenario.workload(step.workload)
        with self.progress.step(f"Scale {w.name} to {step.pods} pods"):
            objects = workload_objects(w, s, step.pods)
            if w.kind in ("Job", "Deployment", "StatefulSet"):
                run.apply(objects[0])
            else:  # bare pods: delete the extra ones, create the missing ones
                wanted = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
                current = {p.name for p in run.state.pods.values() if p.workload == w.name}
                for name in sorted(current - set(wanted)):
                    self.cluster.delete(
                        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": s.namespace}}
                    )
                for name in sorted(set(wanted) - current):
                    run.apply(wanted[name])
            run.resized(w.name, step.pods)
        return True

    @play.register(model.SetQueue)
    def _(self, step: model.SetQueue, run: Run) -> bool:
        q = step.queue
        with self.progress.step(f"Set queue {q.name}: GPU quota {q.gpu.quota}, limit {q.gpu.limit}"):
            run.apply(labelled(queue_object(q), run.scenario))
            run.stepped()
        return True

    @play.register(model.Wait)
    def _(self, step: model.Wait, run: Run) -> bool:
        """Wait until every condition holds, then keep it for ``stable`` seconds, or through a window of KAI's
        (``throughWindow``) — both by the cluster's clock (_Run.hold).

        A Wait only gates the run (it shows as a row only when it fails); an Expect adds one row per condition.
        Either ends the run unless it held. A row the lab could not decide is UNDECIDED, with why (timing.py).
        """
        exps, rows = step.expectations, isinstance(step, model.Expect)
        label = step.note or "; ".join(f"{e.title} = {e.want}" for e in exps)
        hold = max(e.stable for e in exps)
        windows = [e.window for e in exps if e.window is not None]

        # expectation → (seconds after the last changing step, the cluster's time) it first held
        first_held: dict[int, tuple[float, float | None]] = {}

        decided: list = [None, []]  # the observation last decided on (run.observe keeps it while unchanged), its rows

        def rows_on(obs) -> list[Check]:
            """The expectations decided on ``obs``, kept for the next call on the same one (only read: the verdict's
            rows are decided afresh)."""
            if decided[0] is not obs:
                decided[:] = [obs, [evaluate(e, obs) for e in exps]]
            return decided[1]

        def all_hold(obs) -> bool:
            held = [c.passed for c in rows_on(obs)]
            for i in (i for i, h in enumerate(held) if h):
                first_held.setdefault(i, (run.clock() - run.mark, run.state.seen_at))
            return all(held)

        def seen(obs) -> str:
            return "; ".join(f"{e.title}: {c.observed}" for e in exps if not (c := evaluate(e, obs)).passed)

        held: Held | None = None
        undecided = ""
        with self.progress.step(f"{'Expect' if rows else 'Wait'}: {label}") as st:
            waited = run.until(all_hold, step.timeout, lambda obs: tuple(c.observed for c in rows_on(obs)))
            if waited.reached:
                run.verdict.timings[label] = round(run.clock() - run.mark, 2)
                if windows or hold:
                    held = run.hold(all_hold, hold, windows, step.timeout)
                undecided = held.undecided if held else ""
            elif waited.busy:
                undecided = waited.why(seen(run.observe()))
            broke = held.broke if held else None
            ok = waited.reached and broke is None and not undecided and not (held and held.failed)
            obs = broke or (held.last if held else None) or run.observe()
            if ok:
                st.note("held")
            elif undecided:
                st.fail(f"UNDECIDED: {undecided}")
            else:
                said = seen(obs) or (held.failed if held else "")
                st.fail(
                    (f"not reached within {waited.seconds:.0f}s" if not waited.reached else held.words if held else "")
                    + (f" — seen {said}" if said else "")
                )
        if rows:
            run.measure_predictions(obs)
        for e in exps:
            check = evaluate(e, obs)
            if held is not None and held.failed:  # the window's own failure: every row of the step
                check.passed = False
                check.observed += f" ({held.words})"
            if undecided and (waited.reached or not check.passed):  # what held before a wait ran out is decided
                check.undecide(undecided)
            if not rows and check.passed:
                continue
            if not check.passed:
                where = [f"expectation at {run.scenario.path}:{e.line}"] if e.line else []  # 0: a task's hidden check
                check.detail = [*where, *stragglers(e, obs)]
                if not rows:
                    check.title = f"wait: {check.title}"
                if broke is not None and held is not None:
                    check.observed += f" ({held.words})"
            run.verdict.checks.append(check)
        began = run.step_at()
        for i, e in enumerate(exps):
            when = first_held.get(i)
            by_cluster = when is not None and when[1] is not None and began is not None
            seconds = None if when is None else max(0.0, when[1] - began) if by_cluster else when[0]  # type: ignore[operator]
            for row in timed(e, seconds, by_cluster):
                if not row.passed:
                    row.detail.append(f"expectation at {run.scenario.path}:{e.line}")
                    if undecided and seconds is None:
                        row.undecide(undecided)
                    elif row.measure == "within" and seconds is not None and waited.late(seconds, e.within or 0):
                        row.undecide(waited.why(f"{e.title}: {row.observed}"))  # KAI late, as slow as the host was
                    else:
                        ok = False
                if rows or not row.passed:
                    run.verdict.checks.append(row)
        return ok


def claims(scenario: Scenario) -> list[dict]:
    """The cluster-wide objects a scenario writes or deletes: its queues (declared, set by a step, or that must not
    exist), its priority classes, its topologies and its namespace (kailab empties it) — by apiVersion, kind and name."""
    queues = [q.name for q in scenario.queues] + [s.queue.name for s in scenario.steps if isinstance(s, model.SetQueue)]
    out = [queue_ref(n) for n in dict.fromkeys([*queues, *scenario.missing_queues])]
    return (
        out
        + [
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": p.name}}
            for p in scenario.priority_classes
        ]
        + [{"apiVersion": TOPOLOGY_API, "kind": "Topology", "metadata": {"name": t.name}} for t in scenario.topologies]
        + [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": scenario.namespace}}]
    )


def namespace_hint(scenarios: list[Scenario], refused: list[str]) -> str | None:
    """What to do when a scenario names a namespace that is not this lab's: the name to give instead."""
    taken = {name.removeprefix("Namespace ") for name in refused if name.startswith("Namespace ")}
    for s in scenarios:
        if s.namespace in taken:
            own = f"kailab-{s.name}"
            instead = (
                f"namespace: {own} (or leave namespace: out)"
                if own not in taken
                else "a namespace of its own, or run on a lab with a --prefix of its own"
            )
            return (
                f"Namespace {s.namespace} holds what is not kailab's, and kailab empties a scenario's namespace: "
                f"give {s.path or s.name} {instead}."
            )
    return None


def labelled(obj: dict, scenario: Scenario) -> dict:
    """A queue or priority class as this scenario's, so the next scenario that does not declare it deletes it.
    (Server-side apply drops a label the same manager leaves out, so every apply of it carries the label.)"""
    obj["metadata"]["labels"][SCENARIO_LABEL] = scenario.name
    return obj


def failure_text(e: Exception) -> str:
    """One line for an error that ended a scenario: the API's status and reason, or the error's own schema."""
    if isinstance(e, ApiException):
        from kailab.api_errors import api_error_words

        return f"the API server answered {api_error_words(e)}"
    if isinstance(e, KailabError):  # already says what is wrong, and where
        return e.message[:400]
    return f"{type(e).__name__}: {getattr(e, 'message', None) or str(e)}"[:400]


def verify_command(scenario: Scenario) -> str:
    """The kubectl command a learner runs to check the result by hand."""
    if scenario.verify:
        return scenario.verify
    return (
        f'kubectl --kubeconfig "$(kailab kubeconfig)" get pods -n {scenario.namespace} '
        f"-L {QUEUE_LABEL},{WORKLOAD_LABEL} -o wide"
    )
