"""``kailab class evidence``: the class's status as a page to hand round, in Markdown or HTML.

Learners × lessons (outcome and when), their tasks and challenges, predictions against outcomes, who is stuck,
and each learner's GPU timelines — drawn by ``kailab evidence``'s one renderer (:func:`kailab.evidence.timeline_png`), from the timeline
the engine keeps on each verdict. Both pages are made from one list of sections (:func:`sections`).

Every name and text comes from the cluster and is data: in Markdown its special characters are escaped and its
line breaks folded; in HTML it is escaped as HTML. A note that says ``<script>``, ``[x](y)``, ``{{x}}`` or
``[bold]`` is shown as typed, never read as markup or a template.
"""

from __future__ import annotations

import base64
import html
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kailab import outfile
from kailab.checks import UNDECIDED
from kailab.classroom.records import RUNNING, stuck_line, unreadable_line
from kailab.termtext import one_line, plain

MARKDOWN_SPECIAL = set("\\`*_[]()<>#|~!{}&")  # what makes markup inside a line (& an entity); a cell starts none


@dataclass
class Section:
    """A heading and what is under it: a table (header, rows), lines, or a learner's timeline picture."""

    heading: str
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    none: str = ""  # said when there are no lines
    picture: tuple[str, bytes] | None = None  # (whose, PNG)


def when(row: dict) -> str:
    """A lesson's cell: its outcome and when it finished (a running one: since when)."""
    if row.get("outcome") == RUNNING:
        return f"{RUNNING} since {row.get('started', '')}"
    return f"{row.get('outcome', '')} {row.get('finished', '')}".strip()


def clock(when_: str) -> str:
    """A time kailab wrote (ISO 8601) as its clock time, HH:MM:SS; "" for none."""
    return when_[11:19] if len(when_) >= 19 else when_


def attempt_word(a: dict) -> str:
    """One attempt in a word and its time: ``FAIL 10:01:02``; one cut short (it never had a verdict) says so."""
    if a.get("outcome") == RUNNING:
        return f"cut short {clock(a.get('started') or '')}".strip()
    return f"{a.get('outcome', '')} {clock(a.get('finished') or a.get('started') or '')}".strip()


def attempts_words(row: dict) -> str:
    """Every attempt at a lesson, oldest first, the latest last: ``FAIL 10:01:02 → PASS 10:05:40``; "" for a lesson
    tried once."""
    earlier = row.get("attempts") or []
    if not earlier:
        return ""
    latest = when(row) if row.get("outcome") == RUNNING else attempt_word(row)
    return " → ".join([*map(attempt_word, earlier), latest])


def learner_totals(report: dict, lessons: list[str]) -> dict[str, dict]:
    """learner → their lessons counted: passed, failed, running, other (UNDECIDED, not applicable), not yet (of
    ``lessons``), and how many attempts they made in all (every run of every lesson, tasks aside)."""
    out = {}
    for name, row in report.items():
        theirs = {n: r for n, r in row["lessons"].items() if n in lessons}
        outcomes = [r.get("outcome") for r in theirs.values()]
        out[name] = {
            "passed": outcomes.count("PASS"),
            "failed": outcomes.count("FAIL"),
            "running": outcomes.count(RUNNING),
            "other": len(outcomes) - sum(outcomes.count(k) for k in ("PASS", "FAIL", RUNNING)),
            "not_yet": len(lessons) - len(theirs),
            "attempts": sum(1 + len(r.get("attempts") or []) for r in theirs.values()),
        }
    return out


