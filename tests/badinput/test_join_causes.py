"""``kailab join`` says each cause apart, within 10 s: the cluster does not answer; its certificate is not one the
file's authority signed; the token expired; the cluster no longer accepts it; the file is not a class credential, or
another learner's, or another cluster's. Against servers on loopback this test makes (TLS with certificates made by
``openssl``), in this process; a real API server's answers are proved in tests/fleet/test_untrusted_fleet.py."""

from __future__ import annotations

import base64
import http.server
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from kailab.classroom import credentials, joined
from kailab.errors import KailabError

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make certificates")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """Two certificate authorities, and a serving certificate for 127.0.0.1 signed by the first."""
    d = tmp_path_factory.mktemp("pki")
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={ca}",
                 "-keyout", f"{ca}.key", "-out", f"{ca}.crt", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key",
             "-out", "server.csr", cwd=d)  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", "san.ext", "-out", "server.crt", cwd=d)  # fmt: skip
    return {"ca": d / "ca.crt", "other-ca": d / "other-ca.crt", "cert": d / "server.crt", "key": d / "server.key"}


def serve(pki, status: int, body: dict) -> tuple[int, callable]:
    """A TLS server on loopback that answers every request with ``status`` and ``body``; (port, stop)."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki["cert"], pki["key"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()

    def stop():
        server.shutdown()
        server.server_close()

    return server.server_address[1], stop


def jwt(exp: float) -> str:
    def part(d: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part({'exp': int(exp), 'sub': 'x'})}.c2ln"


def credential(tmp_path: Path, port: int, ca: Path, token: str = "tok", learner: str = "ann", name=None) -> Path:
    server = f"https://127.0.0.1:{port}"
    conf = credentials.kubeconfig(
        learner, server, base64.b64encode(ca.read_bytes()).decode(), token, name or f"kailab-class@127.0.0.1:{port}"
    )
    path = tmp_path / f"{learner}.kubeconfig"
    path.write_text(yaml.safe_dump(conf))
    return path


def review(user: str) -> dict:
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
        "status": {"userInfo": {"username": user}},
    }


def joins(path: Path, home: Path) -> tuple[str, float]:
    """The message joining gives, and how long it took; nothing remembered."""
    start = time.monotonic()
    with pytest.raises(KailabError) as err:
        joined.join(path, home)
    took = time.monotonic() - start
    assert joined.current(home) is None if home.exists() else True
    return err.value.message, took


def test_a_credential_for_this_class_joins(tmp_path, pki):
    port, stop = serve(pki, 201, review(credentials.username("ann")))
    try:
        j = joined.join(credential(tmp_path, port, pki["ca"]), tmp_path / "home")
    finally:
        stop()
    assert j.learner == "ann" and joined.current(tmp_path / "home") == j


def test_a_certificate_the_files_authority_did_not_sign_is_said_as_such(tmp_path, pki):
    port, stop = serve(pki, 201, review(credentials.username("ann")))
    try:
        said, took = joins(credential(tmp_path, port, pki["other-ca"]), tmp_path / "home")
    finally:
        stop()
    assert said.startswith(f"The server at https://127.0.0.1:{port} presents a certificate that ann.kubeconfig's "
                           "certificate authority does not accept"), said  # fmt: skip
    assert took < joined.ANSWER_SECONDS


def test_an_expired_token_is_said_with_when(tmp_path, pki):
    port, stop = serve(pki, 401, {"kind": "Status", "code": 401})
    try:
        said, _ = joins(credential(tmp_path, port, pki["ca"], token=jwt(time.time() - 3600)), tmp_path / "home")
    finally:
        stop()
    assert said.startswith("ann.kubeconfig's token expired at "), said


def test_a_token_the_cluster_no_longer_accepts_is_said_as_revoked(tmp_path, pki):
    port, stop = serve(pki, 401, {"kind": "Status", "code": 401})
    try:
        said, _ = joins(credential(tmp_path, port, pki["ca"], token=jwt(time.time() + 3600)), tmp_path / "home")
    finally:
        stop()
    assert "no longer accepts ann.kubeconfig (401 Unauthorized)" in said and "revoked" in said, said


def test_another_learners_token_and_a_token_that_is_no_learners_are_said(tmp_path, pki):
    for user, words in (
        (credentials.username("bob"), "it is bob's: it is another learner's credential"),
        ("kubernetes-admin", "kubernetes-admin: not a class credential"),
    ):
        port, stop = serve(pki, 201, review(user))
        try:
            said, _ = joins(credential(tmp_path, port, pki["ca"]), tmp_path / "home")
        finally:
            stop()
        assert said.replace("token as bob's", "it is bob's").endswith(f"{words}."), said


def test_a_file_made_for_another_clusters_class_is_said(tmp_path, pki):
    said, _ = joins(credential(tmp_path, 1, pki["ca"], name="kailab-class@10.0.0.9:6443"), tmp_path / "home")
    assert "was made for the class at 10.0.0.9:6443, but names the server https://127.0.0.1:1" in said, said


def test_a_cluster_that_does_not_answer_is_said_within_the_bound(tmp_path, pki):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)  # accepts, never answers
    port = silent.getsockname()[1]
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    try:
        for p, words in ((port, "does not answer"), (closed_port, "refuses connections")):
            said, took = joins(credential(tmp_path, p, pki["ca"]), tmp_path / "home")
            assert words in said and "is the class up" in said, said
            assert took < joined.ANSWER_SECONDS + 1
    finally:
        silent.close()


@pytest.mark.parametrize(
    "user, words",
    [
        ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/touch"}}, "signs in with exec"),
        ({"token": "t", "client-key-data": "eA=="}, "signs in with client-key-data, token"),
        ({}, "signs in with nothing"),
    ],
    ids=["exec-plugin", "client-key", "nothing"],
)
def test_a_credential_that_signs_in_otherwise_is_refused_before_anything_runs(tmp_path, pki, user, words):
    path = credential(tmp_path, 1, pki["ca"])
    conf = yaml.safe_load(path.read_text())
    conf["users"][0]["user"] = user
    path.write_text(yaml.safe_dump(conf))
    said, _ = joins(path, tmp_path / "home")
    assert said == f"{path} is not a class credential: its user {words}; a class credential holds a token only.", said
