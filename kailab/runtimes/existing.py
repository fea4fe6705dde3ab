"""The existing runtime: run the lessons on a cluster kailab did not make — and touch nothing else on it.

``kailab up --runtime existing [--kubeconfig PATH] [--context NAME] [--prefix NAME] [--kwok]`` reads the
cluster first (``existing_facts.read_facts`` → ``kailab.preflight`` findings) and adopts it only when nothing blocks:
it writes ``lab.json`` (the kubeconfig's path as given — never a copy —, the context, the prefix and a lab
id) and nothing on the cluster, unless ``--kwok`` asks for KWOK and kailab's fleet (:func:`kwok_plan`).
Every object the lab makes carries ``kailab.io/lab-id: <id>`` beside ``managed-by: kailab``; ``down``
deletes by those labels only and leaves the cluster running.

KAI's scheduler here is not kailab's: scenarios that stop, start or reconfigure it are "not applicable on
this cluster". Fair shares are read through the API server's service proxy when KAI's chart made the
scheduler's metrics Service.
"""

from __future__ import annotations

import os
import secrets
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kailab import labdir, versions
from kailab.errors import KailabError
from kailab.fleet import Fleet, create_fleet, node_objects
from kailab.gpus import node_gpus
from kailab.kube import Kube
from kailab.labels import (
    FLEET_LABEL,
    KWOK_CONTROLLER,
    QUEUE_API,
    TOPOLOGY_API,
)
from kailab.labstate import LabState
from kailab.ownership import Owner, foreign, stamped
from kailab.paths import MANIFESTS
from kailab.preflight import OK, Finding, blocking, findings
from kailab.progress import Progress
from kailab.runtimes.base import Capabilities, ComponentHealth, LabInfo, Runtime, Traits, UpOptions
from kailab.runtimes.existing_facts import exists, find_scheduler, read_facts, scheduler_metrics, sharing
from kailab.runtimes.existing_operators import ExistingOperators, operator_findings
from kailab.runtimes.kind_plan import KWOK_RELEASE
from kailab.waiting import until

OWN_ENTRIES = ("lab.json",)
STAGES = MANIFESTS / "kwok-stages.yaml"
FLEET = "fleet"  # a KwokStep source: kailab's fleet (kailab.fleet), not a manifest


@dataclass(frozen=True)
class KwokStep:
    """One step of ``--kwok``: what it says, where its objects come from (a URL, a file, or the fleet), what it waits for."""

    title: str
    source: str
    wait_controller: bool = False  # then wait until KWOK's controller is Available


def kwok_plan(fleet: Fleet) -> list[KwokStep]:
    """Everything ``--kwok`` applies, in order: KWOK's release manifest at the pinned version, kailab's stages
    (no instant pod-complete), then kailab's fleet — every object labelled as this lab's."""
    return [
        KwokStep(f"Installing KWOK {versions.KWOK_VERSION} (its release manifest)", f"{KWOK_RELEASE}/kwok.yaml"),
        KwokStep("Applying kailab's KWOK stages (no instant pod-complete)", str(STAGES), wait_controller=True),
        KwokStep(
            f"Creating the fleet: {fleet.node_count} KWOK nodes, {fleet.total_gpus} GPUs — {fleet.describe()}", FLEET
        ),
    ]


def manifest_objects(text: str, owner: Owner) -> list[dict]:
    """A manifest's objects, each labelled as the owner's. Namespaces are left out: a release that names one
    (kube-system) must not make kailab its owner, nor its ``down`` delete it."""
    docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind")]
    return [stamped(d, owner) for d in docs if d["kind"] != "Namespace"]


def ref(obj: dict) -> dict:
    """What ``lab.json`` keeps of an applied object, so ``down`` can find it: apiVersion, kind, name, namespace."""
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "namespace": meta.get("namespace"),
    }


def download(url: str) -> str:
    """A release manifest's text; a clear error when this machine cannot reach it."""
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.read().decode()
    except OSError as e:
        raise KailabError(
            f"Cannot download {url}: {e}.", hint="--kwok needs this machine to reach github.com (or leave out --kwok)."
        ) from e


