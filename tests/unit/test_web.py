"""The pages without a lab: served for real (uvicorn on a loopback port), read by a real browser (Debian's chromium
through Playwright) and by plain HTTP. What a lab adds — watches of a real cluster, KAI's words — is in
tests/fleet/test_page_fleet.py.

- every name, title, prediction and reason is text on the page, never markup (``<script>`` shows as typed and
  runs nothing);
- a browser that comes and goes 100 times leaves no thread and no open file in the server;
- a taken port, an address that is not this machine's, a name that is no address: one clear message, no traceback;
- the class page's view is ``class status``'s, from the same cluster objects.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from browser import chromium, live

from kailab import partitions
from kailab.classroom.grading import GradeCache
from kailab.classroom.records import class_status, record_object, started_object
from kailab.classroom.report import lesson_summary
from kailab.errors import KailabError
from kailab.web.app import Page, make_app
from kailab.web.hub import Hub
from kailab.web.models import ClassModel
from kailab.web.serve import bind

HOSTILE = "<script>alert(1)</script>"
SCRIPTS = [HOSTILE, "<img src=x onerror=alert(2)>", "{{ 7*7 }}", "&amp; [b]x[/b]"]


class FakeWatches:
    def __init__(self) -> None:
        self.cond = threading.Condition()


class FakeModel:
    """A page's model with a fixed view (what the hub serves; the watches are the fleet tests')."""

    def __init__(self, kind: str, view: dict):
        self.kind, self._view, self.watches, self.changes = kind, view, FakeWatches(), 0

    def start(self) -> None: ...
    def stop(self) -> None: ...

    def version(self) -> tuple:
        return (self.changes,)

    def tick(self, browsing: bool) -> float | None:
        return None

    def view(self) -> dict:
        return self._view

    def change(self, view: dict) -> None:
        with self.watches.cond:
            self._view, self.changes = view, self.changes + 1
            self.watches.cond.notify_all()

    def explain(self, pod: str):
        return None


class Served:
    """The app on a free loopback port, in a thread of this process; stopped (and its hub) at the end."""

    def __init__(self, model: FakeModel):
        import uvicorn

        self.hub = Hub(model)
        self.hub.start()
        self.sock = bind("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(make_app(self.hub, Page(model)), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read().decode()
        finally:
            conn.close()

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
        self.hub.stop()


def row(outcome: str, title: str, prediction: str = "", **more) -> dict:
    base = {
        "outcome": outcome,
        "started": "2026-11-24T10:00:00+00:00",
        "finished": "" if outcome == "RUNNING" else "2026-11-24T10:01:00+00:00",
        "seconds": "60.0",
        "prediction": prediction,
        "right": "0 of 1 right",
        "predictions": [{"key": "gpus", "ask": title, "given": title, "answer": "16", "right": False, "mark": "wrong"}],
        "namespace": "ann-kailab-quota",
        "lesson": "quota",
        "title": title,
        "record": "kailab-record",
        "timeline": [],
        "checks": [{"title": title, "expected": "8", "observed": title, "passed": True, "detail": [title]}],
        "waiting": [title] if outcome == "RUNNING" else [],
        "error": "",
        "not_applicable": "",
    }
    return {**base, **more}


def hostile_class() -> dict:
    status = {
        text: {
            "lessons": {"quota": row("PASS" if i % 2 else "RUNNING", text, text)},
            "stuck": [
                {"kind": "pod", "pod": f"ns/{text}", "pending_seconds": 130, "reason": text, "explanation": text},
                {"kind": "lesson", "lesson": text, "namespace": "ns", "running_seconds": 200, "reason": text},
            ],
            "unreadable": [{"record": f"ns/{text}", "why": text}],
            "scheduler": "running",
        }
        for i, text in enumerate(SCRIPTS)
    }
    return {
        "down": HOSTILE,
        "learners": list(status),
        "lessons": ["quota"],
        "status": status,
        "summary": lesson_summary(status, ["quota"]),
        "stuck_after": 120,
    }


def test_names_predictions_and_reasons_are_text_on_the_class_page_never_markup():
    served = Served(FakeModel("class", hostile_class()))
    try:
        status, html = served.get("/?selected=" + "%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        assert status == 200
        for text in SCRIPTS[:2]:
            assert text not in html  # escaped by Jinja2's autoescape, in every region
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        with chromium() as page:
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(served.url)
            live(page)
            page.locator("button[data-select]").first.click()  # the learner named <script>…, opened
            page.wait_for_selector("#learner h2")
            shown = page.inner_text("body")
            for text in SCRIPTS:
                assert text in shown, text  # shown as typed: a name, a prediction, a stuck pod, KAI's reason
            assert "49" not in shown  # {{ 7*7 }} was not a template
            assert f"record unreadable (ns/{HOSTILE}: {HOSTILE})" in shown  # a record not kailab's, said as text
            assert page.locator("#grid script, #learner script, #stuck script, #learner img").count() == 0
            assert dialogs == []
    finally:
        served.close()


def test_a_browser_that_comes_and_goes_100_times_leaves_no_thread_and_no_open_file():
    model = FakeModel("class", hostile_class())
    served = Served(model)

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    def one_visit() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        conn.request("GET", "/events")
        r = conn.getresponse()
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        seen = b""
        while b"event: regions" not in seen:  # the page's first update: the browser is live
            seen += r.fp.readline()
        conn.close()
        for path in ("/", "/static/page.js", "/static/page.css"):  # what a browser loads besides
            assert served.get(path)[0] == 200

    try:
        one_visit()  # the server's first request made what it keeps (its loop's own objects)
        time.sleep(0.5)
        threads, files = threading.active_count(), fds()
        for i in range(100):
            one_visit()
            if i == 50:  # the view changes while browsers come and go
                model.change({**hostile_class(), "down": ""})
        deadline = time.monotonic() + 10
        # a leak is growth: on a busy host a descriptor open at the baseline (the first visit's socket) may close later
        while not (threading.active_count() <= threads and fds() <= files and served.hub.browsers == 0):
            assert time.monotonic() < deadline, (threading.enumerate(), fds(), files, served.hub.browsers)
            time.sleep(0.1)
    finally:
        served.close()


def test_the_page_is_read_only_and_serves_only_its_own_files():
    served = Served(FakeModel("class", hostile_class()))
    try:
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        conn.request("POST", "/", body=b"x")
        assert conn.getresponse().status == 405
        conn.close()
        assert served.get("/static/page.js")[0] == 200 and served.get("/static/../app.py")[0] == 404
        assert served.get("/runbook/pod-pending-forever.md")[0] == 200
        assert served.get("/runbook/..%2F..%2Fpyproject.toml")[0] == 404
        assert served.get("/explain?pod=ns/p")[0] == 404  # the class page explains nothing on demand
        assert served.get("/timeline.png?record=ann-kailab-quota/kailab-record")[0] == 404  # no timeline in it
    finally:
        served.close()


# -- bad addresses: one clear message ------------------------------------------------------------------------------


def test_a_taken_port_is_refused_with_what_to_do():
    taken = bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(KailabError) as e:
            bind("127.0.0.1", port)
        assert f"Port {port} on 127.0.0.1 is already in use" in e.value.message and "--port" in e.value.hint
    finally:
        taken.close()


def test_an_address_not_of_this_machine_or_not_an_address_is_refused():
    with pytest.raises(KailabError) as e:
        bind("192.0.2.1", 0)  # TEST-NET-1: never this machine's
    assert "is not an address of this machine" in e.value.message and "127.0.0.1" in e.value.hint
    with pytest.raises(KailabError) as e:
        bind("no-such-host.invalid", 0)
    assert "is not an address of this machine" in e.value.message


@pytest.mark.parametrize("command", [["serve"], ["class", "serve"]])
def test_the_commands_say_a_bad_address_once_without_a_traceback(tmp_path, command):
    env = {**os.environ, "KAILAB_HOME": str(tmp_path / "home")}
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = str(taken.getsockname()[1])
        for args, words in (
            (["--port", port], f"Port {port} on 127.0.0.1 is already in use"),
            (["--address", "192.0.2.1"], "192.0.2.1 is not an address of this machine"),
        ):
            proc = subprocess.run(
                [sys.executable, "-m", "kailab", *command, *args], env=env, capture_output=True, text=True, timeout=60
            )
            said = proc.stderr + proc.stdout
            if command == ["class", "serve"]:  # the class's page first needs a lab with a class
                assert proc.returncode == 1 and "No lab is running" in said, said
                continue
            assert proc.returncode == 1 and words in said and "Traceback" not in said, said
            assert said.count("Error") == 1
    finally:
        taken.close()
    assert errno.EADDRINUSE  # the errno the first message stands for


# -- the class page's view is class status's ------------------------------------------------------------------------


def test_the_class_page_shows_what_class_status_says_from_the_same_objects():
    """The page keeps from watches what ``class status`` lists; both make the class with records.class_view."""
    from kailab.checks import Check, Verdict

    now = datetime.now(UTC)
    ann, bob = partitions.owner("ann"), partitions.owner("bob")
    finished = Verdict(scenario="quota", title="Quota", namespace="ann-kailab-quota", started=now.isoformat())
    finished.checks.append(Check("q", "8", "8", True))
    started = started_object("bob", "gang", "Gang", "bob-kailab-gang")
    started["data"]["started"] = (now - timedelta(seconds=300)).isoformat(timespec="seconds")
    cms = [
        record_object("ann", finished, "about 8", []),
        started,
        record_object("ann", finished, HOSTILE, []) | {"metadata": {"name": "x", "namespace": "bob-kailab-gang"}},
    ]
    for cm in cms:
        cm["metadata"].setdefault("labels", {"kailab.io/learner": "ann", "kailab.io/lesson-record": "quota"})
    namespaces = [
        {"metadata": {"name": "ann-kailab-quota", "labels": ann.labels}},
        {"metadata": {"name": "bob-kailab-gang", "labels": bob.labels}},
    ]
    kube = SimpleNamespace(  # what class status lists
        core=SimpleNamespace(
            list_config_map_for_all_namespaces=lambda label_selector, limit: _listed(cms, label_selector, limit),
            list_namespace=lambda label_selector: SimpleNamespace(  # the class's: kailab.io/lab-id in (…)
                items=[
                    SimpleNamespace(
                        metadata=SimpleNamespace(name=n["metadata"]["name"], labels=n["metadata"]["labels"])
                    )
                    for n in namespaces
                    if n["metadata"]["labels"]["kailab.io/lab-id"]
                    in label_selector.split("(")[1].rstrip(")").split(",")
                ]
            ),
        ),
        pods=lambda ns=None: [],
    )
    listed = class_status(kube, ["ann", "bob"], now=now, timelines=True)
    model = ClassModel.__new__(ClassModel)  # its watches hold the same objects
    model.learners, model.stuck_after = lambda: ["ann", "bob"], 120
    model.watches = SimpleNamespace(
        objects=lambda name: {
            "records": cms,
            "namespaces": namespaces,
            "pods": [],
            "shards": [],
            "joins": [],
            "tasks": [],
        }[name],
        failing=lambda: "",
    )
    model._cached_explain = lambda *a: []
    model._grades = GradeCache()
    shown = model.view()["status"]
    assert shown["ann"]["tasks"] == shown["bob"]["tasks"] == {}  # nothing handed in (graded: test_grading.py)
    assert {k: v["lessons"] for k, v in shown.items()} == {k: v["lessons"] for k, v in listed.items()}
    assert [s["lesson"] for s in shown["bob"]["stuck"]] == ["gang"]  # running 300 s, no verdict: stuck
    assert shown["ann"]["lessons"]["quota"]["prediction"] == "about 8"  # ann's record in bob's namespace is not hers
    assert shown["ann"]["scheduler"] == "missing"  # no shard of hers
    assert shown["ann"]["unreadable"] == listed["ann"]["unreadable"]  # a record not hers is said the same on both
    assert [u["record"] for u in shown["ann"]["unreadable"]] == ["bob-kailab-gang/x"]


def test_the_lab_page_checks_each_record_as_class_status_does():
    """A record that is not kailab's (any field of it: a learner can write their own) is said as unreadable on the
    lab's page, and the others are shown as usual."""
    from kailab.checks import Check, Verdict
    from kailab.web.models import lessons

    good = Verdict(scenario="quota", title="Quota", namespace="kailab-quota", started="2026-11-24T10:00:00+00:00")
    good.checks.append(Check("q", "8", "8", True))
    bad = record_object(None, Verdict(scenario="gang", title=HOSTILE, namespace="kailab-gang", started="x"))
    bad["data"]["checks"] = json.dumps([{"title": 1}])
    rows, unreadable = lessons([record_object(None, good), bad])
    assert [r["lesson"] for r in rows] == ["quota"] and rows[0]["checks"][0]["title"] == "q"
    assert unreadable == [
        {"record": "kailab-gang/kailab-record", "why": "started: is not an ISO 8601 time (and 1 more)"}
    ]  # and its checks


