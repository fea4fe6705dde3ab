"""The instructor's view of a class: every attempt at a lesson kept, who is stuck (and who is not), who has joined,
the class summed up per lesson and per learner, one learner's slice, and a lesson that is the instructor's demo."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from kailab import partitions
from kailab.checks import Check, Verdict
from kailab.classroom import access, joined, records, report
from kailab.labels import JOINED_LABEL, LEARNER_LABEL, SCENARIO_LABEL

T0 = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)


class FakeKube:
    """Objects by (kind, namespace, name), applied whole as server-side apply does for one field manager."""

    def __init__(self):
        self.objects: dict[tuple, dict] = {}
        self.applied: list[dict] = []

    def apply(self, obj: dict) -> dict:
        meta = obj["metadata"]
        self.objects[(obj["kind"], meta.get("namespace"), meta["name"])] = json.loads(json.dumps(obj))
        self.applied.append(json.loads(json.dumps(obj)))
        return obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        return self.objects.get((kind, namespace, name))


class FakeEngine:
    """An engine whose lessons end as it is told (FAIL, then PASS …)."""

    def __init__(self, outcomes: list[bool]):
        self.outcomes = outcomes
        self.cluster = SimpleNamespace()  # no scheduler control: nothing to restore
        self.decided = None

    def not_applicable(self, scenario) -> str:
        return ""

    def run(self, scenario) -> Verdict:
        v = Verdict(scenario=scenario.name, title=scenario.title, namespace=scenario.namespace, seconds=1.0)
        v.started = datetime.now(UTC).isoformat(timespec="seconds")
        v.checks.append(Check("q gets 8", "8", "8" if self.outcomes[0] else "4", self.outcomes.pop(0)))
        self.decided(v)
        return v


def _scenario(name="quota"):
    return SimpleNamespace(name=name, title=name.title(), namespace=f"ann-kailab-{name}", steps=[])


def _cm(obj: dict) -> dict:
    return obj


def test_every_attempt_at_a_lesson_is_kept_a_fail_then_a_pass():
    kube = FakeKube()
    engine = records.Recording(FakeEngine([False, True, True]), kube, "ann")
    assert engine.run(_scenario()).outcome == "FAIL"
    first = kube.get("v1", "ConfigMap", records.NAME, "ann-kailab-quota")
    assert "attempts" not in first["data"]  # the first try has none before it
    assert engine.run(_scenario()).outcome == "PASS"
    # while the second ran, every write kept the first (server-side apply drops a field a write leaves out)
    second_run = [o for o in kube.applied[3:] if o["metadata"]["name"] == records.NAME]
    assert all(json.loads(o["data"]["attempts"])[0]["outcome"] == "FAIL" for o in second_run)
    engine.run(_scenario())
    cm = kube.get("v1", "ConfigMap", records.NAME, "ann-kailab-quota")
    cm["metadata"]["labels"] = records._labels("ann", "quota", None)
    name, row = records.record_row(cm, learner="ann")
    assert name == "quota" and row["outcome"] == "PASS"
    assert [a["outcome"] for a in row["attempts"]] == ["FAIL", "PASS"]  # oldest first, the latest is the record's
    words = report.attempts_words(row)
    assert words.startswith("FAIL ") and words.count(" → ") == 2 and words.endswith(row["finished"][11:19])


def test_a_lesson_cut_short_is_an_attempt_too_and_a_verdict_written_again_keeps_the_attempts():
    kube = FakeKube()
    cut = records.started_object("ann", "quota", "Quota", "ann-kailab-quota")
    kube.apply(cut)  # its process killed: the record says RUNNING for ever
    records.Recording(FakeEngine([True]), kube, "ann").run(_scenario())
    cm = kube.get("v1", "ConfigMap", records.NAME, "ann-kailab-quota")
    kept = records.kept_attempts(kube, "quota", "ann-kailab-quota")
    assert [a["outcome"] for a in kept] == [records.RUNNING]
    assert report.attempt_word(kept[0]).startswith("cut short ")
    again = records.with_attempts(
        records.record_object("ann", Verdict(scenario="quota", title="Quota", namespace="ann-kailab-quota")), kept
    )
    assert json.loads(again["data"]["attempts"]) == json.loads(cm["data"]["attempts"])


@pytest.mark.parametrize(
    "attempts",
    [
        "[1]",
        '[{"outcome": "MAYBE"}]',
        '[{"outcome": "PASS", "finished": "yesterday"}]',
        json.dumps([{"outcome": "PASS"}] * 51),
        '{"outcome": "PASS"}',
    ],
)
def test_earlier_attempts_that_are_not_kailabs_make_the_record_unreadable(attempts):
    obj = records.record_object("ann", Verdict(scenario="quota", title="Quota", namespace="ann-kailab-quota"))
    obj["data"]["attempts"] = attempts
    with pytest.raises(ValueError, match="attempts"):
        records.record_row(obj, learner="ann")
    assert records.earlier_attempts(obj) == []  # and a new run starts its history afresh


def _record(lesson: str, namespace: str, finished: datetime | None, outcome="PASS") -> dict:
    v = Verdict(scenario=lesson, title=lesson, namespace=namespace)
    v.started = (T0 - timedelta(minutes=30)).isoformat()
    v.checks.append(Check("x", "1", "1", outcome == "PASS"))
    obj = records.record_object("ann", v)
    if finished is None:
        obj = records.started_object("ann", lesson, lesson, namespace)
        obj["data"]["started"] = v.started
    else:
        obj["data"]["finished"] = finished.isoformat()
    return obj


def _pod(name: str, namespace: str, created: datetime, scenario: str = "") -> dict:
    labels = {SCENARIO_LABEL: scenario} if scenario else {}
    return {
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created.isoformat(), "labels": labels},
        "spec": {},
        "status": {"phase": "Pending"},
    }


def _explain(learner, namespace, waiting, visible):
    return [SimpleNamespace(reported="no room", summary="no room", runbook="") for _ in waiting]


def test_a_lesson_and_its_task_in_one_namespace_the_latest_finish_counts_and_a_jobs_new_pod_is_the_lessons():
    ns = "ann-kailab-quota"
    recs = [
        _record("quota-task-1", ns, T0 - timedelta(minutes=10)),  # the task finished last
        _record("quota", ns, T0 - timedelta(minutes=20)),  # read after it: it must not put the finish back
    ]
    pods = {
        ns: [
            _pod("left-by-the-task", ns, T0 - timedelta(minutes=15)),  # before the latest finish: a result
            _pod(
                "job-made-again", ns, T0 - timedelta(minutes=5), scenario="quota"
            ),  # a Job's new pod after its verdict
            _pod("typed-by-hand", ns, T0 - timedelta(minutes=5)),  # the learner's own, after: they may be stuck
        ]
    }
    view = records.class_view(["ann"], recs, {"ann": [ns]}, pods, _explain, now=T0, stuck_after=60)
    assert [s["pod"] for s in view["ann"]["stuck"]] == [f"{ns}/typed-by-hand"]
    # while the lesson runs again, its pods count (one made by this run may be stuck)
    recs[1] = _record("quota", ns, None)
    view = records.class_view(["ann"], recs, {"ann": [ns]}, pods, _explain, now=T0, stuck_after=60)
    assert {s.get("pod") or s["lesson"] for s in view["ann"]["stuck"]} == {
        f"{ns}/job-made-again",
        f"{ns}/typed-by-hand",
        "quota",
    }


def test_the_class_is_summed_up_per_learner_and_per_lesson_not_a_column_a_lesson():
    rep = {
        "ann": {
            "lessons": {
                "quota": {
                    "outcome": "PASS",
                    "finished": "2026-11-27T10:05:00+00:00",
                    "attempts": [{"outcome": "FAIL"}],
                },
                "gang": {"outcome": "FAIL", "finished": "2026-11-27T10:09:00+00:00"},
                "quota-task-1": {"outcome": "PASS", "finished": "2026-11-27T10:12:00+00:00"},
            },
            "stuck": [],
            "joined": {"at": "2026-11-27T09:58:01+00:00", "host": "ann-laptop"},
        },
        "bob": {"lessons": {"quota": {"outcome": "RUNNING", "started": "2026-11-27T10:10:00+00:00"}}, "stuck": []},
    }
    lessons = ["quota", "borrow", "gang", "reclaim"]
    totals = report.learner_totals(rep, lessons)
    assert totals["ann"] == {"passed": 1, "failed": 1, "running": 0, "other": 0, "not_yet": 2, "attempts": 3}
    assert totals["bob"] == {"passed": 0, "failed": 0, "running": 1, "other": 0, "not_yet": 3, "attempts": 1}
    page = report.markdown(report.sections(rep, lessons)).splitlines()
    assert "| learner | joined | passed | failed | running | not yet | attempts | lessons |" in page
    assert "| ann | 09:58:01 from ann-laptop | 1 | 1 | 0 | 2 | 3 | quota PASS, gang FAIL |" in page
    assert "| bob | not joined | 0 | 0 | 1 | 3 | 1 | quota RUNNING |" in page
    assert "| quota | 1 | 0 | 1 | 0 | 1 |" in page  # passed, failed, running, not yet, tried again
    assert "| gang | 0 | 1 | 0 | 1 | 0 |" in page
    assert "- Not started by anyone yet: borrow, reclaim" in page
    assert "- ann quota: FAIL → PASS 10:05:00" in page
    widest = max(line.count("|") for line in page if line.startswith("|"))
    assert widest == 9  # eight columns, however many lessons there are
    rep["ann"]["scheduler"] = rep["bob"]["scheduler"] = "running"
    lines = report.text(rep, ["ann", "bob"], lessons)
    assert "  joined: 09:58:01 from ann-laptop, last lesson at 10:12:00" in lines
    assert any(
        line.startswith("ann (scheduler running): ") and "(attempts: FAIL → PASS 10:05:00)" in line for line in lines
    )


def test_task_grades_stand_beside_each_learners_lessons_in_class_status_and_on_the_evidence_page():
    """A hand-in graded on the instructor's side (classroom/grading.py) is said with the learner's lessons: in
    ``class status`` on the line after theirs, on the evidence page (Markdown and HTML) in their row and beside the
    outcome of the run they handed in — not the run's own PASS, which played no hidden check."""
    failed = {"title": "team-research runs all 8 of its pods", "passed": False}
    rep = {
        "ann": {
            "lessons": {
                "quota": {"outcome": "PASS", "finished": "2026-11-27T10:05:00+00:00"},
                "quota-task-1": {"outcome": "PASS", "finished": "2026-11-27T10:12:00+00:00"},
            },
            "stuck": [],
            "scheduler": "running",
            "tasks": {"quota-task-1": {"outcome": "FAIL", "checks": [{"title": "q", "passed": True}, failed]}},
        },
        "bob": {"lessons": {"quota-task-1": {"outcome": "PASS"}}, "stuck": [], "scheduler": "running", "tasks": {}},
    }
    lines = report.text(rep, ["ann", "bob"], ["quota"])
    said = "ann tasks (graded from their recordings): quota-task-1 FAIL (not met: team-research runs all 8 of its pods)"
    assert lines.index(said) == 1  # beside her lessons, before bob's and the class's lines
    assert not any(line.startswith("bob tasks") for line in lines)  # nothing handed in: no line
    page = report.markdown(report.sections(rep, ["quota"])).splitlines()
    assert "| learner | passed | failed | running | not yet | attempts | lessons | tasks graded |" in page
    assert any(
        line.startswith("| ann |")
        and line.endswith("| quota-task-1 FAIL \\(not met: team-research runs all 8 of its pods\\) |")
        for line in page
    ), page
    assert "| learner | task or challenge | their run | graded |" in page
    assert any(line.startswith("| ann | quota-task-1 | PASS ") and "| FAIL \\(not met" in line for line in page), page
    assert any(line.startswith("| bob | quota-task-1 | PASS |") and line.endswith("| not handed in |") for line in page)
    html = report.html_page(report.sections(rep, ["quota"]))
    assert "<th>tasks graded</th>" in html and "<td>quota-task-1 FAIL (not met: team-research" in html
    del rep["ann"]["tasks"], rep["bob"]["tasks"]  # a class where nobody handed a task in: the page as before
    assert (
        "| learner | passed | failed | running | not yet | attempts | lessons |"
        in report.markdown(report.sections(rep, ["quota"])).splitlines()
    )


