"""Inputs outside the project's own corpus: text that looks like Rich markup, files that are not files or
never end, YAML that expands or nests without end, kubeconfigs that lead nowhere. Each gets its one message
— no traceback, no hang (every server here is on loopback and every loop is bounded)."""

from __future__ import annotations

import http.server
import io
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from cli_run import kailab  # tests/unit/cli_run.py: the command line in this process
from rich.console import Console
from test_bad_inputs import kailab_process  # tests/unit/test_bad_inputs.py

from kailab import render
from kailab.errors import KailabError, ScenarioError
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.kubeconfig import EXEC_TIMEOUT
from kailab.progress import Progress
from kailab.scenarios.engine import Engine
from kailab.scenarios.loader import load_queue_file, load_scenario
from kailab.scenarios.replay import ReplayCluster
from kailab.userfile import MAX_BYTES
from kailab.yamlfile import MAX_DEPTH, MAX_VALUES

MARKUP = "[bold]x[/] [/] [red]y[/red] [link=http://e]z"

# -- user text is never markup -----------------------------------------------------------------------------------


def markup_scenario(folder: Path) -> Path:
    """A scenario whose every free-text field (title, step note, expectation title) and file name holds markup."""
    folder.mkdir(parents=True)
    path = folder / "[red]s[bold].yaml"
    path.write_text(f"""name: marked
title: "{MARKUP}"
queues: [{{name: q}}]
workloads: [{{name: w, queue: q, pods: 1, gpus: 1}}]
steps:
  - apply: w
  - wait:
      - queue: q
        title: "wait {MARKUP}"
        running: 1
    note: "note {MARKUP}"
    timeout: 5s
  - expect:
      - queue: q
        title: "expect {MARKUP}"
        running: 1
    timeout: 5s
""")
    return path


def test_markup_in_every_field_a_user_writes_is_printed_as_it_is(tmp_path, monkeypatch):
    path = markup_scenario(tmp_path / "[bold]folder[" / "]")  # a path that reads [bold]folder[/]
    scenario = load_scenario(path)
    err, out = io.StringIO(), io.StringIO()
    progress = Progress(console=Console(file=err, markup=False, width=300))
    verdict = Engine(ReplayCluster([], node_gpus=[8]), progress).run(scenario)  # nothing ever runs: the wait fails
    monkeypatch.setattr(render, "stdout", Console(file=out, markup=False, width=300))
    render.print_verdicts([verdict], as_json=False)
    assert f"✗ Wait: note {MARKUP} — not reached within 5s — seen wait {MARKUP}: 0" in err.getvalue(), err.getvalue()
    assert "✓ Wait" not in err.getvalue()  # a wait that did not hold is never ✓
    assert f"{MARKUP} — FAIL" in out.getvalue() and f"wait: wait {MARKUP}" in out.getvalue(), out.getvalue()


def test_markup_in_file_and_folder_names_on_the_command_line(tmp_path):
    folder = tmp_path / "[bold]lab[" / "]"  # a path that reads [bold]lab[/]
    folder.mkdir(parents=True)
    bad = folder / "[red]bad.yaml"
    bad.write_text("name: [/]\n")
    proc = kailab("run", str(bad), home=tmp_path / "home")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"✗ Error: {bad}:1: " in proc.stderr, proc.stderr
    proc = kailab("run", str(folder / "[red]none[/red].yaml"), home=tmp_path / "home")
    assert proc.returncode == 1
    assert f"Cannot read {folder}/[red]none[/red].yaml: No such file or directory." in proc.stderr, proc.stderr


# -- only regular files, only so much -------------------------------------------------------------------------------

LOADERS = [
    ("scenario", load_scenario, ScenarioError),
    ("fleet", load_fleet, KailabError),
    ("queue file", load_queue_file, ScenarioError),
]