def _listed(cms: list[dict], label_selector: str, limit: int) -> SimpleNamespace:
    """The ConfigMaps of one learner (``kailab.io/learner=NAME,…``) as the client lists them: its objects."""
    learner = label_selector.split(",")[0].split("=")[1]
    items = [
        SimpleNamespace(metadata=SimpleNamespace(**cm["metadata"]), data=cm["data"])
        for cm in cms
        if cm["metadata"]["labels"].get("kailab.io/learner") == learner
    ]
    return SimpleNamespace(items=items[:limit], metadata=SimpleNamespace(_continue=None))


def test_the_hub_makes_the_view_again_on_a_change_and_says_when_the_cluster_fails():
    model = FakeModel("lab", {"whose": "the lab", "lessons": []})
    hub = Hub(model)
    news = threading.Event()
    hub.listen(news.set)
    hub.start()
    try:
        assert hub.view["whose"] == "the lab" and hub.version == 1
        news.clear()
        model.change({"whose": "learner ann", "lessons": []})
        assert news.wait(5) and hub.view["whose"] == "learner ann"
        news.clear()

        def failing() -> dict:
            raise ConnectionRefusedError("Connection refused")

        model.view = failing  # type: ignore[method-assign]
        model.change({})
        assert news.wait(5) and "refuses connections" in hub.view["down"]
        assert hub.view["whose"] == "learner ann"  # what it saw last, still shown
    finally:
        hub.stop()
    assert not any(t.name == "kailab-page" for t in threading.enumerate())