def lesson_summary(report: dict, lessons: list[str]) -> list[dict]:
    """The class per lesson, for each lesson at least one learner started: how many of the class passed, failed, run
    it now or could not run it here, and per graded prediction how many were right of those graded, and the wrong
    answers the class gave most, with what KAI did (``3 predicted 24 for prod-gpus, KAI gave 16``). Its ``line`` says
    it in words (plain text: a caller escapes it for its page)."""
    out = []
    for lesson in [*lessons, *sorted({n for r in report.values() for n in r["lessons"]} - set(lessons))]:
        rows = [r["lessons"][lesson] for r in report.values() if lesson in r["lessons"]]
        if not rows:
            continue
        outcomes = [r.get("outcome") for r in rows]
        keys: dict[str, dict] = {}
        for g in (g for r in rows for g in r.get("predictions") or []):
            if g.get("right") is None:
                continue
            k = keys.setdefault(str(g.get("key", "")), {"key": str(g.get("key", "")), "right": 0, "graded": 0})
            k["graded"] += 1
            k["right"] += bool(g["right"])
            if not g["right"]:
                wrong = k.setdefault("wrong", {})
                said = (str(g.get("given") or "–"), str(g.get("answer") or "not measured"))
                wrong[said] = wrong.get(said, 0) + 1
        predictions = []
        for k in keys.values():
            ranked = sorted((k.pop("wrong", {})).items(), key=lambda item: (-item[1], item[0]))
            predictions.append({**k, "wrong": [{"given": g, "answer": a, "count": n} for (g, a), n in ranked]})
        summary = {
            "lesson": lesson,
            "learners": len(report),
            "passed": outcomes.count("PASS"),
            "failed": outcomes.count("FAIL"),
            "running": outcomes.count(RUNNING),
            "not_applicable": outcomes.count("NOT APPLICABLE"),
            "undecided": outcomes.count(UNDECIDED),
            "not_yet": len(report) - len(rows),
            "retried": sum(1 for r in rows if r.get("attempts")),
            "predictions": predictions,
        }
        summary["line"] = _summary_line(summary)
        out.append(summary)
    return out


def _summary_line(s: dict) -> str:
    more = [f"{s[k]} {word}" for k, word in (("running", "running"), ("failed", "failed")) if s[k]]
    more += [f"{s['undecided']} UNDECIDED (the host too busy to tell)"] if s["undecided"] else []
    more += [f"{s['not_applicable']} not applicable"] if s["not_applicable"] else []
    line = f"{s['passed']} of {s['learners']} passed {s['lesson']}" + (f" ({', '.join(more)})" if more else "")
    for p in s["predictions"]:
        line += f"; {p['key']}: {p['right']} of {p['graded']} right"
        if p["wrong"]:
            w = p["wrong"][0]
            line += f", {w['count']} predicted {w['given']}, KAI gave {w['answer']}"
    return line