def _mark(learner: str, namespace: str | None = None, name: str = joined.JOINED, times=()) -> dict:
    obj = joined.joined_object(learner, "laptop <b>")
    meta = obj["metadata"]
    if namespace:
        meta["namespace"] = namespace
    meta["name"] = name
    meta["creationTimestamp"] = "2026-11-27T09:00:00Z"
    meta["managedFields"] = [{"manager": "kailab", "time": t} for t in times]
    return obj


def test_who_has_joined_is_read_from_the_marks_their_joins_wrote_by_the_api_servers_clock():
    mark = _mark("ann")
    assert mark["metadata"]["labels"][JOINED_LABEL] == "true" and mark["metadata"]["labels"][LEARNER_LABEL] == "ann"
    assert partitions.owner("ann").owns(mark["metadata"]["labels"])
    assert mark["metadata"]["namespace"].startswith("ann-")
    states = joined.join_states(
        ["ann", "bob", "cy"],
        [
            _mark("ann", times=["2026-11-27T09:30:00Z", "2026-11-27T09:10:00Z"]),  # joined again: the latest write
            _mark("bob", namespace=access.challenge_namespace("ann")),  # bob's label in ann's namespace
            _mark("cy", name="something-else"),
            _mark("nobody"),
        ],
    )
    assert states == {"ann": {"at": "2026-11-27T09:30:00+00:00", "host": "laptop <b>"}, "bob": None, "cy": None}
    assert report.joined_words(states["ann"]) == "09:30:00 from laptop <b>"
    assert report.joined_words(None) == "not joined"


