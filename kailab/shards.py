"""A partition of the lab's cluster as KAI's own object, a SchedulingShard, and the one control of its scheduler.

KAI v0.17.0 partitions a cluster with SchedulingShards (docs/operator/scheduling-shards.md): each shard names a
partition (``spec.partitionLabelValue``: a class's learner, or a lesson run side by side) and the settings of the
scheduler that serves it
(placementStrategy, args, minRuntime, queueDepthPerAction, kValue — pkg/apis/kai/v1/schedulingshard_types.go).
On kind and existing clusters KAI's operator turns each shard into a scheduler Deployment
(pkg/operator/controller/schedulingshard_controller.go); on the local runtime kailab's supervisor
(``runtimes/shard_supervisor.py``) turns it into a scheduler process. Both report in the shard's status the conditions
KAI's operator writes (pkg/operator/controller/status_reconciler): ``Available`` with the ``observedGeneration``
it has put into effect.

So a partition's scheduler settings live in the cluster, and a learner with only their kubeconfig changes theirs:
:class:`ShardSchedulerControl` patches the shard (:func:`spec_patch`, as the kind runtime patches its lab's own
shard) and waits until it is in effect. KAI has no switch for one
shard's scheduler (the Config's ``scheduler.service.enabled`` stops every shard's), so stopping a learner's
scheduler points their shard at a partition nothing carries, ``<learner>.stopped`` (learner names have no dots, so
no learner's partition is ever that); starting it points the shard back at theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kubernetes import client
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from kailab.api_paths import path_lister
from kailab.errors import KailabError
from kailab.kube import Kube, as_json
from kailab.labels import (
    KAI_NAMESPACE,
    KAI_SCHEDULER_NAME,
    LEARNER_LABEL,
    SHARD_API,
    SHARD_FAIR_SHARES_ANNOTATION,
    SHARD_METRICS_ANNOTATION,
)
from kailab.runtimes.base import SchedulerControl
from kailab.scheduler_settings import SchedulerSettings
from kailab.waiting import Pending, until
from kailab.watched import Watched

KIND = "SchedulingShard"
CRD = "schedulingshards.kai.scheduler"
# A learner's shard points here while their scheduler is stopped: a partition no learner has (names have no dots).
STOPPED_SUFFIX = ".stopped"


def shard_name(learner: str) -> str:
    """The learner's SchedulingShard (cluster-scoped): ``<learner>-shard``, theirs by name like their queues, and
    never the chart's ``default``."""
    return f"{learner}-shard"


def shard_scheduler(shard: str) -> str:
    """What runs a shard: KAI's operator names its Deployment and Service ``<scheduler name>-<shard>``
    (resources_for_shard.go, DeploymentName); the local runtime's supervisor names the process the same (pids/ and
    logs/ of the lab's KAI folder)."""
    return f"{KAI_SCHEDULER_NAME}-{shard}"


def scheduler_name(learner: str) -> str:
    """What runs the learner's shard (:func:`shard_scheduler`)."""
    return shard_scheduler(shard_name(learner))


def stopped(learner: str) -> str:
    """The partition a stopped learner's shard points at."""
    return learner + STOPPED_SUFFIX


def spec_patch(settings: SchedulerSettings, usage: dict | None = None) -> dict:
    """The merge patch of a shard's spec to these settings (a field or arg set to None is removed); ``usage``: its
    usageDBConfig, with the runtime's connection string (kind: kailab/runtimes/kind_usage_db.py).

    ``spec.placementStrategy.{gpu,cpu}`` is what the operator turns into the config file's plugins and actions
    (pkg/apis/kai/v1/schedulingshard_types.go); ``spec.args`` are passed to the scheduler as flags
    (pkg/operator/operands/scheduler/resources_for_shard.go, buildArgsList).
    """
    return settings.shard_patch(usage)


def settings_of(shard: dict) -> SchedulerSettings:
    """The settings a SchedulingShard gives (KAI's defaults for what it leaves out)."""
    return SchedulerSettings.from_shard(shard.get("spec") or {})