def sections(report: dict, lessons: list[str], pictures: dict[str, bytes] | None = None) -> list[Section]:
    """What the page says, format aside: per learner their totals and the lessons they tried (not a column for each
    of the lessons, most of them empty), per lesson the class counted, every attempt. ``pictures``: learner → their
    GPU timelines as a PNG."""
    learners = sorted(report)
    totals = learner_totals(report, lessons)
    joined = any("joined" in report[n] for n in learners)
    handed_in = any(report[n].get("tasks") for n in learners)
    per_learner = Section(
        f"{len(learners)} learners, {len(lessons)} lessons",
        [
            "learner",
            *(["joined"] if joined else []),
            *("passed", "failed", "running", "not yet", "attempts", "lessons"),
            *(["tasks graded"] if handed_in else []),
        ],
        [
            [
                name,
                *([joined_words(report[name].get("joined"))] if joined else []),
                *(str(totals[name][k]) for k in ("passed", "failed", "running", "not_yet", "attempts")),
                ", ".join(
                    f"{n} {report[name]['lessons'][n].get('outcome', '')}"
                    for n in lessons
                    if n in report[name]["lessons"]
                )
                or "–",
                *([task_grades_words(report[name].get("tasks") or {}) or "–"] if handed_in else []),
            ]
            for name in learners
        ],
    )
    summary_rows = {s["lesson"]: s for s in lesson_summary(report, lessons)}
    per_lesson = Section(
        "Each lesson: passed, failed, not yet",
        ["lesson", "passed", "failed", "running", "not yet", "tried again"],
        [
            [n, *(str(s[k]) for k in ("passed", "failed", "running", "not_yet", "retried"))]
            for n in lessons
            if (s := summary_rows.get(n))
        ],
    )
    if untried := [n for n in lessons if n not in summary_rows]:
        per_lesson.lines = [f"Not started by anyone yet: {', '.join(untried)}"]
    out = [per_learner, per_lesson]
    if tries := [
        f"{name} {n}: {said}"
        for name in learners
        for n, r in sorted(report[name]["lessons"].items())
        if (said := attempts_words(r))
    ]:
        out.append(Section("Lessons tried more than once", lines=tries))
    others = [  # tasks and challenges: any record that is not a lesson's, and its grade where it was handed in
        [name, n, when(r), *([grade_words(g) if (g := theirs.get(n)) else "not handed in"] if handed_in else [])]
        for name in learners
        for theirs in [report[name].get("tasks") or {}]
        for n, r in sorted(report[name]["lessons"].items())
        if n not in lessons
    ]
    if others:
        header = ["learner", "task or challenge", "their run" if handed_in else "outcome"]
        out.append(Section("Tasks and challenges", header + (["graded"] if handed_in else []), others))
    predictions = [
        [name, n, r["prediction"], r["outcome"]]
        for name in learners
        for n, r in sorted(report[name]["lessons"].items())
        if r.get("prediction")
    ]
    if predictions:
        out.append(Section("Predictions and outcomes", ["learner", "lesson", "prediction", "outcome"], predictions))
    graded = [
        [name, n, str(g.get("key", "")), str(g.get("given") or "–"), str(g.get("answer") or "not measured"), g["mark"]]
        for name in learners
        for n, r in sorted(report[name]["lessons"].items())
        for g in r.get("predictions") or []
        if isinstance(g.get("mark"), str)
    ]
    if graded:
        out.append(Section("Graded predictions", ["learner", "lesson", "question", "said", "KAI did", "mark"], graded))
    summary = [s["line"] for s in lesson_summary(report, lessons)]
    out.append(Section("Per lesson", lines=summary, none="No lesson started yet."))
    stuck = [stuck_line(name, s) for name in learners for s in report[name]["stuck"]]
    out.append(Section("Stuck", lines=stuck, none="Nobody."))
    if unreadable := [unreadable_line(name, u) for name in learners for u in report[name].get("unreadable", [])]:
        out.append(Section("Records that could not be read", lines=unreadable))
    for name in learners:
        if pictures and name in pictures:
            kept = sum(1 for r in report[name]["lessons"].values() if r.get("timeline"))
            more = f" (the first {PANELS} of {kept} drawn)" if kept > PANELS else ""
            out.append(Section(f"GPU timelines: {name}{more}", picture=(name, pictures[name])))
    return out


PANELS = 24  # lessons drawn a learner: the 17 lessons and some tasks; a record is a learner's to write, many of them


def timelines(report: dict) -> dict[str, bytes]:
    """learner → a PNG of their lessons' GPU timelines (one panel a lesson, as ``kailab evidence`` draws them, at most
    :data:`PANELS`); learners without a timeline are left out."""
    from kailab.evidence import timeline_png

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(sorted(report)):
            verdicts = [
                {"title": r.get("title") or lesson, "passed": r.get("outcome") == "PASS", "timeline": r["timeline"]}
                for lesson, r in sorted(report[name]["lessons"].items())
                if r.get("timeline")
            ][:PANELS]
            if verdicts:
                path = Path(tmp) / f"{i}.png"
                timeline_png(verdicts, path)
                out[name] = path.read_bytes()
    return out


# -- Markdown ------------------------------------------------------------------------------------------------------


def md_text(text) -> str:
    """User text as one Markdown line that shows as typed (without control characters or escape sequences)."""
    return "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in one_line(text))