def test_the_instructor_watches_one_learners_queues_nodes_and_namespaces_with_their_fair_shares():
    from kailab.labels import NODEPOOL_LABEL, SHARD_FAIR_SHARES_ANNOTATION, SHARD_METRICS_ANNOTATION
    from kailab.view import learner_view

    text = 'kai_queue_fair_share_gpu{queue_name="ann-team-a"} 12\n'
    shard = {"metadata": {"annotations": {SHARD_METRICS_ANNOTATION: "x", SHARD_FAIR_SHARES_ANNOTATION: text}}}
    made = [SimpleNamespace(metadata=SimpleNamespace(name=n)) for n in ("ann-kailab-quota", "ann-kailab-gang")]
    kube = SimpleNamespace(  # the instructor's: it reads ann's shard, where the supervisor publishes her fair shares
        get=lambda api, kind, name, ns=None: shard if name == "ann-shard" else None,
        core=SimpleNamespace(list_namespace=lambda label_selector: SimpleNamespace(items=made)),
    )
    view = learner_view(kube, "ann")
    assert view.queues == f"{NODEPOOL_LABEL}=ann" and view.nodes == partitions.node_selector("ann")
    assert view.pod_namespaces(kube) == ["ann-kailab-gang", "ann-kailab-quota"]
    shares = view.fair_shares()
    assert shares is not None and shares.get("ann-team-a") == 12
    assert learner_view(kube, "bob").fair_shares() is None  # no shard of bob's here: no fair share made up


