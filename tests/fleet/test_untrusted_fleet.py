"""A learner's data is untrusted, on the real KAI (local runtime): records a learner writes with their own credential
— malformed, forged as another's, or carrying terminal escape sequences — never stop the instructor's ``class status``
and ``class evidence`` nor reach the instructor's terminal as commands; ``join`` against the real API server says
each cause apart within its bound (a wrong certificate authority, another learner's token, a revoked one, a file that
is not a class credential), and refuses the instructor's own lab folder."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from kailab.checks import Check, Verdict
from kailab.classroom import joined
from kailab.classroom.records import record_object
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import LEARNER_LABEL

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # what a terminal obeys
ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4K\x07\u202e"


@pytest.fixture
def a_class(kai_lab, tmp_path):
    """ann and bob in a class, their kubeconfigs in tmp_path/creds; the class removed after."""
    out = tmp_path / "creds"
    kai_lab.cli("class", "up", "--learner", "ann", "--learner", "bob", "--out", str(out), check=True)
    yield out
    kai_lab.cli("class", "down")


def _record(learner: str, lesson: str, **data) -> dict:
    """A record of ``lesson`` in ``learner``'s namespace as kailab writes it, with ``data`` over its fields."""
    verdict = Verdict(
        scenario=lesson,
        title=lesson.capitalize(),
        checks=[Check("a", "1", "1", True)],
        namespace=f"{learner}-kailab-{lesson}",
        started=datetime.now(UTC).isoformat(timespec="seconds"),
        timeline=[[0.0, {f"{learner}-team-a": 0}], [1.0, {f"{learner}-team-a": 8}]],
    )
    obj = record_object(learner, verdict, prediction="team-a gets 8")
    obj["data"].update(data)
    return obj


def test_bad_records_of_a_learner_never_stop_the_class_view_nor_reach_the_instructors_terminal(
    kai_lab, a_class, tmp_path
):
    ann, bob = Kube(a_class / "ann.kubeconfig"), Kube(a_class / "bob.kubeconfig")  # each with their own credential
    bob.apply(_record("bob", "quota", prediction=f"p{ESCAPES}q", title=f"T{ESCAPES}"))
    ann.apply(_record("ann", "quota"))
    ann.apply(_record("ann", "gang", started="2026-11-24T09:00:00"))  # a time without a time zone
    ann.apply(_record("ann", "reclaim", timeline="[1, 2, 3]"))  # a timeline of numbers
    forged = _record("bob", "borrow")  # bob's record, labelled as ann's, in bob's namespace
    forged["metadata"]["labels"][LEARNER_LABEL] = "ann"
    bob.apply(forged)

    status = kai_lab.cli("class", "status")
    printed = status.stdout + status.stderr
    assert status.returncode == 0, printed
    assert "Traceback" not in printed and not OBEYED.search(printed), repr(printed)
    lines = status.stdout.splitlines()
    assert any(line.startswith("ann (scheduler running): quota PASS") for line in lines), status.stdout
    assert any(line.startswith("bob (scheduler running): quota PASS") for line in lines), status.stdout
    for words in (
        "ann: record unreadable (ann-kailab-gang/kailab-record: started: has no time zone)",
        "ann: record unreadable (ann-kailab-reclaim/kailab-record: timeline: is not a timeline",
        "ann: record unreadable (bob-kailab-borrow/kailab-record: it is in namespace 'bob-kailab-borrow', not one "
        "of ann's)",
    ):
        assert words in status.stdout, status.stdout

    report = json.loads(kai_lab.cli("class", "status", "--json").stdout)
    assert set(report["ann"]["lessons"]) == {"quota"} and set(report["bob"]["lessons"]) == {"quota"}
    assert len(report["ann"]["unreadable"]) == 3 and report["bob"]["unreadable"] == []
    assert report["bob"]["lessons"]["quota"]["prediction"] == f"p{ESCAPES}q"  # kept as data; JSON escapes it

    mine = tmp_path / "class-report.html"
    mine.write_text("<p>my own page</p>\n")
    refused = kai_lab.cli("class", "evidence", "--out", str(mine))
    assert refused.returncode == 1 and "kailab did not write" in refused.stderr, refused.stderr
    assert mine.read_text() == "<p>my own page</p>\n"
    page = tmp_path / "class.html"
    written = kai_lab.cli("class", "evidence", "--out", str(page))
    assert written.returncode == 0, written.stderr
    text = page.read_text()
    assert "record unreadable" in text and "<script" not in text and not OBEYED.search(text)