def picture_file(learner: str) -> str:
    """A file name for a learner's picture: their name's letters, digits and dashes (names are DNS labels)."""
    return re.sub(r"[^A-Za-z0-9-]", "_", learner)[:60] + ".png"


def markdown(parts: list[Section], pictures_dir: str = "") -> str:
    """The page in Markdown; a learner's timelines are pictures in ``pictures_dir`` (beside the page)."""
    out = ["# Class report"]
    for s in parts:
        out += ["", f"## {md_text(s.heading)}", ""]
        if s.header:
            out.append("| " + " | ".join(map(md_text, s.header)) + " |")
            out.append("|---" * len(s.header) + "|")
            out += ["| " + " | ".join(map(md_text, row)) + " |" for row in s.rows]
        out += [f"- {md_text(line)}" for line in s.lines] or ([md_text(s.none)] if s.none else [])
        if s.picture:
            out.append(f"![GPU timelines of {md_text(s.picture[0])}]({pictures_dir}/{picture_file(s.picture[0])})")
    return "\n".join(out) + "\n"


# -- HTML ----------------------------------------------------------------------------------------------------------

STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}img{max-width:100%}"
)


def html_page(parts: list[Section]) -> str:
    """The page in HTML, one file: the pictures are in it (data: URLs)."""

    def e(text: object) -> str:  # user text: without control characters, escaped as HTML
        return html.escape(plain(text))

    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>Class report</title>',
        f"<style>{STYLE}</style></head><body>",
        "<h1>Class report</h1>",
    ]
    for s in parts:
        out.append(f"<h2>{e(s.heading)}</h2>")
        if s.header:
            out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in s.header) + "</tr>")
            out += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in s.rows]
            out.append("</table>")
        if s.lines:
            out.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in s.lines) + "</ul>")
        elif s.none:
            out.append(f"<p>{e(s.none)}</p>")
        if s.picture:
            data = base64.b64encode(s.picture[1]).decode()
            out.append(f'<img alt="GPU timelines of {e(s.picture[0])}" src="data:image/png;base64,{data}">')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write(report: dict, lessons: list[str], out: Path, force: bool = False) -> list[Path]:
    """Write the page to ``out``: HTML for ``.html``/``.htm`` (one file), else Markdown with the pictures in
    ``<out's stem>-timelines/`` beside it. Returns the files written.

    As every file kailab writes (:mod:`kailab.outfile`): a page is replaced only when kailab wrote it and nobody
    changed it since, or with ``force``; the pictures' folder only when kailab made it."""
    what = "The class report (kailab class evidence)"
    outfile.check_user_file(out, force, "the class report")  # before anything is drawn or written
    pictures = timelines(report)
    parts = sections(report, lessons, pictures)
    if out.suffix.lower() in (".html", ".htm"):
        return [outfile.write_user_file(out, html_page(parts), what, outfile.HTML, force)]
    folder = out.with_name(f"{out.stem}-timelines")
    written = [out]
    if pictures:
        outfile.own_folder(folder, "the class report's pictures")
        for name, png in pictures.items():
            written.append(outfile.write_own(folder / picture_file(name), png, root=folder))
    outfile.write_user_file(out, markdown(parts, folder.name), what, outfile.MARKDOWN, force)
    return written


def joined_words(joined: dict | None) -> str:
    """Whether and when a learner joined, in words: ``10:02:11 from ann-laptop``, ``not joined``."""
    if not joined:
        return "not joined"
    host = f" from {joined['host']}" if joined.get("host") else ""
    return f"{clock(joined.get('at') or '')}{host}".strip() or "joined"


def grade_words(g: dict) -> str:
    """One task's grade (classroom/grading.py) in words: ``FAIL (why)``; a grade's ``why`` is the grader's words."""
    failed = [str(c.get("title", "")) for c in g.get("checks") or [] if not c.get("passed")]
    why = g.get("why") or (f"not met: {'; '.join(failed)}" if failed and g.get("outcome") != "PASS" else "")
    return f"{g.get('outcome', '')}" + (f" ({one_line(why)[:200]})" if why else "")