def default_kubeconfig() -> Path:
    """The kubeconfig kubectl would use: ``$KUBECONFIG`` (one file) or ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG", "")
    if os.pathsep in env:
        raise KailabError(
            "KUBECONFIG names several files; kailab adopts a cluster from one.",
            hint="Name it: kailab up --runtime existing --kubeconfig PATH [--context NAME]",
        )
    return Path(env or "~/.kube/config").expanduser()


def connect(path: Path, context: str | None) -> Kube:
    """A client for the kubeconfig's context; a clear error when the file or the context is not there."""
    if not path.exists():
        raise KailabError(
            f"The kubeconfig {path} does not exist.",
            hint="Name the cluster's kubeconfig: kailab up --runtime existing --kubeconfig PATH",
        )
    try:
        kube = Kube(path, context=context)
    except config.ConfigException as e:
        try:
            names = ", ".join(c["name"] for c in config.list_kube_config_contexts(config_file=str(path))[0])
        except Exception:
            names = "none readable"
        raise KailabError(
            f"Cannot use the kubeconfig {path}{f' with context {context}' if context else ''}: {e}.",
            hint=f"Its contexts: {names}. Choose one with --context NAME.",
        ) from e
    if why := kube.probe():  # one bounded try: a server that never answers is said in seconds
        raise KailabError(
            f"Cannot use the kubeconfig {path}{f' with context {context}' if context else ''}: {why}.",
            hint="Check it with: kubectl --kubeconfig PATH get nodes",
        )
    return kube


def _established(kube: Kube, crd: str) -> bool:
    conds = client.ApiextensionsV1Api(kube.api).read_custom_resource_definition(crd).status.conditions or []
    return any(c.type == "Established" and c.status == "True" for c in conds)


def _available(kube: Kube, namespace: str, name: str) -> bool:
    d = exists(lambda: kube.apps.read_namespaced_deployment(name, namespace))
    return bool(d is not None and d.status and (d.status.available_replicas or 0) >= 1)


def leaves_first(queues: list[dict]) -> list[str]:
    """Queue names ordered so that each comes before its parent (a parent is deleted after its children)."""
    parent = {q["metadata"]["name"]: (q.get("spec") or {}).get("parentQueue") for q in queues}

    def depth(name: str | None) -> int:
        seen, d = {name}, 0
        while (name := parent.get(name)) in parent and name not in seen:
            seen.add(name)
            d += 1
        return d

    return sorted(parent, key=lambda n: (-depth(n), n))


