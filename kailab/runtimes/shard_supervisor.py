"""The local runtime's stand-in for KAI's operator, for SchedulingShards only: each shard a scheduler process.

Each shard kailab made becomes a ``kai-scheduler`` process, started again whenever the shard's spec changes.

KAI's operator (pkg/operator/controller/schedulingshard_controller.go) reconciles every SchedulingShard into a
scheduler Deployment with a config file and flags made from the shard (pkg/operator/operands/scheduler/
resources_for_shard.go: ``configMapForShard``, ``buildArgsList``). The local runtime runs KAI without its operator,
so this process does the same for the shards labelled as kailab's (``app.kubernetes.io/managed-by: kailab`` and a
learner, :mod:`kailab.shards`): the shard's settings (:class:`~kailab.scheduler_settings.SchedulerSettings`,
read from placementStrategy, minRuntime, queueDepthPerAction, kValue and args) become the config file
(:func:`kailab.runtimes.local_kai.scheduler_config`), ``partitionLabelValue`` the ``--partition-label-value`` flag,
and ``args`` flags after the others — only flags KAI's scheduler defines (read from the pinned module's
cmd/scheduler/app/options/options.go, as buildArgsList skips the rest), and not the process's loopback ports.
It reports as the operator does, in the shard's status: ``Available`` (and ``Ready``) with the generation now in
effect; the scheduler's metrics address (on this machine's loopback) goes in the annotation
``kailab.io/scheduler-metrics``. Every second it reads that scheduler's fair shares there and, when they changed,
publishes them on the shard (``kailab.io/fair-shares``, the samples as Prometheus text): the learner reads them
through the API server with their own credential, which may read their shard and no one else's, from whatever
machine they work on — the scheduler's port is never opened beyond loopback. (KAI's operator runs a shard's
scheduler as a pod, whose metrics the API server's service proxy reaches; the local runtime's are processes on
loopback, and kube-apiserver proxies only to a Pod's own address, never to loopback: Kubernetes v1.35.4
pkg/registry/core/service/storage/storage.go ``isValidAddress``, pkg/apis/core/validation ``ValidateEndpointIP``.)

The lab starts it like its other processes (``kai/pids/``, pid and start time) when a class or a side-by-side run
first needs a partition (``local_partitions.py``); ``kailab down`` stops it first, then the schedulers it started (their pid files are in
the same folder). A deleted shard's scheduler is stopped and its folder removed. A shard pointed at a stopped
partition (``<learner>.stopped``, :func:`kailab.shards.stopped`) gets no process at all: a scheduler of a
partition without nodes would only cost a restart and memory (KAI's operator runs one anyway).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import re
import shutil
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from kubernetes import client

from kailab import fairshare
from kailab.collector import settle
from kailab.errors import KailabError
from kailab.kube import Kube, as_json
from kailab.labels import (
    LEARNER_LABEL,
    MANAGED,
    SHARD_API,
    SHARD_FAIR_SHARES_ANNOTATION,
    SHARD_METRICS_ANNOTATION,
    SHARD_SUPERVISOR,
)
from kailab.outfile import open_own_log, write_own
from kailab.scheduler_settings import SchedulerSettings
from kailab.shards import STOPPED_SUFFIX, shard_scheduler
from kailab.userfile import peek_text
from kailab.watched import Watched

PROCESS_NAME = SHARD_SUPERVISOR
SELECTOR = ",".join([*(f"{k}={v}" for k, v in MANAGED.items()), LEARNER_LABEL])
OWN_FLAGS = frozenset({"listen-address", "plugin-server-port"})  # the process's loopback ports: the supervisor's
RECHECK = 5.0  # seconds between looks at a shard's process (one that exited is started again, as a Deployment would;
# a change of the shard is seen at once, by the watch)
# seconds between readings of a shard's fair shares: KAI divides them once per cycle (the lab's: 250 ms), and a
# lesson's watch polls them every second (kailab/scenarios/live.py)
PUBLISH = 1.0


def scheduler_flags_known() -> frozenset[str] | None:
    """The flags KAI's scheduler defines, read from the pinned module's options.go; None when it cannot be read."""
    from kailab.runtimes.local_kai import module_dir

    try:
        text = (module_dir() / "cmd/scheduler/app/options/options.go").read_text()
    except (OSError, KailabError):
        return None
    return frozenset(re.findall(r'\bfs\.\w+Var\(&s\.\w+, "([a-z0-9-]+)"', text)) or None


def shard_args(spec: dict, known: frozenset[str] | None) -> dict[str, str]:
    """The shard's ``args`` the scheduler gets: flags it defines (all, when ``known`` is None), not its ports."""
    args = spec.get("args") or {}
    return {
        str(k): str(v)
        for k, v in sorted(args.items())
        if k not in OWN_FLAGS and (known is None or k in known) and v is not None
    }


