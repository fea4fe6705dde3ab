"""The pages on a real lab with the real KAI, read by a real browser (Debian's chromium through Playwright).

- ``kailab serve``: a lesson started in a terminal appears on the open page, its expectations turn PASS one expect
  step after another, with no reload, then its GPU timeline; a Pending pod clicked shows KAI's own reason and the
  runbook; when the lab's API server goes away the page says so, and when it is back the page catches up;
- ``kailab class serve`` on a class of two: one learner's verdict is on the instructor's page while the other's
  lesson still runs; the learner's prediction, hostile text, is shown as typed; no token, certificate or kubeconfig
  is ever on the page.

The screenshots in docs/ and the README are these tests'.
"""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from browser import chromium, live, screenshot
from waits import until  # tests/fleet/waits.py

from kailab.paths import RUNBOOKS

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

HOSTILE = "<script>alert(1)</script> {{ 7*7 }}"


class Serving:
    """``kailab serve`` (or ``class serve``) as a user runs it, on a free port; Ctrl-C at the end."""

    def __init__(self, home: Path, *args: str, env: dict | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kailab", *args, "--port", "0"],
            env={**os.environ, "KAILAB_HOME": str(home), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        said = ""
        while (found := re.search(r"http://\S+/", said)) is None:
            line = self.proc.stdout.readline() if self.proc.stdout else ""
            assert line, f"kailab {' '.join(args)} ended: {said}"
            said += line
        self.url = found.group(0)

    def stop(self) -> str:
        self.proc.send_signal(2)  # Ctrl-C
        out, _ = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0 and "Traceback" not in out, out
        return out


def kailab(home: Path, *args: str, cwd: Path | None = None, typed: str | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kailab", *args],
        env={**os.environ, "KAILAB_HOME": str(home), "COLUMNS": "200"},
        cwd=cwd,
        stdin=subprocess.PIPE if typed is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finished(proc: subprocess.Popen, typed: str | None = None) -> str:
    out, _ = proc.communicate(typed, timeout=600)
    assert proc.returncode == 0, out
    return out


def test_a_lesson_turns_pass_on_the_open_page_and_a_pending_pod_says_why(kai_lab):
    serving = Serving(kai_lab.home, "serve")
    try:
        with chromium() as page:
            loads: list[float] = []
            page.on("load", lambda: loads.append(time.monotonic()))
            page.goto(serving.url)
            live(page)
            assert page.locator("td.cells .gpu").count() == 32  # the fleet: one cell a GPU

            # gang: three expect steps, decided one after another while the page is open
            lesson = kailab(kai_lab.home, "demo", "gang", "-q")
            page.wait_for_selector(".lesson h3 .outcome.running", timeout=60_000)
            page.wait_for_selector(".lesson tr.waiting", state="attached", timeout=60_000)
            page.wait_for_selector(".lesson tr.pass", timeout=90_000)
            assert page.inner_text(".lesson h3 .outcome") == "RUNNING"  # a PASS decided, the lesson still runs
            screenshot(page, "page-lab-running")
            finished(lesson)
            page.wait_for_selector(".lesson h3 .outcome.pass", timeout=30_000)
            page.wait_for_selector(".lesson figure img", timeout=30_000)  # its GPU timeline, drawn when it ended
            rows = page.locator(".lesson table.checks tbody tr")
            assert rows.count() == 6 and page.locator(".lesson tr.pass").count() == 6
            drawn = page.locator(".lesson figure img")
            until("the timeline is drawn", lambda: drawn.evaluate("img => img.complete && img.naturalWidth") > 0)
            assert page.locator("td.cells .gpu:not(.free)").count() == 32  # the gang holds every GPU
            screenshot(page, "page-lab")

            # the pending-forever runbook's pods wait, each for its reason; one clicked says why in KAI's words
            finished(kailab(kai_lab.home, "run", str(RUNBOOKS / "scenarios" / "pending-forever.yaml"), "-q"))
            waiting = page.locator("ul.pending button", has_text="/missing-queue")
            waiting.first.wait_for(timeout=30_000)
            waiting.first.click()
            page.wait_for_selector("#explain .explained .kai", timeout=30_000)
            said = page.inner_text("#explain")
            assert re.search(r"The scheduler says: “(QueueDoesNotExist: )?Queue '[\w-]+' does not exist", said), said
            assert "runbooks/pod-pending-forever.md" in said and "# " in said  # the runbook, and its text
            screenshot(page, "page-explain")
            assert len(loads) == 1  # all of it without a reload
    finally:
        serving.stop()


class Relay:
    """The lab's API server as the page reaches it: a TCP relay to it that this test closes (every connection
    dropped, nothing listening) and opens again on the same port."""

    def __init__(self, target: tuple[str, int]):
        self.target, self.port = target, 0
        self.open()

    def open(self) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self.port = self.listener.getsockname()[1]
        self.listener.listen(64)
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                a, _ = listener.accept()
            except OSError:
                return
            b = socket.create_connection(self.target)
            self.conns += [a, b]
            for src, dst in ((a, b), (b, a)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread in accept(): the port is free at once
        except OSError:
            pass
        self.listener.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()


def test_the_page_says_when_the_lab_is_gone_and_catches_up_when_it_is_back(kai_lab, tmp_path):
    conf = yaml.safe_load(Path(kai_lab.runtime.kubeconfig()).read_text())
    server = conf["clusters"][0]["cluster"]["server"]
    host, port = server.removeprefix("https://").rsplit(":", 1)
    relay = Relay((host, int(port)))
    conf["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
    through = tmp_path / "through-relay.yaml"
    through.write_text(yaml.safe_dump(conf))
    serving = Serving(kai_lab.home, "serve", env={"KAILAB_KUBECONFIG": str(through)})
    queue = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "came-while-away", "labels": {"app.kubernetes.io/managed-by": "kailab"}},
        "spec": {"resources": {r: {"quota": 2, "limit": -1, "overQuotaWeight": 1} for r in ("gpu", "cpu", "memory")}},
    }
    try:
        with chromium() as page:
            page.goto(serving.url)
            live(page)
            assert page.locator("#banner .down").count() == 0
            relay.close()  # the lab goes away
            page.wait_for_selector("#banner .down", timeout=30_000)
            assert "The lab does not answer" in page.inner_text("#banner")
            screenshot(page, "page-lab-down")
            kai_lab.kube.apply(queue)  # changed while the page could not see it
            relay.open()  # the lab is back, where it was
            page.wait_for_selector("#banner .down", state="detached", timeout=60_000)
            page.wait_for_selector("text=came-while-away", timeout=30_000)
    finally:
        serving.stop()
        relay.close()
        kai_lab.kube.delete("scheduling.run.ai/v2", "Queue", "came-while-away")


@pytest.fixture
def no_class_left(kai_lab):
    from kailab.scenarios.live import clear_scenarios

    clear_scenarios(kai_lab.kube)
    yield
    kai_lab.cli("class", "down")


def test_the_instructors_page_shows_one_learners_verdict_while_the_others_lesson_runs(kai_lab, tmp_path, no_class_left):
    creds = tmp_path / "creds"
    kai_lab.cli("class", "up", "--learner", "ann", "--learner", "bob", "--out", str(creds), check=True)
    ann_home = tmp_path / "ann-machine"  # ann has only her file
    assert finished(kailab(ann_home, "join", str(creds / "ann.kubeconfig")))
    token = yaml.safe_load((creds / "ann.kubeconfig").read_text())["users"][0]["user"]["token"]
    ca = base64.b64decode(
        yaml.safe_load((creds / "ann.kubeconfig").read_text())["clusters"][0]["cluster"]["certificate-authority-data"]
    ).decode()
    serving = Serving(kai_lab.home, "class", "serve")
    try:
        with chromium(width=1500) as page:
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(serving.url)
            live(page)
            assert page.locator("table.grid tbody tr").count() == 2
            bob = kailab(kai_lab.home, "class", "demo", "reclaim", "--learner", "bob", "-q")  # about 40 s
            page.wait_for_selector("tr:has(button[data-select=bob]) td.lessons .cell.running", timeout=60_000)
            ann = kailab(ann_home, "lesson", "borrow", cwd=tmp_path, typed="")  # her own machine, her kubeconfig
            finished(ann, HOSTILE + "\n")
            page.wait_for_selector("tr:has(button[data-select=ann]) td.lessons .cell.pass", timeout=30_000)
            # bob's row meanwhile: his lesson running, or (on a busy host, where his may end first) passed
            bobs = "tr:has(button[data-select=bob]) td.lessons"
            assert page.locator(f"{bobs} .cell.running, {bobs} .cell.pass").count() == 1
            page.locator("button[data-select=ann]").first.click()
            page.wait_for_selector("#learner h2", timeout=10_000)
            page.wait_for_selector("#learner p.prediction", timeout=30_000)  # her predictions' rewrite, watched in
            assert f"Predicted: “{HOSTILE}”" in page.inner_text("#learner")  # as she typed it
            drawn = page.locator("#learner figure img").first
            until("ann's timeline is drawn", lambda: drawn.evaluate("img => img.complete && img.naturalWidth") > 0)
            if page.locator("tr:has(button[data-select=bob]) td.lessons .cell.running").count() == 1:
                screenshot(page, "page-class")  # the README's picture says bob's lesson runs: only while it does
            finished(bob)
            page.wait_for_selector("tr:has(button[data-select=bob]) td.lessons .cell.pass", timeout=30_000)
            page.wait_for_selector("#summary li", timeout=10_000)
            assert "1 of 2 passed borrow" in page.inner_text("#summary")
            assert "1 of 2 passed reclaim" in page.inner_text("#summary")
            shown = page.content()
            assert dialogs == []
        # Everything the page serves, read as anyone in the room would: no credential, no kubeconfig.
        import urllib.request

        served = [
            urllib.request.urlopen(serving.url + path, timeout=10).read().decode() for path in ("", "?selected=ann")
        ]
        with urllib.request.urlopen(serving.url + "events?selected=ann", timeout=10) as events:
            served.append(events.readline().decode() + events.readline().decode() + events.readline().decode())
        for text in [shown, *served]:
            assert token not in text and token[:40] not in text
            assert ca.splitlines()[1] not in text  # the CA certificate's body
            assert "kubeconfig.yaml" not in text and str(creds) not in text and "BEGIN CERTIFICATE" not in text
    finally:
        serving.stop()
