"""The ledger's loop: watches nodes and pods, feeds a Topology, writes annotations, shared-GPU ConfigMaps and the ledger."""

from __future__ import annotations

import logging
import queue
import random
import threading
import time

from kailab.labels import KAI_SCHEDULER_NAME, RESERVE_ANNOTATION, SHARED_GPU_CONFIGMAP_ANNOTATION
from kailab.runtimes.gpu_ledger.admission import SharedGpuPrep, shared_gpu_prep
from kailab.runtimes.gpu_ledger.facts import PodFacts, facts_of, node_shape
from kailab.runtimes.gpu_ledger.store import dump_holders, read_ledger, write_ledger
from kailab.runtimes.gpu_ledger.topology import Annotate, Topology

log = logging.getLogger("kailab.gpu_ledger")


class Driver:
    """Watches nodes and pods (as the API's JSON), keeps a Topology, writes annotations and the ledger; one thread owns
    the Topology, fed each node's changes and each pod's facts when they changed."""

    WRITE_EVERY = 2.0  # seconds: a burst of pod changes makes one ledger write, not one per change. Nothing waits on
    # the ledger's ConfigMap (a reservation pod's GPU id is annotated at once, and the ConfigMap is written on exit),
    # and each write costs the API server, etcd and every ConfigMap watcher (KAI's binder) too: at 0.5 s a side-by-side
    # run wrote it ~160 times, at 2 s ~60

    def __init__(self, kube, scheduler: str = KAI_SCHEDULER_NAME, seed: int | None = None):
        self.kube = kube
        self.scheduler = scheduler
        self.topology = Topology()
        self.events: queue.SimpleQueue = queue.SimpleQueue()  # C's: a pod's every change passes through it
        self.rand = random.Random(seed)
        self.synced = threading.Event()
        self.stopping = threading.Event()
        self.written = -1
        self.stored: dict[str, str] | None = None  # the ledger's data as this process last wrote it
        self.last_write = 0.0
        self.watches: list = []
        self.prepared: dict[str, str] = {}  # uid → shared-GPU ConfigMap prefix, of fractional pods made ready
        self.queued: dict[str, PodFacts] = {}  # pod key → its facts last queued (the pod watch's thread's own)

    # health: synced, and no watch failing for long
    def healthy(self) -> tuple[bool, str]:
        if not self.synced.is_set():
            return False, "starting: nodes and pods not listed yet"
        for w in self.watches:
            try:
                w.check()
            except Exception as e:  # noqa: BLE001 - reported, not raised
                return False, str(e)
        return True, "ok"

    def start(self) -> None:
        from kailab.kube import as_json
        from kailab.lean_lines import lean_watch, without_managed_fields
        from kailab.watched import Watched

        self.topology.restore(read_ledger(self.kube))
        nodes = Watched(as_json(self.kube.core.list_node))
        nodes.on_change(lambda kind, obj: self.events.put(("node", kind, obj)))
        pods = Watched(as_json(lean_watch(self.kube.core.list_pod_for_all_namespaces, without_managed_fields)))
        pods.on_change(self._pod_changed)
        self.watches = [nodes.start(), pods.start()]  # each lists first: every node and pod is queued
        self.events.put(("synced",))

    def _pod_changed(self, kind: str, obj: dict) -> None:
        """The pod watch's listener (run by the process's watch reader, kailab/watch_reader.py): the pod's facts queued,
        unless they are the ones it last queued for that pod. Most changes of a pod are its status's, which move no
        fact; the Topology would not move either (a change whose facts are the pod's own already changes nothing, and
        every change that frees GPU ids has already assigned the waiting pods what it could), so neither thread spends
        more on it."""
        facts = facts_of(obj)
        if kind == "DELETED":
            self.queued.pop(facts.key, None)
        elif self.queued.get(facts.key) == facts:
            return
        else:
            self.queued[facts.key] = facts
        self.events.put(("pod", kind, facts))

    def run(self) -> None:
        while not self.stopping.is_set():
            due = self.last_write + self.WRITE_EVERY - time.monotonic()
            dirty = self.synced.is_set() and self.topology.version != self.written
            try:
                event = self.events.get(timeout=max(0.01, due) if dirty else 0.5)
            except queue.Empty:
                event = None
            if event is not None:
                self.handle(event)
            if (
                self.synced.is_set()
                and self.topology.version != self.written
                and self.events.empty()
                and time.monotonic() - self.last_write >= self.WRITE_EVERY
            ):
                self.write()

    def handle(self, event: tuple) -> None:
        what = event[0]
        actions: list[Annotate] = []
        if what == "node":
            _, kind, obj = event
            if kind == "DELETED":
                actions = self.topology.drop_node(obj["metadata"]["name"])
            else:
                actions = self.topology.set_node(obj["metadata"]["name"], node_shape(obj))
        elif what == "pod":
            _, kind, facts = event
            if kind == "DELETED":
                actions = self.topology.remove(facts.key)
                self.prepared.pop(facts.uid, None)
            else:
                actions = self.topology.update(facts)
                if facts.uid not in self.prepared:
                    prep = shared_gpu_prep(facts, self.scheduler, self.rand)
                    if prep is not None:
                        self.prepare(prep)
        elif what == "synced":
            actions = self.topology.synced()
            self.synced.set()
            log.info("synced: %d nodes, %d pods", len(self.topology.nodes), len(self.topology.pods))
        elif what == "retry":
            action = event[1]
            if isinstance(action, SharedGpuPrep):
                if action.uid not in self.prepared and any(f.uid == action.uid for f in self.topology.pods.values()):
                    self.prepare(action)
            elif self.topology.wants(action):
                actions = [action]
        for action in actions:
            self.annotate(action)

    def annotate(self, a: Annotate) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.kube.core.patch_namespaced_pod(a.name, a.namespace, {"metadata": {"annotations": {a.key: a.value}}})
            log.info("annotated %s/%s %s=%s", a.namespace, a.name, a.key, a.value)
        except ApiException as e:
            if e.status == 404:
                return  # the pod is gone
            self._retry(a, f"{e.status} {e.reason}")
        except Exception as e:  # noqa: BLE001 - the API server may be restarting; try again
            self._retry(a, f"{type(e).__name__}: {e}")

    def prepare(self, p: SharedGpuPrep) -> None:
        """The pod's shared-GPU ConfigMaps (an existing one is fine), then its annotation."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        owner = client.V1OwnerReference(api_version="v1", kind="Pod", name=p.name, uid=p.uid)
        try:
            for name in p.configmaps:
                body = client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name=name, namespace=p.namespace, owner_references=[owner]), data={}
                )
                try:
                    self.kube.core.create_namespaced_config_map(p.namespace, body)
                except ApiException as e:
                    if e.status != 409:
                        raise
            if p.annotate:
                self.kube.core.patch_namespaced_pod(
                    p.name, p.namespace, {"metadata": {"annotations": {SHARED_GPU_CONFIGMAP_ANNOTATION: p.prefix}}}
                )
            self.prepared[p.uid] = p.prefix
            log.info(
                "prepared fractional pod %s/%s: %s=%s, ConfigMaps %s",
                p.namespace,
                p.name,
                SHARED_GPU_CONFIGMAP_ANNOTATION,
                p.prefix,
                ", ".join(p.configmaps),
            )
        except ApiException as e:
            if e.status == 404:
                return  # the pod or its namespace is gone
            self._retry(p, f"{e.status} {e.reason}")
        except Exception as e:  # noqa: BLE001 - the API server may be restarting; try again
            self._retry(p, f"{type(e).__name__}: {e}")

    def _retry(self, a: Annotate | SharedGpuPrep, why: str) -> None:
        log.warning("could not prepare or annotate %s/%s (%s); trying again in 1s", a.namespace, a.name, why)
        if isinstance(a, Annotate) and a.key == RESERVE_ANNOTATION:
            self.topology.forget_asked(f"{a.namespace}/{a.name}")
        timer = threading.Timer(1.0, lambda: self.events.put(("retry", a)))
        timer.daemon = True
        timer.start()

    def write(self) -> None:
        """The ledger written where it changed: a change of the topology that leaves every node's holders as they were
        (a pod without GPUs came or went) writes nothing."""
        version = self.topology.version
        self.last_write = time.monotonic()
        data = dump_holders(self.topology.holders(), self.topology.nodes)
        try:
            write_ledger(self.kube, data, self.stored)
            self.stored = data
            self.written = version
        except Exception as e:  # noqa: BLE001 - written again on the next round, whole
            self.stored = None
            log.warning("could not write the ledger: %s", str(e)[:300])