def condition(kind: str, ok: bool, generation: int, message: str) -> dict:
    """One status condition as KAI's operator writes it (metav1.Condition)."""
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": kind if ok else "Not" + kind,
        "message": message[:1000],
        "observedGeneration": generation,
        "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


class Supervisor:
    """Watches kailab's SchedulingShards and keeps one scheduler process per shard running its spec."""

    def __init__(self, home: Path):
        from kailab.runtimes.local import LocalRuntime

        self.rt = LocalRuntime(home)
        self.kube = Kube(self.rt.kubeconfig())
        self.known = scheduler_flags_known()
        self.latest: dict[str, dict | None] = {}
        self.wake: dict[str, threading.Event] = {}
        self.published: dict[str, str] = {}  # shard → the fair shares last published on it
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def workdir(self, name: str) -> Path:
        return self.rt.home / "kai" / "partitions" / name

    def control(self, name: str, spec: dict):
        from kailab.runtimes.local_controls import LocalSchedulerControl

        return LocalSchedulerControl(
            self.rt,
            name=shard_scheduler(name),
            partition=str(spec.get("partitionLabelValue") or ""),
            workdir=self.workdir(name),
            args=shard_args(spec, self.known),
        )

    # -- one shard -------------------------------------------------------------------------------

    def reconcile(self, shard: dict) -> bool:
        """Make the shard's process run its spec (started again when the spec differs from what runs), then report;
        True when it started or stopped the shard's scheduler (its fair shares are new)."""
        name, generation = shard["metadata"]["name"], shard["metadata"].get("generation", 0)
        spec = shard.get("spec") or {}
        control = self.control(name, spec)
        record = self.workdir(name) / "shard.json"
        try:
            ran = json.loads(peek_text(record) or "{}")
        except ValueError:
            ran = {}
        ran = ran if isinstance(ran, dict) else {}
        try:
            if control.partition.endswith(STOPPED_SUFFIX):  # a stopped learner's: no scheduler (nothing to schedule)
                ran_one = control.running()
                control.stop()
                self.report(shard, True, f"no scheduler runs: partition {control.partition!r} is a stopped one")
                self.annotate(shard, "")
                return ran_one
            started = not (control.running() and ran.get("spec") == spec)
            if started:
                settings = SchedulerSettings.from_shard(spec)
                control.stop()
                control.start(settings)
                write_own(record, json.dumps({"spec": spec, "generation": generation}))
            pid = self.rt.kai_processes.pid(control.name)
            self.report(shard, True, f"{control.name} runs it (pid {pid}), partition {control.partition!r}")
            self.annotate(shard, control._record().get("metrics") or "")
            return started
        except Exception as e:  # noqa: BLE001 (said in the shard's status, as the operator says its errors)
            control.stop()
            record.unlink(missing_ok=True)
            self.report(shard, False, getattr(e, "message", None) or f"{type(e).__name__}: {e}")
            return True

    def report(self, shard: dict, ok: bool, message: str) -> None:
        generation = shard["metadata"].get("generation", 0)
        now = {c.get("type"): c for c in (shard.get("status") or {}).get("conditions") or []}
        wanted = [condition(kind, ok, generation, message) for kind in ("Available", "Ready")]
        if all(
            (now.get(c["type"]) or {}).get(k) == c[k]
            for c in wanted
            for k in ("status", "observedGeneration", "message")
        ):
            return
        self.kube.dyn.patch(
            self.kube.resource(SHARD_API, "SchedulingShard").subresources["status"],
            body={"status": {"conditions": wanted}},
            name=shard["metadata"]["name"],
            content_type="application/merge-patch+json",
        )

    def annotate(self, shard: dict, url: str) -> None:
        self._annotations(shard, {SHARD_METRICS_ANNOTATION: url or None})

    def publish(self, shard: dict) -> None:
        """The shard's fair shares, as its scheduler computes them now, on the shard (none while no scheduler runs
        it); patched only when they changed."""
        name, spec = shard["metadata"]["name"], shard.get("spec") or {}
        control = self.control(name, spec)
        stopped = control.partition.endswith(STOPPED_SUFFIX)
        text = "" if stopped else fairshare.samples(control.metrics() or "")  # none while no scheduler runs
        if self.published.get(name) != text:
            self._annotations(shard, {SHARD_FAIR_SHARES_ANNOTATION: text or None})
            self.published[name] = text

    def _annotations(self, shard: dict, wanted: dict[str, str | None]) -> None:
        have = shard["metadata"].get("annotations") or {}
        if all(have.get(k) == v for k, v in wanted.items()):
            return
        self.kube.dyn.patch(
            self.kube.resource(SHARD_API, "SchedulingShard"),
            body={"metadata": {"annotations": wanted}},
            name=shard["metadata"]["name"],
            content_type="application/merge-patch+json",
        )

    def forget(self, name: str) -> None:
        """A deleted shard: its scheduler stopped, its folder removed."""
        self.control(name, {}).stop()
        shutil.rmtree(self.workdir(name), ignore_errors=True)
        self.published.pop(name, None)

    # -- every shard -----------------------------------------------------------------------------

    def changed(self, kind: str, shard: dict) -> None:
        name = shard["metadata"]["name"]
        with self.lock:
            self.latest[name] = None if kind == "DELETED" else shard
            if name not in self.wake:
                self.wake[name] = threading.Event()
                threading.Thread(target=self.work, args=(name,), daemon=True).start()
            self.wake[name].set()

    def work(self, name: str) -> None:
        """One shard's worker: reconciles its latest version on every change, and every RECHECK seconds; publishes
        its fair shares every PUBLISH seconds, and at once when its scheduler started or stopped. A change of the
        shard alone does not read them again: the supervisor's own patch of them is one (they were read twice)."""
        checked = 0.0
        next_publish = 0.0
        while not self.stopping.is_set():
            changed = self.wake[name].wait(max(0.0, next_publish - time.monotonic()))
            self.wake[name].clear()
            with self.lock:
                shard = self.latest.get(name)
                if shard is None:
                    del self.wake[name]
            if shard is None:
                self.forget(name)
                return
            try:
                new_scheduler = False
                if changed or time.monotonic() - checked >= RECHECK:
                    new_scheduler = self.reconcile(shard)
                    checked = time.monotonic()
                if new_scheduler or time.monotonic() >= next_publish:
                    next_publish = time.monotonic() + PUBLISH
                    self.publish(shard)
            except Exception as e:  # noqa: BLE001 (the API server away for a moment: try again)
                print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                next_publish = time.monotonic() + PUBLISH  # in a second, not at once

    def run(self) -> None:
        group, version = SHARD_API.split("/")
        listing = partial(client.CustomObjectsApi(self.kube.api).list_cluster_custom_object, group, version)
        watched = Watched(as_json(partial(listing, "schedulingshards")), label_selector=SELECTOR)
        watched.on_change(self.changed)
        watched.start()
        self.stopping.wait()
        watched.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", required=True, type=Path, help="the lab's folder")
    args = parser.parse_args(argv)
    supervisor = Supervisor(args.home)
    # One supervisor per lab: two would each start a scheduler for every shard, and the second's pid files would
    # hide the first's processes from `kailab down`. The lock is held until this process ends.
    held = open_own_log(supervisor.rt.kai_processes.pids / f"{PROCESS_NAME}.running")
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"Another {PROCESS_NAME} already runs the lab in {args.home}.") from None
    signal.signal(signal.SIGTERM, lambda *_: supervisor.stopping.set())
    print(f"supervising kailab's SchedulingShards ({SELECTOR})", flush=True)
    settle()  # what it has loaded lives as long as it does (kailab/collector.py)
    supervisor.run()


if __name__ == "__main__":
    main()
