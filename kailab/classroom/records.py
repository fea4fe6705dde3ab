"""Lesson records in the cluster: each learner's verdicts, where the instructor's kubeconfig reads them.

One ConfigMap per lesson a learner ran, in that lesson's namespace of theirs (``kailab-record``; a task's or
challenge's is ``kailab-record-<its name>``), labelled with
their owner labels and ``kailab.io/lesson-record``; the verdict is kept whole (JSON) beside the few fields
``class status`` shows. Nobody collects anything by hand: ``class status`` lists them by label.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from kailab.checks import Verdict
from kailab.classroom import plan
from kailab.kube import Kube
from kailab.labels import LEARNER_LABEL, RECORD_LABEL

NAME = "kailab-record"
STUCK_SECONDS = 120  # a pod Pending this long in a learner's lesson is worth the instructor's look
MARKDOWN_SPECIAL = set("\\`*_[]()<>#|~!")  # what makes markup inside a line (a cell never starts one)


def record_object(learner: str, verdict: Verdict, prediction: str = "", kind: str = "lesson") -> dict:
    """The record of a lesson — or of a task or challenge (``kind``), which is named for it: a task runs in its
    lesson's namespace, beside the lesson's record."""
    labels = {**plan.owner(learner).labels, LEARNER_LABEL: learner, RECORD_LABEL: verdict.scenario}
    name = NAME if kind == "lesson" else f"{NAME}-{verdict.scenario}"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": verdict.namespace, "labels": labels},
        "data": {
            "kind": kind,
            "lesson": verdict.scenario,
            "outcome": verdict.outcome,
            "started": verdict.started,
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": f"{verdict.seconds:.1f}",
            "prediction": prediction,
            "verdict": json.dumps(verdict.to_dict()),
        },
    }


def class_status(kube: Kube, learners: list[str], now: datetime | None = None) -> dict:
    """Learners × lessons (outcome, when, prediction) and who is stuck (a pod Pending for minutes, KAI's reason)."""
    now = now or datetime.now(UTC)
    out = {}
    for learner in learners:
        lessons = {}
        for cm in kube.core.list_config_map_for_all_namespaces(
            label_selector=f"{LEARNER_LABEL}={learner},{RECORD_LABEL}"
        ).items:
            d = cm.data or {}
            lessons[d.get("lesson", "?")] = {k: d.get(k, "") for k in ("outcome", "finished", "seconds", "prediction")}
        stuck = []
        for ns in kube.core.list_namespace(label_selector=plan.owner(learner).selector()).items:
            for pod in kube.core.list_namespaced_pod(ns.metadata.name, field_selector="status.phase=Pending").items:
                age = (now - pod.metadata.creation_timestamp).total_seconds()
                if age < STUCK_SECONDS:
                    continue
                cond = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
                stuck.append(
                    {
                        "pod": f"{ns.metadata.name}/{pod.metadata.name}",
                        "pending_seconds": int(age),
                        "reason": (cond.message or cond.reason or "") if cond else "not looked at by a scheduler yet",
                    }
                )
        out[learner] = {"lessons": lessons, "stuck": stuck}
    return out


def markdown(report: dict, lessons: list[str]) -> str:
    """``class status`` as a page to hand round: learners × lessons (outcome and when), predictions, who is stuck.

    Every name and text comes from the cluster and is data: Markdown's special characters are escaped and line
    breaks folded, so a prediction is shown as typed, never read as markup.
    """

    def cell(text: str) -> str:
        return "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in " ".join(str(text).split()))

    learners = sorted(report)
    out = [
        "# Class report",
        "",
        f"{len(learners)} learners, {len(lessons)} lessons.",
        "",
        "| learner | " + " | ".join(map(cell, lessons)) + " |",
        "|---" * (len(lessons) + 1) + "|",
    ]
    for name in learners:
        row = report[name]["lessons"]
        out.append(
            f"| {cell(name)} | "
            + " | ".join(cell(f"{row[n]['outcome']} {row[n]['finished']}") if n in row else "–" for n in lessons)
            + " |"
        )
    others = [(name, n, r) for name in learners for n, r in sorted(report[name]["lessons"].items()) if n not in lessons]
    if others:  # tasks and challenges
        out += ["", "## Tasks and challenges", "", "| learner | task or challenge | outcome |", "|---|---|---|"]
        out += [f"| {cell(name)} | {cell(n)} | {cell(r['outcome'] + ' ' + r['finished'])} |" for name, n, r in others]
    predictions = [
        (name, n, r) for name in learners for n, r in sorted(report[name]["lessons"].items()) if r.get("prediction")
    ]
    if predictions:
        out += [
            "",
            "## Predictions and outcomes",
            "",
            "| learner | lesson | prediction | outcome |",
            "|---|---|---|---|",
        ]
        out += [
            f"| {cell(name)} | {cell(n)} | {cell(r['prediction'])} | {cell(r['outcome'])} |"
            for name, n, r in predictions
        ]
    stuck = [(name, s) for name in learners for s in report[name]["stuck"]]
    out += ["", "## Stuck", ""]
    out += [
        f"- {cell(name)}: {cell(s['pod'])} Pending {s['pending_seconds']} s — {cell(s['reason'])}" for name, s in stuck
    ] or ["Nobody."]
    return "\n".join(out) + "\n"
