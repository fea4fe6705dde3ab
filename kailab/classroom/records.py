"""Lesson records in the cluster: each learner's verdicts, where the instructor's kubeconfig reads them.

One ConfigMap per lesson a learner ran, in that lesson's namespace of theirs (``kailab-record``), labelled with
their owner labels and ``kailab.io/lesson-record``; the verdict is kept whole (JSON) beside the few fields
``class status`` shows. Nobody collects anything by hand: ``class status`` lists them by label.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from kailab.checks import Verdict
from kailab.classroom import plan
from kailab.kube import Kube
from kailab.labels import LEARNER_LABEL, RECORD_LABEL

NAME = "kailab-record"
STUCK_SECONDS = 120  # a pod Pending this long in a learner's lesson is worth the instructor's look


def record_object(learner: str, verdict: Verdict, prediction: str = "") -> dict:
    labels = {**plan.owner(learner).labels, LEARNER_LABEL: learner, RECORD_LABEL: verdict.scenario}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": verdict.namespace, "labels": labels},
            "data": {"lesson": verdict.scenario, "outcome": verdict.outcome, "started": verdict.started,
                     "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "seconds": f"{verdict.seconds:.1f}", "prediction": prediction,
                     "verdict": json.dumps(verdict.to_dict())}}


def class_status(kube: Kube, learners: list[str], now: datetime | None = None) -> dict:
    """Learners × lessons (outcome, when, prediction) and who is stuck (a pod Pending for minutes, KAI's reason)."""
    now = now or datetime.now(timezone.utc)
    out = {}
    for learner in learners:
        lessons = {}
        for cm in kube.core.list_config_map_for_all_namespaces(
                label_selector=f"{LEARNER_LABEL}={learner},{RECORD_LABEL}").items:
            d = cm.data or {}
            lessons[d.get("lesson", "?")] = {k: d.get(k, "") for k in ("outcome", "finished", "seconds", "prediction")}
        stuck = []
        for ns in kube.core.list_namespace(label_selector=plan.owner(learner).selector()).items:
            for pod in kube.core.list_namespaced_pod(ns.metadata.name, field_selector="status.phase=Pending").items:
                age = (now - pod.metadata.creation_timestamp).total_seconds()
                if age < STUCK_SECONDS:
                    continue
                cond = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
                stuck.append({"pod": f"{ns.metadata.name}/{pod.metadata.name}", "pending_seconds": int(age),
                              "reason": (cond.message or cond.reason or "") if cond else "not looked at by a scheduler yet"})
        out[learner] = {"lessons": lessons, "stuck": stuck}
    return out