def _with(path: Path, to: Path, change) -> Path:
    conf = yaml.safe_load(path.read_text())
    change(conf)
    to.write_text(yaml.safe_dump(conf))
    return to


def _joins(path: Path, home: Path) -> tuple[str, float]:
    start = time.monotonic()
    with pytest.raises(KailabError) as err:
        joined.join(path, home)
    return err.value.message, time.monotonic() - start


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make another certificate authority")
def test_join_says_each_cause_apart_against_the_real_api_server(kai_lab, a_class, tmp_path):
    ann_file, bob_file = a_class / "ann.kubeconfig", a_class / "bob.kubeconfig"
    home = tmp_path / "ann-machine"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=another",
         "-keyout", str(tmp_path / "other.key"), "-out", str(tmp_path / "other.crt")],
        check=True, capture_output=True,
    )  # fmt: skip
    other_ca = base64.b64encode((tmp_path / "other.crt").read_bytes()).decode()

    def wrong_ca(conf):
        conf["clusters"][0]["cluster"]["certificate-authority-data"] = other_ca

    said, took = _joins(_with(ann_file, tmp_path / "wrong-ca.kubeconfig", wrong_ca), home)
    assert "presents a certificate that wrong-ca.kubeconfig's certificate authority does not accept" in said, said
    assert took < joined.ANSWER_SECONDS

    bob_token = yaml.safe_load(bob_file.read_text())["users"][0]["user"]["token"]

    def bobs_token(conf):
        conf["users"][0]["user"]["token"] = bob_token

    said, took = _joins(_with(ann_file, tmp_path / "swapped.kubeconfig", bobs_token), home)
    assert said.endswith("the cluster knows its token as bob's: it is another learner's credential."), said
    assert took < joined.ANSWER_SECONDS

    said, _ = _joins(kai_lab.runtime.kubeconfig(), home)  # the instructor's own: not a class credential
    assert "is not a class credential: its context is" in said, said

    lab_before = sorted(p.name for p in kai_lab.home.iterdir())
    said, _ = _joins(ann_file, kai_lab.home)  # into the instructor's lab folder
    assert "holds a lab of its own" in said, said
    assert sorted(p.name for p in kai_lab.home.iterdir()) == lab_before

    assert joined.join(ann_file, home).learner == "ann"
    said, _ = _joins(bob_file, home)  # over ann's join
    assert f"{home} has joined the class as ann" in said, said

    kai_lab.cli("class", "down", "--learner", "bob", check=True)  # bob's credential revoked
    # The API server keeps a token it accepted for 10 s (kube-apiserver's token cache): 401 after that.
    deadline, attempt = time.monotonic() + 60, 0
    while True:
        attempt += 1
        start = time.monotonic()
        try:
            joined.join(bob_file, tmp_path / f"bob-machine-{attempt}")
        except KailabError as e:
            said, took = e.message, time.monotonic() - start
            break
        assert time.monotonic() < deadline, "bob's revoked credential was still accepted after a minute"
        time.sleep(2)
    assert "no longer accepts bob.kubeconfig (401 Unauthorized)" in said, said
    assert took < joined.ANSWER_SECONDS

    (home / joined.FILE).write_text("{damaged")  # a damaged join: every command says it, down clears it
    env = {**os.environ, "KAILAB_HOME": str(home)}
    status = subprocess.run([sys.executable, "-m", "kailab", "status"], env=env, capture_output=True, text=True)
    assert status.returncode == 1 and "is damaged: it is not JSON" in status.stderr and "kailab down" in status.stderr
    down = subprocess.run([sys.executable, "-m", "kailab", "down"], env=env, capture_output=True, text=True)
    assert down.returncode == 0 and not (home / joined.FILE).exists(), down.stderr
    assert joined.join(ann_file, home).learner == "ann"  # and the folder joins again