def special(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A path that is not a regular file, and what kailab must call it."""
    if kind == "fifo":
        path = tmp_path / "f.yaml"
        os.mkfifo(path)  # no writer: opening it for reading would wait for ever
        return path, "a named pipe (FIFO)"
    if kind == "folder":
        (tmp_path / "d.yaml").mkdir()
        return tmp_path / "d.yaml", "a folder"
    if kind == "socket":
        path = tmp_path / "s.yaml"
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        return path, "a socket"
    return Path("/dev/zero"), "a character device"  # an endless read


def ends(call, *args):
    """Call in a thread and return (or raise) what it does; a call still running after a minute fails the test.

    A hang guard, not a speed target: speed lives in bench/.
    """
    out: dict = {}

    def run():
        try:
            out["value"] = call(*args)
        except BaseException as exc:  # handed to the test below
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), f"{call.__name__} was still running after 60 s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


@pytest.mark.parametrize("what, load, error", LOADERS, ids=[w for w, _, _ in LOADERS])
@pytest.mark.parametrize("kind", ["fifo", "folder", "socket", "device"])
def test_only_regular_files_are_read(tmp_path, what, load, error, kind):
    path, called = special(tmp_path, kind)
    with pytest.raises(error) as err:
        ends(load, path)
    assert err.value.message == f"Cannot read {path}: it is {called}; kailab reads only regular files."


@pytest.mark.parametrize("what, load, error", LOADERS, ids=[w for w, _, _ in LOADERS])
def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path, what, load, error):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: nothing written
    with pytest.raises(error) as err:
        load(path)
    assert err.value.message == f"Cannot read {path}: it is larger than 4 MiB, the most kailab reads from one file."


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)
)


@pytest.mark.parametrize("what, load, error", LOADERS, ids=[w for w, _, _ in LOADERS])
@pytest.mark.parametrize(
    "text, line, words",
    [
        (
            LAUGHS,
            1,
            f"aliases (*name) expand this document to more than {MAX_VALUES:,} values; kailab reads at most that many",
        ),
        (
            "a: " + "[" * 5000 + "]" * 5000 + "\n",
            1,
            f"nested more than {MAX_DEPTH} levels deep; kailab reads at most {MAX_DEPTH}",
        ),
        ("".join("  " * i + f"k{i}:\n" for i in range(100)), MAX_DEPTH, f"nested more than {MAX_DEPTH} levels deep"),
        ("a: &a [*a]\n", 1, "an alias (*name) refers to the node it is inside, which would never end"),
        (
            "l0: &l0 [x]\n" + "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, 80)),
            1,
            f"aliases (*name) nest this document more than {MAX_DEPTH} levels deep",
        ),
    ],
    ids=["billion-laughs", "deep-flow", "deep-block", "alias-cycle", "alias-chain"],
)
def test_yaml_that_expands_or_nests_without_end_fails_fast_and_never_prints_it(
    tmp_path, what, load, error, text, line, words
):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    assert len(LAUGHS) < 600
    with pytest.raises(error) as err:
        ends(load, path)
    assert err.value.message.startswith(f"{path}:{line}: {words}"), err.value.message
    assert len(err.value.message) < 300  # the expansion is never in the message


# -- kubeconfigs that lead nowhere ----------------------------------------------------------------------------------


def kubeconfig(
    tmp_path: Path, server: str, cluster: str = ", insecure-skip-tls-verify: true", user: str = "{token: t}"
) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"{cluster}}}}}]
users: [{{name: u, user: {user}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    return path


@pytest.fixture
def silent_server():
    """A loopback port that accepts connections and never says a word (for at most 60 s)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    s.settimeout(0.2)
    stop, held = threading.Event(), []

    def accept():
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                held.append(s.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield s.getsockname()[1]
    stop.set()
    t.join(2)
    for c in held:
        c.close()
    s.close()


@pytest.fixture
def plain_http_server():
    """A loopback HTTP server (no TLS) that answers 404 to everything."""

    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_server_that_never_answers_is_said(tmp_path, silent_server):
    kube = Kube(kubeconfig(tmp_path, f"https://127.0.0.1:{silent_server}"))
    said = ends(kube.probe)
    assert said == f"the API server at https://127.0.0.1:{silent_server} does not answer within 3s"


def test_an_adopted_cluster_that_never_answers_ends_up_in_one_message(tmp_path, silent_server):
    path = kubeconfig(tmp_path, f"https://127.0.0.1:{silent_server}")
    proc = kailab_process(
        "up", "--runtime", "existing", "--kubeconfig", str(path), home=tmp_path / "lab"
    )  # a hang fails
    assert proc.returncode == 1 and proc.stderr.count("✗ Error:") == 1, proc.stderr
    assert (
        f"Cannot use the kubeconfig {path}: the API server at https://127.0.0.1:{silent_server} does not answer "
        "within 3s." in proc.stderr
    ), proc.stderr


def test_a_credential_plugin_that_never_returns_is_stopped_and_said(tmp_path, silent_server):
    plugin = tmp_path / "login.sh"
    plugin.write_text(f"#!/bin/sh\necho started > {tmp_path}/ran\nexec sleep 600\n")
    plugin.chmod(0o755)
    path = kubeconfig(
        tmp_path,
        f"https://127.0.0.1:{silent_server}",
        user=f"{{exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: {plugin}}}}}",
    )
    start = time.monotonic()
    with pytest.raises(KailabError) as err:
        Kube(path)
    assert time.monotonic() - start < EXEC_TIMEOUT + 60  # stopped, not waited out: the plugin sleeps 600 s
    assert err.value.message == f"The kubeconfig {path}'s credential plugin failed: {plugin} did not answer within 6s."
    assert (tmp_path / "ran").exists()  # it did run, and was stopped


def test_a_credential_plugin_that_fails_is_said(tmp_path):
    plugin = tmp_path / "login.sh"
    plugin.write_text("#!/bin/sh\necho 'token expired: log in again' >&2\nexit 3\n")
    plugin.chmod(0o755)
    path = kubeconfig(
        tmp_path,
        "https://127.0.0.1:1",
        user=f"{{exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: {plugin}}}}}",
    )
    with pytest.raises(KailabError) as err:
        Kube(path)
    assert err.value.message == (
        f"The kubeconfig {path}'s credential plugin failed: process returned 3. token expired: log in again."
    )


def test_tls_that_fails_is_named_as_tls(tmp_path, plain_http_server):
    kube = Kube(kubeconfig(tmp_path, f"https://127.0.0.1:{plain_http_server}", cluster=""))
    why = kube.probe()
    assert why.startswith(f"the API server at https://127.0.0.1:{plain_http_server} fails TLS ("), why
    assert why.endswith("check the kubeconfig's certificate-authority data and server name")


def test_a_port_nobody_listens_on_is_said(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    kube = Kube(kubeconfig(tmp_path, f"https://127.0.0.1:{port}"))
    assert kube.probe() == f"the API server at https://127.0.0.1:{port} refuses connections (is the cluster running?)"


@pytest.mark.parametrize(
    "write, words",
    [
        (
            lambda p: p.write_text("- a\n- b\n"),
            "{p}:1: a kubeconfig is a mapping (apiVersion, clusters, contexts, users), not a list",
        ),
        (lambda p: p.write_text("clusters: [a\n"), "{p}:1: not valid YAML: "),
        (lambda p: p.write_bytes(bytes(range(256))), "{p} is not a text file"),
        (lambda p: p.mkdir(), "Cannot read {p}: it is a folder; kailab reads only regular files."),
        (lambda p: os.mkfifo(p), "Cannot read {p}: it is a named pipe (FIFO); kailab reads only regular files."),
        (
            lambda p: kubeconfig(p.parent, "127.0.0.1 6443").rename(p),
            "The kubeconfig {p} names the server '127.0.0.1 6443', which is not a URL.",
        ),
        (
            lambda p: kubeconfig(
                p.parent, "https://127.0.0.1:1", cluster=", certificate-authority-data: '!!!bad'"
            ).rename(p),
            "The kubeconfig {p} holds data that is not valid base64 (certificate-authority-data, client-certificate-data or "
            "client-key-data)",
        ),
    ],
    ids=["yaml-list", "garbage-yaml", "binary", "folder", "fifo", "server-not-a-url", "bad-base64"],
)
def test_a_kubeconfig_that_cannot_be_used_is_named_as_what_it_is(tmp_path, write, words):
    path = tmp_path / "config"
    write(path)
    with pytest.raises(KailabError) as err:
        ends(Kube, path)
    assert err.value.message.startswith(words.format(p=path)), err.value.message
