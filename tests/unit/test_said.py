"""Paths that used to end in "Unexpected error": each now names the problem and what to do, exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from kailab import cli, evidence, lab
from kailab.commands.lessons import run_and_report
from kailab.errors import KailabError
from kailab.progress import Progress
from kailab.scenarios.engine import failure_text

FORBIDDEN = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "Forbidden",
    "code": 403,
    "message": 'queues.scheduling.run.ai "team-a" is forbidden: User "viewer" cannot patch resource "queues" '
    'in API group "scheduling.run.ai" at the cluster scope',
}


def forbidden() -> ApiException:
    e = ApiException(status=403, reason="Forbidden")
    e.body = json.dumps(FORBIDDEN)
    e.headers = {"Audit-Id": "0123", "X-Kubernetes-Pf-Prioritylevel-Uid": "abc"}
    return e


def test_an_api_server_refusing_writes_says_the_permission_and_no_headers(monkeypatch, capsys):
    def refused():
        raise forbidden()

    monkeypatch.setattr(cli, "app", refused)
    monkeypatch.delenv("KAILAB_DEBUG", raising=False)
    with pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code == 1
    err = capsys.readouterr().err
    assert ("✗ Error: The cluster's API server refused a request: 403 Forbidden: " + FORBIDDEN["message"] + ".") in err
    assert "ask the cluster's admin to grant it" in err
    assert "Unexpected" not in err and "Audit-Id" not in err and "HTTP response headers" not in err


def test_a_scenario_stopped_by_a_refusal_says_it_in_one_line():
    assert failure_text(forbidden()) == "the API server answered 403 Forbidden: " + FORBIDDEN["message"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["version"], ["--help"], ["doctor"]])
def test_output_to_a_full_device_is_said(tmp_path, args):
    env = {**os.environ, "KAILAB_HOME": str(tmp_path / "lab")}
    env.pop("KAILAB_DEBUG", None)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "kailab", *args], stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=60
        )
    assert proc.returncode == 1
    assert proc.stderr.startswith("✗ Error: Cannot write kailab's output: No space left on device.\n"), proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_output_to_a_closed_pipe_ends_quietly(tmp_path):
    env = {**os.environ, "KAILAB_HOME": str(tmp_path / "lab")}
    proc = subprocess.run(
        f"{sys.executable} -m kailab --help | head -c 1",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr and "Unexpected" not in proc.stderr


def snapshot_with_real_writes(kube, home, root, out, fair_shares, namespaces, slice_of=("", "")):
    """evidence.capture without a cluster: the same write, of a one-file snapshot."""
    return evidence.write_snapshot({"report.md": "# report\n"}, [], out or root / "snap")


@pytest.mark.parametrize(
    "out, words",
    [
        ("/dev/null", "Nothing captured: /dev/null exists; a snapshot is never overwritten."),
        ("{tmp}/file/snap", "Nothing captured: cannot write {tmp}/file: a file is in the way."),
        ("/proc/kailab-evidence", "Nothing captured: cannot write /proc/.kailab-evidence."),
    ],
    ids=["dev-null", "under-a-file", "proc"],
)
def test_evidence_out_into_a_place_that_cannot_hold_it(tmp_path, monkeypatch, out, words):
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(evidence, "capture", snapshot_with_real_writes)
    own = lab.OwnLab(tmp_path / "lab")
    own.__dict__.update(state=None, kube=None, view=lab.View())  # a lab without fair shares, its own owner
    with pytest.raises(KailabError) as err:
        own.capture(Progress(quiet=True), "of the lab", out=Path(out.format(tmp=tmp_path)))
    assert err.value.message.startswith(words.format(tmp=tmp_path)), err.value.message
    assert not Path("/proc/kailab-evidence").exists()


def test_a_lab_folder_that_cannot_keep_the_verdict_is_refused_before_the_run(tmp_path, monkeypatch):
    home = tmp_path / "not-a-lab"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    monkeypatch.setenv("KAILAB_HOME", str(home))
    own = lab.Lab.open()
    own.__dict__["kube"] = object()  # a lab answers (KAILAB_KUBECONFIG, say)

    class NoRun:
        def __init__(self, *args, **kwargs):
            raise AssertionError("the run started before the lab folder was checked")

    monkeypatch.setattr("kailab.scenarios.engine.Engine", NoRun)
    with pytest.raises(KailabError) as err:
        run_and_report(own, [], as_json=True, quiet=True)
    assert err.value.message == f"The lab folder {home} already holds files that kailab did not write."
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt"]
