"""Evidence: a snapshot of the running lab a learner can hand in.

A snapshot is a folder ``evidence/<UTC timestamp>/`` written completely or not at all
(written under a hidden temporary name, then renamed); an existing one is never
overwritten. It holds the objects kailab applied, queues, PodGroups, pods, events,
nodes, versions, the verdicts of the exercises run since the last capture, a
``report.md`` to read first and a ``timeline.png`` of GPUs per queue. Its text files (``report.md``, ``*.txt``,
``queues.md``) hold what users and clusters wrote without control or escape sequences, as a terminal shows it
(:func:`kailab.termtext.one_line`): a snapshot handed in and read with ``cat`` commands nothing; YAML and JSON
write such characters as escapes.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import yaml
from jinja2 import Environment, PackageLoader

from kailab import labdir, outfile, userfile, versions
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import PODGROUP_API, QUEUE_API, SCENARIO_LABEL
from kailab.pods import EventView, event_view, pod_view
from kailab.render import QUEUE_COLUMNS, num
from kailab.status import nodes_and_gpus, queues
from kailab.termtext import one_line

PENDING = labdir.VERDICTS


class NothingToCapture(Exception):
    """The lab has no exercise deployed and no verdict since the last capture."""


# -- verdicts between captures ----------------------------------------------------------------


PENDING_HINT = "Move it out of the lab folder (kailab wrote no such thing there), then run again."


def record_verdict(home: Path, record: dict) -> None:
    """Remember a verdict (with its timeline and applied objects) until the next capture."""
    labdir.claim(home)
    outfile.append_own(home / PENDING, json.dumps(record), root=home, hint=PENDING_HINT)


def check_recordable(home: Path) -> None:
    """Raise, before a run, when its verdict could not be kept in ``home`` (not kailab's, a file, not writable,
    its verdicts file not a file kailab wrote)."""
    labdir.claim(home)
    pending = home / PENDING
    outfile.check_own(pending, home, PENDING_HINT)
    if not os.access(home, os.W_OK | os.X_OK) or (pending.exists() and not os.access(pending, os.W_OK)):
        raise KailabError(
            f"The lab folder {home} cannot be written, so a verdict could not be kept there.",
            hint="Make it writable, or point KAILAB_HOME at the lab's folder.",
        )


def pending_verdicts(home: Path, skipped: list[str] | None = None) -> list[dict]:
    """The verdicts kept since the last capture, each checked whole. A line that is not one (a damaged file) is left
    out, and said in ``skipped`` ("line N: why")."""
    path = home / PENDING

    def damaged(why: str) -> KailabError:
        return KailabError(f"The verdicts not yet captured ({path}) cannot be read: {why}.", hint=PENDING_HINT)

    text = userfile.read_own(path, damaged)
    out = []
    for n, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(_verdict_record(line))
        except ValueError as e:
            if skipped is not None:
                skipped.append(f"line {n}: {e}")
    return out


def _verdict_record(line: str) -> dict:
    """A line of the verdicts file as the record kailab kept, its fields checked (pydantic); ValueError saying why
    it is not one."""
    from pydantic import TypeAdapter, ValidationError

    from kailab.checks import Verdict

    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    known = {k: v for k, v in record.items() if k in Verdict.__dataclass_fields__}
    try:
        verdict = TypeAdapter(Verdict).validate_python(known)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise ValueError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], (int, float)) and isinstance(p[1], dict)
        for p in verdict.timeline
    ):
        raise ValueError("its timeline is not [[seconds, {queue: GPUs}], …]")
    lesson = record.get("lesson")
    return {**verdict.to_record(), **({"lesson": lesson} if isinstance(lesson, dict) else {})}


# -- what a snapshot holds --------------------------------------------------------------------


def _plain(obj) -> dict:
    """An API object as a plain dict, without managedFields noise."""
    d = obj if isinstance(obj, dict) else obj.to_dict()
    d.get("metadata", {}).pop("managed_fields", None)
    d.get("metadata", {}).pop("managedFields", None)
    return d


def _when(e: EventView) -> str:
    return datetime.fromtimestamp(e.time, UTC).isoformat() if e.time else ""


def gather(
    kube: Kube,
    verdicts: list[dict],
    fair_shares: dict[str, float] | None = None,
    namespaces_of: str = SCENARIO_LABEL,
    slice_of: tuple[str, str] = ("", ""),
) -> dict[str, str]:
    """The files of a snapshot, name → text. Raises NothingToCapture when there is nothing to show.

    ``namespaces_of``: the label selector of the lab's exercise namespaces (on a shared cluster, this lab's only).
    ``slice_of``: (queues, nodes) label selectors of a class learner's slice, whose pods alone they may read.
    """
    namespaces = sorted(
        {ns.metadata.name for ns in kube.core.list_namespace(label_selector=namespaces_of).items}
        | {v["namespace"] for v in verdicts if v.get("namespace")}
    )
    pods = [p for ns in namespaces for p in kube.pods(ns)]
    if not pods and not verdicts:
        raise NothingToCapture("No exercise is deployed and no exercise ran since the last capture.")
    views = [pod_view(p) for p in pods]
    events = sorted((event_view(e) for ns in namespaces for e in kube.events(ns)), key=lambda e: e.time)
    pod_groups = [pg for ns in namespaces for pg in kube.list(PODGROUP_API, "PodGroup", namespace=ns)]
    gang = gangs(views, pod_groups)
    queue_selector, node_selector = slice_of
    seen = views if node_selector else None  # a learner reads their own pods only
    queue_rows = queues(kube, seen, fair_shares, queue_selector)
    node_rows = nodes_and_gpus(kube, seen, node_selector)
    files = {
        "manifests.yaml": yaml.safe_dump_all([o for v in verdicts for o in v.get("applied", [])], sort_keys=False),
        "queues.yaml": yaml.safe_dump_all(
            [_plain(q) for q in kube.list(QUEUE_API, "Queue", label_selector=queue_selector or None)], sort_keys=False
        ),
        "queues.md": _table(
            [*QUEUE_COLUMNS[:-1], "over quota", QUEUE_COLUMNS[-1]],  # the status table's, with what is borrowed
            [
                [
                    q["name"],
                    q["parent"] or "-",
                    q["priority"],
                    num(q["quota"]),
                    num(q["limit"]),
                    num(q["weight"]),
                    num(q.get("fair_share")),
                    num(q["allocated"]),
                    max(0, q["allocated"] - (q["quota"] or 0)) if (q["quota"] or 0) >= 0 else 0,
                    q["pending"],
                ]
                for q in queue_rows
            ],
        ),
        "podgroups.yaml": yaml.safe_dump_all([_plain(pg) for pg in pod_groups], sort_keys=False),
        "pods.yaml": yaml.safe_dump_all([_plain(p) for p in pods], sort_keys=False),
        "pods.txt": _table(
            ["namespace", "pod", "queue", "phase", "node", "GPUs", "scheduler", "gang (PodGroup: owner)"],
            [
                [
                    p.namespace,
                    p.name,
                    p.queue or "-",
                    p.phase,
                    p.node or "-",
                    p.gpus,
                    p.scheduler,
                    gang.get((p.namespace, p.name), "-"),
                ]
                for p in views
            ],
        ),
        "events.txt": _table(
            ["time", "namespace", "object", "reason", "message"],
            [[_when(e), e.namespace, f"{e.kind}/{e.name}", e.reason, e.message] for e in events],
        ),
        "nodes.txt": _table(
            ["node", "pool", "GPUs", "used", "free"],
            [[n["name"], n["pool"], n["gpus"], n["used"], n["free"]] for n in node_rows],
        ),
        "versions.json": json.dumps(versions.as_dict(), indent=2),
        "verdicts.json": json.dumps([{k: v for k, v in r.items() if k != "applied"} for r in verdicts], indent=2),
    }
    files["report.md"] = render_report(
        verdicts, queue_rows, events, bool(verdicts and any(v["timeline"] for v in verdicts))
    )
    return files


def gangs(views: list, pod_groups: list[dict]) -> dict:
    """Each pod (namespace, name) of a PodGroup → "PodGroup: Kind/name": the gang KAI's pod-grouper made of it, and the
    object it walked its owners up to (the PodGroup's owner: a RayCluster, PyTorchJob, JobSet, Job …)."""
    owner = {}
    for pg in pod_groups:
        meta = pg.get("metadata") or {}
        refs = meta.get("ownerReferences") or []
        ref = f"{refs[0].get('kind')}/{refs[0].get('name')}" if refs else "-"
        owner[(meta.get("namespace"), meta.get("name"))] = f"{meta.get('name')}: {ref}"
    return {
        (p.namespace, p.name): owner[(p.namespace, p.pod_group)] for p in views if (p.namespace, p.pod_group) in owner
    }


def _table(header: list[str], rows: list[list]) -> str:
    """A Markdown table (also readable as plain text)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(one_line(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def before_after(verdict: dict) -> list[dict]:
    """GPUs per queue at the start and at the end of an exercise, from its timeline."""
    timeline = verdict.get("timeline") or []
    if not timeline:
        return []
    first, last = timeline[0][1], timeline[-1][1]
    peak: dict[str, int] = {}
    for _, point in timeline:
        for q, g in point.items():
            peak[q] = max(peak.get(q, 0), g)
    return [
        {"queue": q, "before": first.get(q, 0), "peak": peak.get(q, 0), "after": last.get(q, 0)}
        for q in sorted(set(first) | set(last) | set(peak))
    ]


def render_report(verdicts: list[dict], queue_rows: list[dict], events: list[EventView], has_timeline: bool) -> str:
    env = Environment(
        loader=PackageLoader("kailab", "templates"),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda value: one_line(value) if isinstance(value, str) else value,  # text, never a terminal's command
    )
    evictions = [{"time": _when(e), "object": f"{e.kind}/{e.name}", "message": e.message} for e in events if e.victim]
    return env.get_template("report.md.j2").render(
        taken=datetime.now(UTC).isoformat(timespec="seconds"),
        versions=versions.as_dict(),
        verdicts=[{**v, "queues": before_after(v)} for v in verdicts],
        queues=queue_rows,
        evictions=evictions,
        has_timeline=has_timeline,
        n=num,
    )


# What a panel draws of a timeline: a lesson's has far fewer points and queues; a learner's record may hold more.
DRAWN_POINTS = 500
DRAWN_QUEUES = 16


def drawn(timeline: list) -> list:
    """The points of a timeline a panel draws: all of them, or every n-th (and the last) of a longer one."""
    if len(timeline) <= DRAWN_POINTS:
        return timeline
    step = -(-len(timeline) // DRAWN_POINTS)
    return [*timeline[:-1:step], timeline[-1]]


def timeline_png(verdicts: list[dict], path: Path) -> None:
    """One panel per exercise: GPUs allocated per queue over the exercise's time, one line per queue."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [v for v in verdicts if v.get("timeline")]
    fig, axes = plt.subplots(len(shown), 1, figsize=(9, 2.8 * len(shown)), squeeze=False)
    for ax, v in zip(axes[:, 0], shown, strict=True):
        timeline = drawn(v["timeline"])
        queues_seen = sorted({q for _, point in timeline for q in point})[:DRAWN_QUEUES]
        times = [t for t, _ in timeline]
        for q in queues_seen:
            ax.step(times, [point.get(q, 0) for _, point in timeline], where="post", label=one_line(q))
        ax.set_title(  # a title's $ is text; its controls are none (matplotlib would warn of them on stderr)
            f"{one_line(v['title'])} — {'PASS' if v['passed'] else 'FAIL'}", fontsize=10, parse_math=False
        )
        ax.set_ylabel("GPUs allocated")
        ax.set_xlabel("seconds since the exercise started")
        ax.legend(loc="upper left", fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- writing it ---------------------------------------------------------------------------------


def snapshot_dir(root: Path, now: datetime | None = None) -> Path:
    """A new folder name under ``root``: the UTC timestamp, with -2, -3… if that name is taken."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    candidate, n = root / stamp, 1
    while candidate.exists():
        n += 1
        candidate = root / f"{stamp}-{n}"
    return candidate


def write_snapshot(files: dict[str, str], verdicts: list[dict], target: Path) -> Path:
    """Write every file in a new folder (:func:`kailab.outfile.new_folder`): complete or absent, never overwriting."""
    with outfile.new_folder(target, "a snapshot") as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text)
        if any(v.get("timeline") for v in verdicts):
            timeline_png(verdicts, tmp / "timeline.png")
            (tmp / "timeline.json").write_text(
                json.dumps({v["scenario"]: v["timeline"] for v in verdicts if v.get("timeline")}, indent=1)
            )
    return target


def capture(
    kube: Kube,
    home: Path,
    root: Path,
    out: Path | None = None,
    fair_shares: dict[str, float] | None = None,
    namespaces: str = SCENARIO_LABEL,
    slice_of: tuple[str, str] = ("", ""),
) -> Path:
    """Snapshot the lab into ``out`` (or a new timestamped folder under ``root``); clear the pending verdicts.

    ``namespaces``: the label selector of the lab's exercise namespaces; ``slice_of``: see :func:`gather`."""
    skipped: list[str] = []
    verdicts = pending_verdicts(home, skipped)
    files = gather(kube, verdicts, fair_shares, namespaces, slice_of)
    if skipped:
        files["verdicts-unreadable.txt"] = f"Lines of {home / PENDING} that were not verdicts, left out:\n" + "".join(
            f"{line}\n" for line in skipped
        )
    target = write_snapshot(files, verdicts, out or snapshot_dir(root))
    (home / PENDING).unlink(missing_ok=True)
    return target