def task_grades_words(theirs: dict[str, dict]) -> str:
    """A learner's task grades, graded on the instructor's side: ``quota-task-1 PASS, gang-task-1 FAIL (…)``; ""."""
    return ", ".join(f"{one_line(tid)} {grade_words(g)}" for tid, g in sorted(theirs.items()))  # a learner's record


def text(report: dict, learners: list[str], lessons: list[str]) -> list[str]:
    """``kailab class status`` as plain lines: per learner whose scheduler runs, each lesson's outcome and when, the
    tasks they handed in as graded on the instructor's side (classroom/grading.py), predictions, who is stuck, and
    records that could not be read; then the class per lesson (:func:`lesson_summary`) and its verdicts counted."""
    if not learners:
        return ["No class on this lab. Start one: kailab class up --learners N"]
    out = []
    for name in learners:
        row = report[name]
        done = ", ".join(
            f"{lesson} {when(r)}"
            + (f" (predictions {r['right']})" if r.get("right") else "")
            + (f" (attempts: {tries})" if (tries := attempts_words(r)) else "")
            for lesson, r in sorted(row["lessons"].items())
        )
        out.append(f"{name} (scheduler {row['scheduler']}): {done or 'no lesson run yet'}")
        if "joined" in row:
            out.append(
                f"  joined: {joined_words(row['joined'])}"
                + (f", last lesson at {clock(seen)}" if (seen := last_seen(row)) else "")
            )
        for lesson, r in sorted(row["lessons"].items()):
            if r.get("prediction"):
                said = " ".join(str(r["prediction"]).split())  # one line, as typed
                out.append(f"  {lesson}: predicted “{said}”, outcome {r['outcome']}")
            if r.get("predictions"):
                out.append(f"  {lesson} predictions: " + "; ".join(map(graded_words, r["predictions"])))
        if said := task_grades_words(row.get("tasks") or {}):
            out.append(f"{name} tasks (graded from their recordings): {said}")
        out.extend(f"  stuck: {stuck_line(name, s)}" for s in row["stuck"])
        out.extend(f"  {unreadable_line(name, u)}" for u in row.get("unreadable", []))
    out.extend(f"Class: {summary['line']}" for summary in lesson_summary(report, lessons))
    if said := outcome_counts(report):
        out.append(said)
    return out


def last_seen(row: dict) -> str:
    """When a learner last did something the class can see: the latest start or finish of their lessons; ""."""
    return max((t for r in row["lessons"].values() for t in (r.get("started"), r.get("finished")) if t), default="")


def outcome_counts(report: dict) -> str:
    """The class's verdicts counted apart — PASS, FAIL, UNDECIDED (the host too busy to tell), still running — and,
    when some are UNDECIDED, what to do; "" before any lesson ran."""
    counts: dict[str, int] = {}
    for row in report.values():
        for r in row["lessons"].values():
            counts[r.get("outcome", "")] = counts.get(r.get("outcome", ""), 0) + 1
    if not counts:
        return ""
    order = ["PASS", "FAIL", UNDECIDED, *sorted(set(counts) - {"PASS", "FAIL", UNDECIDED})]
    said = "Verdicts: " + ", ".join(f"{counts[k]} {k or 'unknown'}" for k in order if counts.get(k))
    if counts.get(UNDECIDED):
        said += (
            f". {counts[UNDECIDED]} UNDECIDED: the host was too busy to tell, not KAI failing — "
            "fewer learners at once (a smaller class on this machine), then run those lessons again"
        )
    return said


def graded_words(g: dict) -> str:
    """One graded prediction in words: ``ops-gpus wrong (said 32, KAI did 16)``."""
    said = f"said {g.get('given')}" if g.get("given") else "not answered"
    did = f"KAI did {g.get('answer')}" if g.get("answer") else "not measured"
    return f"{g.get('key')} {g.get('mark')} ({said}, {did})"