def test_time_fairshare_is_the_instructors_demo_for_a_joined_learner_and_runs_in_a_lab_of_ones_own():
    from kailab.lesson import demo_only
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario

    def lab(learner, abilities):
        return SimpleNamespace(
            learner=learner, kube=None, cluster=lambda kube: SimpleNamespace(abilities=lambda: abilities)
        )

    slice_can = frozenset({"scheduler-control", "fair-share", "gpu-sharing"})  # a learner's: no usage database
    time_fairshare, quota = (load_scenario(EXERCISES / f"{n}.yaml") for n in ("time-fairshare", "quota"))
    assert "usage database" in demo_only(lab("ann", slice_can), time_fairshare)
    assert demo_only(lab("ann", slice_can), quota) == ""
    assert demo_only(lab(None, frozenset()), time_fairshare) == ""  # alone: the engine says what this lab lacks


def test_the_class_page_sums_up_six_learners_in_a_real_browser_with_every_attempt():
    """The class page (kailab class serve), served for real and read by Debian's chromium: a row a learner with their
    totals and join, a row a lesson with its counts — a table as wide for 18 lessons as for 2 — and a learner's
    earlier attempts when they are opened."""
    from browser import chromium, live
    from test_web import FakeModel, Served, row

    from kailab.lesson import lesson_names

    lessons = lesson_names()
    learners = [f"learner-{i}" for i in range(1, 7)]
    status = {
        n: {"lessons": {}, "stuck": [], "unreadable": [], "scheduler": "running", "joined": None} for n in learners
    }
    status["learner-1"]["joined"] = {"at": "2026-11-27T09:58:01+00:00", "host": "ann-laptop"}
    earlier = [{"outcome": "FAIL", "started": "2026-11-24T09:50:00+00:00", "finished": "2026-11-24T09:51:00+00:00"}]
    status["learner-1"]["lessons"]["quota"] = row("PASS", "Quota", attempts=earlier)
    status["learner-1"]["lessons"]["quota-task-1"] = row("PASS", "Quota task 1", lesson="quota-task-1")
    not_met = {"title": "team-research runs all 8 of its pods", "passed": False}
    status["learner-1"]["tasks"] = {
        "quota-task-1": {"outcome": "FAIL", "finished": "2026-11-27T10:12:00+00:00", "checks": [not_met]}
    }
    status["learner-2"]["lessons"]["quota"] = row("FAIL", "Quota")
    status["learner-3"]["lessons"]["gang"] = row("RUNNING", "Gang", lesson="gang", namespace="learner-3-kailab-gang")
    view = {
        "down": "",
        "learners": learners,
        "lessons": lessons,
        "status": status,
        "summary": report.lesson_summary(status, lessons),
        "totals": report.learner_totals(status, lessons),
        "stuck_after": 120,
    }
    served = Served(FakeModel("class", view))
    try:
        with chromium(width=1300) as page:
            page.goto(served.url)
            live(page)
            assert page.locator("table.grid tbody tr").count() == 6
            assert page.locator("table.grid thead th").count() == 9  # not a column a lesson: 18 lessons here
            first = page.locator("table.grid tbody tr").first.inner_text()
            assert "09:58:01 UTC" in first and "ann-laptop" in first and "2 attempts" in first, first
            assert "not joined" in page.locator("table.grid tbody tr").nth(1).inner_text()
            assert page.locator("tr:has(button[data-select=learner-3]) td.lessons .cell.running").count() == 1
            counts = {
                r.locator("th").inner_text(): [c.inner_text() for c in r.locator("td").all()]
                for r in page.locator("table.per-lesson tbody tr").all()
            }
            assert counts == {
                "quota": ["1", "1", "0", "4", "1"],
                "gang": ["0", "0", "1", "5", "0"],
                "quota-task-1": ["1", "0", "0", "5", "0"],  # the runs handed in, as the class summary counts them
            }, counts
            page.locator("button[data-select=learner-1]").first.click()
            page.wait_for_selector("#learner .attempts")
            assert "Earlier attempts: FAIL 09:51:00 UTC" in page.inner_text("#learner .attempts")
            # the task she handed in: graded FAIL on the instructor's side, beside her run's own PASS
            tasks = page.locator("tr:has(button[data-select=learner-1]) td.tasks").inner_text()
            assert "quota-task-1 graded FAIL" in tasks and "their run PASS" in tasks, tasks
            grade = page.locator("#learner table.task-grades tbody tr").inner_text()
            assert "quota-task-1" in grade and "FAIL" in grade and "team-research runs all 8" in grade, grade
            # wide enough for a projector: nothing scrolls sideways
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        served.close()