def shard_object(learner: str, labels: dict[str, str], settings: SchedulerSettings = SchedulerSettings()) -> dict:
    """The learner's shard with these settings, labelled as the class's (``labels``: their owner labels)."""
    return {
        "apiVersion": SHARD_API,
        "kind": KIND,
        "metadata": {"name": shard_name(learner), "labels": {**labels, LEARNER_LABEL: learner}},
        "spec": {"partitionLabelValue": learner, **settings.shard_spec()},
    }


def serves_shards(kube: Kube) -> bool:
    """True when the cluster serves SchedulingShards (KAI's CRD is installed)."""
    try:
        kube.resource(SHARD_API, KIND)
        return True
    except (ResourceNotFoundError, NotFoundError):
        return False


def in_effect(shard: dict | None) -> bool | Pending:
    """True when what runs the shard reports its current spec in effect: ``Available`` True for the shard's
    generation (KAI's operator's condition, which the supervisor writes too)."""
    if shard is None:
        return Pending("no such shard")
    generation = shard["metadata"].get("generation")
    for c in (shard.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Available":
            if c.get("observedGeneration") != generation:
                return Pending(f"generation {generation} not observed yet (at {c.get('observedGeneration')})")
            return c.get("status") == "True" or Pending(c.get("message") or "not available")
    return Pending("no status yet: is anything running the shard?")


def runs(shard: dict | None, learner: str) -> bool:
    """Whether the learner's scheduler runs: their shard points at their partition, and that is in effect."""
    return (
        bool(shard)
        and ((shard or {}).get("spec") or {}).get("partitionLabelValue") == learner
        and bool(in_effect(shard))
    )


class ShardSchedulerControl(SchedulerControl):
    """A learner's scheduler, through their SchedulingShard: patched with the learner's or the lab's client, then
    waited for until the supervisor (local) or KAI's operator (kind, existing) has put it in effect."""

    def __init__(
        self,
        kube: Kube,
        learner: str,
        timeout: float = 120,
        runs_usage_db: bool = False,
        usage_db: Callable[[SchedulerSettings, str], dict] | None = None,
        deployed: bool = True,
    ):
        self.kube = kube
        # local: the supervisor's schedulers start the lab's Prometheus; kind: ``usage_db`` (settings, partition) →
        # the shard's usageDBConfig, the lab's Prometheus deployed first (the instructor's runtime does it)
        self.runs_usage_db = runs_usage_db or usage_db is not None
        self.usage_db = usage_db
        self.learner = learner
        self.name = shard_name(learner)
        self.timeout = timeout
        self._watched: Watched | None = None  # the shard, while :meth:`watching`
        # False where no Deployment runs the shard (the local runtime's supervisor runs a process): none is asked for
        self.deployed = deployed

    def shard(self) -> dict:
        got = self.kube.get(SHARD_API, KIND, self.name)
        if got is None:
            raise KailabError(
                f"{self.learner}'s SchedulingShard {self.name} does not exist: their partition has no scheduler.",
                hint=f"Ask the instructor to add them again: kailab class up --learner {self.learner}",
            )
        return got

    @property
    def settings(self) -> SchedulerSettings:
        return settings_of(self.shard())

    def running(self) -> bool:
        return runs(self.shard(), self.learner)

    def stop(self) -> None:
        self._patch({"partitionLabelValue": stopped(self.learner)}, "to stop")

    def start(self, settings: SchedulerSettings | None = None) -> None:
        settings = SchedulerSettings.of(settings)
        if self.running() and settings == self.settings:
            return
        usage = self.usage_db(settings, self.learner) if self.usage_db and settings.usage_params is not None else None
        self._patch(
            {"partitionLabelValue": self.learner, **spec_patch(settings, usage)}, f"to run with {settings.describe()}"
        )

    def _patch(self, spec: dict, what: str) -> None:
        self.kube.dyn.patch(
            self.kube.resource(SHARD_API, KIND),
            body={"spec": spec},
            name=self.name,
            content_type="application/merge-patch+json",
        )
        until(
            lambda: in_effect(self.kube.get(SHARD_API, KIND, self.name)),
            self.timeout,
            0.2,
            what=f"{self.learner}'s scheduler {what} (SchedulingShard {self.name})",
            hint=f"See its status: kubectl get schedulingshard {self.name} -o yaml",
        )
        if not self.deployed:
            return
        until(  # KAI's operator reports the shard Available while the old scheduler pod still runs (and schedules)
            self.rolled_out,
            self.timeout,
            0.5,
            what=f"{self.learner}'s scheduler {what} (Deployment {scheduler_name(self.learner)} rolled out)",
            hint=f"See it: kubectl -n {KAI_NAMESPACE} rollout status deployment/{scheduler_name(self.learner)}",
        )

    def rolled_out(self) -> bool | Pending:
        """True when the Deployment KAI's operator runs the shard with has only pods of its newest template, all
        available (as ``kubectl rollout status`` says), or when nothing runs it as a Deployment (the local
        runtime's supervisor, which stops a scheduler before it starts the next)."""
        try:
            d = self.kube.apps.read_namespaced_deployment(scheduler_name(self.learner), KAI_NAMESPACE)
        except client.exceptions.ApiException as e:
            if e.status == 404:
                return True
            raise
        want, s = d.spec.replicas or 0, d.status
        if (s.observed_generation or 0) < (d.metadata.generation or 0):
            return Pending("the operator's change not seen by the Deployment controller yet")
        if (s.updated_replicas or 0) < want or (s.replicas or 0) > (s.updated_replicas or 0):
            return Pending(f"{(s.replicas or 0) - (s.updated_replicas or 0)} old scheduler pod(s) still running")
        return (s.available_replicas or 0) >= want or Pending("the new scheduler pod is not available yet")

    def metrics(self) -> str | None:
        """The scheduler's fair shares, through the API server with this client's credential: on the local runtime
        the samples the shard supervisor publishes on the shard (it reads them on the instructor's loopback, where
        the scheduler's metrics stay: kailab/runtimes/shard_supervisor.py), else the scheduler's metrics through
        the API server's proxy to the operator's Service ``kai-scheduler-<shard>`` (port http-metrics). None when
        there are none yet (a scheduler being started, stopped, or not there). The shard as last seen by the watch
        while :meth:`watching`, else read now."""
        try:
            shard = self._watched.snapshot()[0] if self._watched is not None else self.shard()
        except Exception:
            return None
        annotations = shard["metadata"].get("annotations") or {}
        if SHARD_METRICS_ANNOTATION in annotations:  # the supervisor runs it (local runtime)
            return annotations.get(SHARD_FAIR_SHARES_ANNOTATION) or None
        try:
            return self.kube.core.connect_get_namespaced_service_proxy_with_path(
                f"{scheduler_name(self.learner)}:http-metrics", KAI_NAMESPACE, "metrics", _request_timeout=5
            )
        except Exception:  # a Service not there yet
            return None

    @contextmanager
    def watching(self) -> Iterator[None]:
        """While open, the shard is watched (the API server sends each change of it) and :meth:`metrics` reads it
        there: a lesson reads its fair shares every second, a GET of the shard each time before. A credential that
        may not list the shard (a learner's may get it only) keeps the GET."""
        listing = path_lister(self.kube.api, f"/apis/{SHARD_API}/schedulingshards")
        one = f"metadata.name={self.name}"
        try:
            listing(field_selector=one, limit=1, _preload_content=False).read()
            watched: Watched | None = Watched(as_json(listing), field_selector=one).start()
        except Exception:  # forbidden, or no answer: read as before
            watched = None
        self._watched = watched
        try:
            yield
        finally:
            self._watched = None
            if watched is not None:
                watched.stop()
