"""Lesson records in the cluster: each learner's verdicts, where the instructor's kubeconfig reads them.

One ConfigMap per lesson a learner ran, in that lesson's namespace of theirs (``kailab-record``), labelled with
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
from kailab.predictions import tally

NAME = "kailab-record"
STUCK_SECONDS = 120  # a pod Pending this long in a learner's lesson is worth the instructor's look
MARKDOWN_SPECIAL = set("\\`*_[]()<>#|~!")  # what makes markup inside a line (a cell never starts one)


def record_object(learner: str, verdict: Verdict, prediction: str = "", graded: list[dict] | None = None) -> dict:
    """A learner's lesson record: the verdict, their free-text prediction, and their graded predictions
    (kailab/predictions.py's ``Graded.to_dict``: key, ask, given, answer, right)."""
    labels = {**plan.owner(learner).labels, LEARNER_LABEL: learner, RECORD_LABEL: verdict.scenario}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": verdict.namespace, "labels": labels},
        "data": {
            "lesson": verdict.scenario,
            "outcome": verdict.outcome,
            "started": verdict.started,
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": f"{verdict.seconds:.1f}",
            "prediction": prediction,
            "predictions": json.dumps(graded or []),
            "right": tally(graded or []),
            "verdict": json.dumps(verdict.to_dict()),
        },
    }


def class_status(kube: Kube, learners: list[str], now: datetime | None = None) -> dict:
    """Learners × lessons (outcome, when, predictions: free text and graded, right or wrong) and who is stuck (a pod
    Pending for minutes, KAI's reason)."""
    now = now or datetime.now(UTC)
    out = {}
    for learner in learners:
        lessons = {}
        for cm in kube.core.list_config_map_for_all_namespaces(
            label_selector=f"{LEARNER_LABEL}={learner},{RECORD_LABEL}"
        ).items:
            d = cm.data or {}
            lessons[d.get("lesson", "?")] = {
                **{k: d.get(k, "") for k in ("outcome", "finished", "seconds", "prediction", "right")},
                "predictions": _graded(d.get("predictions")),
            }
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


def _graded(text: str | None) -> list[dict]:
    """A record's graded predictions; [] for a record without them (or not kailab's JSON)."""
    try:
        graded = json.loads(text or "[]")
    except ValueError:
        return []
    return [g for g in graded if isinstance(g, dict)] if isinstance(graded, list) else []


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
    graded = [
        (name, n, g)
        for name in learners
        for n, r in sorted(report[name]["lessons"].items())
        for g in r.get("predictions") or []
    ]
    if graded:
        out += [
            "",
            "## Graded predictions",
            "",
            "| learner | lesson | question | said | KAI did | mark |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {cell(name)} | {cell(n)} | {cell(str(g.get('key', '')))} | {cell(str(g.get('given') or '–'))} "
            f"| {cell(str(g.get('answer') or 'not measured'))} | {cell(str(g.get('mark', '')))} |"
            for name, n, g in graded
        ]
    stuck = [(name, s) for name in learners for s in report[name]["stuck"]]
    out += ["", "## Stuck", ""]
    out += [
        f"- {cell(name)}: {cell(s['pod'])} Pending {s['pending_seconds']} s — {cell(s['reason'])}" for name, s in stuck
    ] or ["Nobody."]
    return "\n".join(out) + "\n"