class ExistingRuntime(Runtime):
    """A cluster kailab did not make, adopted through its kubeconfig; kailab's objects on it carry this lab's id."""

    traits = Traits(
        "existing",
        takes=frozenset({"kubeconfig", "context", "kwok", "prefix"}),
        preference=90,
        own_entries=OWN_ENTRIES,
        makes_cluster=False,
        after_failed_up="always keeps lab.json after a failed up, so kailab down removes what it applied",
    )

    def __init__(self, home: Path | None = None, fetch: Callable[[str], str] = download, state: LabState | None = None):
        super().__init__(home, state)
        self.fetch = fetch

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, "adopts the cluster you name (never chosen by --runtime auto)"

    @classmethod
    def check_options(cls, options: UpOptions) -> None:
        if options.fleet_given and not options.kwok:
            raise KailabError(
                "--fleet and --pool shape kailab's fake fleet, which an adopted cluster has only with --kwok.",
                hint="Add --kwok, or leave them out to use the cluster's own nodes.",
            )

    def kubeconfig(self) -> Path:
        state = self._state()
        return Path(state.kubeconfig) if state else default_kubeconfig()

    def kube(self) -> Kube:
        state = self._state()
        if state is None:
            raise KailabError(
                "No cluster is adopted.", hint="Adopt one: kailab up --runtime existing --kubeconfig PATH"
            )
        return connect(Path(state.kubeconfig), state.context or None)

    def _target(self, options: UpOptions) -> tuple[Path, str | None]:
        """The kubeconfig (absolute, as given) and context to adopt: the options', else the adopted lab's."""
        state = self._state()
        path = (
            Path(options.kubeconfig).expanduser().absolute()
            if options.kubeconfig
            else Path(state.kubeconfig)
            if state
            else default_kubeconfig().absolute()
        )
        return path, options.context if options.context is not None else (state.context or None) if state else None

    def _owner(self) -> Owner:
        state = self._state()
        return Owner(state.lab_id if state and state.lab_id else secrets.token_hex(4))

    def preflight(self, options: UpOptions) -> list[Finding]:
        path, context = self._target(options)
        kube = connect(path, context)
        rows = findings(read_facts(kube, self._owner(), options.fleet if options.kwok else None))
        return rows + operator_findings(kube) if rows and rows[0].status == OK else rows

    def up(self, options: UpOptions, progress: Progress) -> LabInfo:
        state = self._state()
        if state is not None:
            self._refuse_changes(state, options)
        path, context = self._target(options)
        kube, owner = connect(path, context), self._owner()
        with progress.step("Checking the cluster before adopting it"):
            facts = read_facts(kube, owner, options.fleet if options.kwok else None)
            if problems := blocking(findings(facts)):
                raise KailabError(
                    f"kailab did not adopt the cluster: {'; '.join(f'{p.check}: {p.found}' for p in problems)}.",
                    hint=problems[0].todo,
                )
        labdir.claim(self.home)
        kwok = options.kwok or bool(state and state.shape)
        new = LabState(
            self.traits.name,
            str(path),
            options.fleet.source if kwok else "",
            versions=versions.as_dict(),
            shape=options.fleet.describe() if kwok else "",
            context=context or "",
            prefix=options.prefix if options.prefix is not None else state.prefix if state else "",
            lab_id=owner.lab_id,
            kwok_objects=list(state.kwok_objects) if state else [],
        )
        new.write(self.home)  # first: a `down` after an interrupted --kwok finds what was applied
        if options.kwok:
            self._install_kwok(kube, owner, new, options.fleet, progress)
        new.total_gpus = int(
            sum(node_gpus(n.status.allocatable if n.status else None) for n in kube.core.list_node().items)
        )
        new.write(self.home)
        return self.info() or LabInfo(self.traits.name, path)

    def _refuse_changes(self, state: LabState, options: UpOptions) -> None:
        """A second ``up`` may not point the adopted lab elsewhere: that is a new lab (``down`` first)."""
        kubeconfig = str(Path(options.kubeconfig).expanduser().absolute()) if options.kubeconfig else None
        given = {
            "--kubeconfig": (kubeconfig, state.kubeconfig),
            "--context": (options.context, state.context),
            "--prefix": (options.prefix, state.prefix),
        }
        differ = [
            f"{flag} {new} (the lab has {old or 'none'})"
            for flag, (new, old) in given.items()
            if new is not None and new != old
        ]
        if differ:
            raise KailabError(
                f"This lab already adopted {state.kubeconfig}; kailab up does not change it: {'; '.join(differ)}.",
                hint="Remove it first (kailab down leaves the cluster running), then adopt again.",
            )

    def _install_kwok(self, kube: Kube, owner: Owner, state: LabState, fleet: Fleet, progress: Progress) -> None:
        """Apply the --kwok plan; every object applied is recorded in lab.json at once, for ``down``."""
        for step in kwok_plan(fleet):
            with progress.step(step.title):
                if step.source == FLEET:
                    self._create_fleet(kube, owner, fleet)
                    continue
                text = self.fetch(step.source) if step.source.startswith("https://") else Path(step.source).read_text()
                objects = manifest_objects(text, owner)
                taken = foreign(
                    {f"{o['kind']} {o['metadata']['name']}": self._labels_of(kube, o) for o in objects}, owner
                )
                if taken:
                    raise KailabError(
                        f"KWOK's objects already exist on this cluster and are not this lab's: "
                        f"{', '.join(taken[:5])}. kailab leaves them as they are; nothing more was applied.",
                        hint="Leave out --kwok, or ask whoever installed KWOK here.",
                    )
                crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
                for obj in crds:  # first, and served, before anything that may be of their kinds
                    self._apply(kube, obj, state)
                if crds:
                    # _wait asks before the loop moves on: the lambda sees this step's crds
                    self._wait(kube, "its CRDs", lambda: all(_established(kube, c["metadata"]["name"]) for c in crds))  # noqa: B023
                    kube.dyn.resources.invalidate_cache()
                for obj in objects:
                    if obj["kind"] != "CustomResourceDefinition":
                        self._apply(kube, obj, state)
                if step.wait_controller:
                    self._wait(kube, "KWOK's controller", lambda: _available(kube, *KWOK_CONTROLLER))

    def _apply(self, kube: Kube, obj: dict, state: LabState) -> None:
        """Apply one object and record it in lab.json at once (so ``down`` finds it even after a failure)."""
        if ref(obj) not in state.kwok_objects:
            state.kwok_objects.append(ref(obj))
            state.write(self.home)
        kube.apply(obj)

    @staticmethod
    def _labels_of(kube: Kube, obj: dict) -> dict[str, str] | None:
        try:
            got = kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
        except Exception:  # a kind the cluster does not serve yet (a CRD of this manifest): not there
            return None
        return None if got is None else (got["metadata"].get("labels") or {})

    @staticmethod
    def _wait(kube: Kube, what: str, ready: Callable[[], bool], timeout: float = 180) -> None:
        until(
            ready,
            timeout,
            1,
            fail=lambda _: KailabError(
                f"KWOK: {what} not ready after {timeout:.0f}s.",
                hint=f"Look at KWOK: kubectl -n {KWOK_CONTROLLER[0]} get pods,events",
            ),
        )

    @staticmethod
    def _create_fleet(kube: Kube, owner: Owner, fleet: Fleet) -> None:
        """The fleet's nodes (kailab.fleet), then this lab's id on each — also when the wait for them fails."""
        try:
            create_fleet(
                kube,
                fleet,
                timeout=180,
                logs_hint=f"Look at KWOK: kubectl -n {KWOK_CONTROLLER[0]} logs deployment/{KWOK_CONTROLLER[1]}",
            )
        finally:
            for node in node_objects(fleet):
                name = node["metadata"]["name"]
                if exists(partial(kube.core.read_node, name)) is not None:
                    kube.core.patch_node(name, {"metadata": {"labels": owner.labels}})

    def down(self, progress: Progress) -> None:
        labdir.refuse_unless_ours(self.home)
        state = self._state()
        if state is None:
            progress.info("No adopted cluster to let go of.")
            return super().forget(progress)
        if not state.lab_id:
            progress.info(
                "The lab's state has no lab id, so kailab cannot tell its objects from others' "
                "and deletes none on the cluster.",
                style="yellow",
            )
        else:
            try:
                kube = self.kube()
                answers = kube.ping()
            except KailabError:
                answers = False
            if answers:
                self._remove_owned(kube, Owner(state.lab_id), state, progress)
            else:
                progress.info(
                    f"The cluster does not answer; what this lab made there is left. Find it later "
                    f"with: kubectl get namespaces,queues,priorityclasses,nodes -l kailab.io/lab-id={state.lab_id}",
                    style="yellow",
                )
        labdir.report_left(self.home, labdir.remove(self.home, list(OWN_ENTRIES)), progress)
        progress.info("The cluster itself was left running, with everything kailab did not make.")

    def _remove_owned(self, kube: Kube, owner: Owner, state: LabState, progress: Progress) -> None:
        """Delete this lab's namespaces (their pods with them), queues, priority classes, fleet nodes and KWOK objects —
        selected by its labels, nothing else. A failure keeps lab.json, so ``down`` can be run again."""
        if not owner.lab_id:  # without an id the selector would be the cluster's own lab's: never
            raise KailabError("This lab has no id, so kailab cannot tell its objects from others' and deletes none.")
        failed: list[str] = []
        selector = owner.selector()
        kinds = [  # what, how to list this lab's (by its labels), how to delete one
            (
                "namespaces",
                lambda: [n.metadata.name for n in kube.core.list_namespace(label_selector=selector).items],
                lambda n: kube.delete_namespace(n, timeout=120),
            ),
            (
                "queues",
                lambda: leaves_first(kube.list(QUEUE_API, "Queue", label_selector=selector)),
                lambda n: kube.delete(QUEUE_API, "Queue", n),
            ),
            (
                "priority classes",
                lambda: [
                    p["metadata"]["name"]
                    for p in kube.list("scheduling.k8s.io/v1", "PriorityClass", label_selector=selector)
                ],
                lambda n: kube.delete("scheduling.k8s.io/v1", "PriorityClass", n),
            ),
            (
                "topologies",
                lambda: [t["metadata"]["name"] for t in kube.list(TOPOLOGY_API, "Topology", label_selector=selector)],
                lambda n: kube.delete(TOPOLOGY_API, "Topology", n),
            ),
            (
                "fleet nodes",
                lambda: [
                    n.metadata.name for n in kube.core.list_node(label_selector=owner.selector(FLEET_LABEL)).items
                ],
                lambda n: kube.delete("v1", "Node", n),
            ),
        ]
        for what, listed, delete in kinds:
            with progress.step(f"Removing this lab's {what}") as st:
                try:
                    names = listed()
                except ApiException as e:  # said, and down can be run again
                    failed.append(f"{what} (could not list them: {e.status} {e.reason})")
                    continue
                for name in names:
                    try:
                        delete(name)
                    except Exception as e:
                        failed.append(f"{what} {name} ({getattr(e, 'message', None) or str(e)[:120]})")
                st.note(", ".join(names) or "none")
        if state.kwok_objects:
            with progress.step(f"Removing KWOK, which this lab installed ({len(state.kwok_objects)} objects)"):
                for r in reversed(state.kwok_objects):
                    got = self._labels_of(
                        kube,
                        {
                            "apiVersion": r["apiVersion"],
                            "kind": r["kind"],
                            "metadata": {"name": r["name"], "namespace": r.get("namespace")},
                        },
                    )
                    if got is not None and owner.owns(got):  # still this lab's: deleted; anything else: left
                        kube.delete(r["apiVersion"], r["kind"], r["name"], r.get("namespace"))
        if failed:
            raise KailabError(
                f"Could not remove: {'; '.join(failed)}.", hint="Run kailab down again; the lab's state is kept."
            )

    def info(self) -> LabInfo | None:
        state = self._state()
        if state is None:
            return None
        try:
            kube = self.kube()
            answers = kube.ping()
        except KailabError:
            kube, answers = None, False
        where = state.kubeconfig + (f" --context {state.context}" if state.context else "")
        comps = [ComponentHealth("kube-apiserver", answers, f"{'answers' if answers else 'does not answer'} ({where})")]
        scheduler = None
        if kube is not None and answers:
            try:
                scheduler = find_scheduler(kube)
            except ApiException:
                pass
        if scheduler is not None:
            comps.append(
                ComponentHealth(
                    f"{scheduler.namespace}/{scheduler.name}",
                    scheduler.ready >= scheduler.wanted > 0,
                    f"{scheduler.ready}/{scheduler.wanted} ready, {scheduler.image}",
                )
            )
        summary = (
            f"Adopted the cluster of {where} as lab {state.lab_id}"
            + (f", prefix {state.prefix}" if state.prefix else "")
            + f": {state.total_gpus} GPUs. kailab changes only "
            f"objects labelled kailab.io/lab-id={state.lab_id}. kubectl --kubeconfig {where} get nodes"
        )
        return LabInfo(self.traits.name, Path(state.kubeconfig), comps, summary=summary)

    def capabilities(self) -> Capabilities:
        """KAI's scheduler here is not kailab's to stop or reconfigure: no scheduler control, no GPU ledger; its
        metrics when KAI's chart made the scheduler's Service, GPU sharing as KAI's Config says, partitions through
        KAI's operator, and the workload operators the cluster has (used as found, never installed). Read from the
        cluster once (nothing of it when the cluster does not answer)."""
        from kailab.runtimes.operator_partitions import OperatorPartitions

        try:
            kube = self.kube() if self._state() is not None else None
        except Exception:  # said where the cluster is needed: here it has no metrics and no sharing
            kube = None
        return Capabilities(
            metrics=None if kube is None else scheduler_metrics(kube),
            partitions=OperatorPartitions(self),
            gpu_sharing=False if kube is None else sharing(kube),
            operators=None if kube is None else ExistingOperators(kube),
        )
