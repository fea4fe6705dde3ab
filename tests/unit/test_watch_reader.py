"""The process's one watch reader, against a real TLS server on this machine's loopback: HTTP chunks cut anywhere,
the server ending a watch, an ERROR line, a stop; what it cannot read goes to the watch's own thread."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from kubernetes import client

from kailab.api_paths import path_lister
from kailab.kube import as_json
from kailab.lean_lines import lean_watch, with_write_times
from kailab.watch_reader import READER, streamable
from kailab.watched import Watched

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


def _pod(name: str, rv: str, managed: bool = False) -> dict:
    meta: dict = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if managed:
        meta["managedFields"] = [
            {
                "manager": "kwok",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-11-24T10:00:05Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {"f:phase": {}}},
            }
        ]
    return {"kind": "Pod", "metadata": meta, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}


def _line(kind: str, obj: dict) -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"


class Server:
    """A TLS server answering lists with ``listing`` and each watch request with the next of ``watches``: a list of
    byte pieces sent one by one (a piece None: the server closes the connection there)."""

    def __init__(self, tmp: Path, listing: dict, watches: list[list[bytes | None]]):
        key, cert = tmp / "key.pem", tmp / "cert.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"]
            + ["-subj", "/CN=127.0.0.1"],
            check=True,
            capture_output=True,
        )
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.listing, self.watches = listing, list(watches)
        self.requests: list[str] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
                conn = self.ctx.wrap_socket(conn, server_side=True)
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        f = conn.makefile("rb")
        while True:
            request = f.readline()
            if not request:
                return
            while f.readline() not in (b"\r\n", b""):
                pass
            path = request.split()[1].decode()
            self.requests.append(path)
            if "watch=true" not in path:
                body = json.dumps(self.listing).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                continue
            pieces = self.watches.pop(0) if self.watches else []
            last = not self.watches
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                for piece in pieces:
                    if piece is None:
                        conn.close()
                        return
                    conn.sendall(piece)
                    time.sleep(0.002)  # each piece a read of its own, mostly
                if last:  # the last watch stays open, as a server's does until its time is up
                    time.sleep(60)
                conn.sendall(b"0\r\n\r\n")  # the server's end of a watch
            except OSError:  # the client closed it (an ERROR line, a stop)
                return


def chunked(data: bytes, size: int) -> bytes:
    return b"".join(
        b"%x\r\n" % len(data[i : i + size]) + data[i : i + size] + b"\r\n" for i in range(0, len(data), size)
    )


def pieces(data: bytes, size: int) -> list[bytes | None]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _api(url: str) -> client.ApiClient:
    cfg = client.Configuration(host=url)
    cfg.verify_ssl = False
    return client.ApiClient(cfg)


def _wait(predicate, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


@pytest.mark.parametrize(("chunk", "piece"), [(7, 5), (100, 3), (1000, 1000), (4096, 11)])
def test_the_reader_hands_over_every_change_however_the_chunks_and_the_reads_are_cut(tmp_path, chunk, piece):
    first = _line("ADDED", _pod("a", "11")) + _line("MODIFIED", _pod("a", "12")) + _line("BOOKMARK", _pod("", "15"))
    second = _line("ADDED", _pod("b", "16")) + _line("DELETED", _pod("a", "17"))
    server = Server(
        tmp_path,
        {"metadata": {"resourceVersion": "10"}, "items": []},
        [pieces(chunked(first, chunk), piece), pieces(chunked(second, chunk), piece)],
    )
    seen: list[tuple[str, str, str]] = []
    w = Watched(as_json(path_lister(_api(server.url), "/api/v1/pods")))
    w.on_change(lambda kind, o: seen.append((kind, o["metadata"]["name"], threading.current_thread().name)))
    w.start()
    try:
        assert _wait(lambda: len(seen) == 4), seen
        assert [s[:2] for s in seen] == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
        assert {s[2] for s in seen} == {READER.THREAD}  # read by the process's reader, not the watch's thread
        assert list(w.objects) == ["ns/b"]
        watches = [r for r in server.requests if "watch=true" in r]
        assert "resourceVersion=10" in watches[0] and "resourceVersion=15" in watches[1]  # on from the bookmark
        assert sum("watch=true" not in r for r in server.requests) == 1  # the server's end: no second list
    finally:
        started = time.monotonic()
        w.stop()
    assert not w._thread.is_alive() and time.monotonic() - started < 2


def test_an_error_line_or_a_dropped_connection_lists_again(tmp_path):
    gone = b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}\n'
    server = Server(
        tmp_path,
        {"metadata": {"resourceVersion": "10"}, "items": [_pod("a", "10")]},
        [
            pieces(chunked(_line("MODIFIED", _pod("a", "11")) + gone, 64), 50),
            pieces(chunked(_line("MODIFIED", _pod("a", "12")), 64), 50) + [None],  # the connection dropped
            [],
        ],
    )
    seen: list[str] = []
    w = Watched(as_json(path_lister(_api(server.url), "/api/v1/pods")))
    w.on_change(lambda kind, o: seen.append(f"{kind} {o['metadata']['resourceVersion']}"))
    w.start()
    try:
        assert _wait(lambda: sum("watch=true" not in r for r in server.requests) == 3), server.requests
        assert _wait(lambda: len(seen) == 5), seen
        # the list's pod, the watch's change; after the 410, the list's version again (10): told as changed back
        assert seen == ["ADDED 10", "MODIFIED 11", "MODIFIED 10", "MODIFIED 12", "MODIFIED 10"]
    finally:
        w.stop()


def test_a_lean_watch_is_read_by_the_reader_with_its_lines_made_lean(tmp_path):
    server = Server(
        tmp_path,
        {"metadata": {"resourceVersion": "10"}, "items": []},
        [pieces(chunked(_line("ADDED", _pod("a", "11", managed=True)), 30), 17)],
    )
    seen: list[tuple[dict, str]] = []
    lister = lean_watch(path_lister(_api(server.url), "/api/v1/pods"), with_write_times)
    w = Watched(as_json(lister))
    w.on_change(lambda kind, o: seen.append((o["metadata"]["managedFields"], threading.current_thread().name)))
    w.start()
    try:
        assert _wait(lambda: len(seen) == 1)
        assert seen == [([{"manager": "kwok", "operation": "Update", "time": "2026-11-24T10:00:05Z"}], READER.THREAD)]
    finally:
        w.stop()


def test_what_the_reader_cannot_take_is_read_in_the_watchs_own_thread():
    class Answer:
        status = 200
        headers = {"Transfer-Encoding": "chunked"}

        def __init__(self):
            self.body = [_line("ADDED", _pod("a", "11"))]

        def stream(self, amt=None, decode_content=True):
            yield from self.body

        def close(self):
            pass

        def release_conn(self):
            pass

    assert not streamable(Answer())  # not the client's own answer
    seen: list[tuple[str, str]] = []
    calls = iter([{"metadata": {"resourceVersion": "10"}, "items": []}, Answer()])
    w = Watched(lambda **kw: next(calls))
    w.on_change(lambda kind, o: (seen.append((kind, threading.current_thread().name)), w._stop.set()))
    w.start()
    try:
        assert _wait(lambda: len(seen) == 1)
        assert seen[0][0] == "ADDED" and seen[0][1] != READER.THREAD
    finally:
        w.stop()
