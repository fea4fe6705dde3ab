"""One thread reads every watch of the process, a tenth of a second's changes at a time: a selector over their sockets.

A lesson watches four kinds (its pods, events, PodGroups, the lab's Queues) and ``demo all`` side by side runs six
lessons at once: 24 watches. Read each in a thread of its own, each thread woken for every change, the reading cost
more than the changes: on a lab's busy cores a woken thread finds its caches cold. Measured with a local TLS server
streaming 7,200 pod changes over 24 watches in 14 s, through :class:`~kailab.watched.Watched`: 1.2-1.7 s of CPU with
a thread per watch, 0.9 s with this reader; a bare selector loop took 0.95-1.15 s woken for each change, 0.46 s
reading every 0.1 s. In ``demo all`` side by side (with :mod:`kailab.lean_lines`) the lessons' process went from 9.6
to 7.2 s of CPU, the GPU ledger from 2.2 to 1.3 s.

A watch hands its HTTP answer (the client's, its headers read) to :data:`READER`; the reader takes the HTTP chunks
apart, splits the JSON lines and hands each to the watch's ``on_line``. What it cannot read so (an answer not chunked,
compressed, not the client's own, or with no socket under it: a proxy's) :func:`streamable` says no to, and the watch
reads it in its own thread.
"""

from __future__ import annotations

import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable

import urllib3

CADENCE = 0.1  # seconds the reader waits after a round, for what comes meanwhile to be read in the next
_WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class StreamEnded(Exception):
    """The server closed a watch's connection before the end of its answer, or sent what HTTP chunks are not."""


def streamable(answer) -> bool:
    """Whether ``answer`` (a watch's HTTP answer, unread) can be read by the process's reader: the client's own
    answer, chunked and not compressed, over a socket."""
    if type(answer) is not urllib3.HTTPResponse:  # a wrapper's lines may not be the socket's (Watched unwraps its own)
        return False
    headers = answer.headers
    if (headers.get("Transfer-Encoding") or "").lower() != "chunked" or headers.get("Content-Encoding"):
        return False
    return _socket(answer) is not None


def _socket(answer) -> socket.socket | None:
    fp = getattr(getattr(answer, "_fp", None), "fp", None)  # http.client's buffered reader of the connection
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


class Stream:
    """One watch's answer being read: ``on_line(bytes)`` for each line of JSON, then ``on_end(error)`` once — None
    when the server ended the answer (the watch's time was up) or it was stopped, else what went wrong; ``on_line``
    raising ends it too. Only the reader's thread reads, closes and ends it."""

    def __init__(self, answer, on_line: Callable[[bytes], None], on_end: Callable[[BaseException | None], None]):
        self.answer = answer
        self.sock: socket.socket = _socket(answer)  # type: ignore[assignment]
        self._fp = answer._fp.fp
        self._on_line, self._on_end = on_line, on_end
        self._raw = bytearray()  # read, not yet taken apart into chunks
        self._body = bytearray()  # the chunks' data, not yet a whole line
        self._need = 0  # bytes of the current chunk still to come
        self._skip = 0  # bytes of the CRLF after a chunk still to come
        self.ended = False

    def stop(self) -> None:
        """End the reading, from any thread: the reader closes the answer and calls ``on_end(None)``."""
        READER.ask("end", self)

    def begin(self) -> None:
        """Non-blocking from now on; what http.client read past the headers is taken first."""
        self.sock.setblocking(False)
        while not self.ended:
            try:
                got = self._fp.peek()
            except _WOULD_BLOCK:
                return
            if not got:
                return
            self._feed(self._fp.read(len(got)))

    def readable(self) -> None:
        """Read until the socket (and TLS under it) has nothing more, and hand over every whole line."""
        while not self.ended:
            try:
                data = self.sock.recv(262144)
            except _WOULD_BLOCK:
                return
            except OSError as e:
                self.end(e)
                return
            if not data:
                self.end(StreamEnded("The API server closed the watch's connection."))
                return
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        """Take HTTP chunks apart (RFC 9112 7.1: a hex size line, the data, CRLF; size 0 ends the answer)."""
        raw = self._raw
        raw += data
        at = 0
        while at < len(raw):
            if self._need:
                take = raw[at : at + self._need]
                self._body += take
                at += len(take)
                self._need -= len(take)
                if not self._need:
                    self._skip = 2
            elif self._skip:
                n = min(self._skip, len(raw) - at)
                at += n
                self._skip -= n
            else:
                eol = raw.find(b"\n", at)
                if eol < 0:
                    break
                size_line = bytes(raw[at:eol]).split(b";", 1)[0].strip()
                at = eol + 1
                if not size_line:
                    continue
                try:
                    size = int(size_line, 16)
                except ValueError:
                    self.end(StreamEnded(f"A watch's answer is not in HTTP chunks: {size_line[:40]!r}"))
                    return
                if size == 0:  # the last chunk: the server ended the watch
                    self._lines()
                    self.end(None)
                    return
                self._need = size
        del raw[:at]
        self._lines()

    def _lines(self) -> None:
        body = self._body
        start = 0
        try:
            while not self.ended and (eol := body.find(b"\n", start)) >= 0:
                if eol > start:
                    self._on_line(bytes(body[start:eol]))
                start = eol + 1
        except Exception as e:  # noqa: BLE001 - a listener's failure ends the watch, which starts again
            self.end(e)
            return
        del body[:start]

    def end(self, error: BaseException | None) -> None:
        """The reader's only: stop reading the socket, close the answer, tell the watch (once)."""
        if self.ended:
            return
        self.ended = True
        READER.unregister(self)
        try:
            self.answer.close()
            self.answer.release_conn()
        except Exception:  # noqa: BLE001,S110 - closing what is already closed
            pass
        self._on_end(error)


class Reader:
    """The thread that reads every :class:`Stream` of the process; started with the first."""

    THREAD = "kailab-watches"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._selector: selectors.BaseSelector | None = None
        self._wake: socket.socket | None = None
        self._todo: list[tuple[str, Stream]] = []

    def add(self, stream: Stream) -> None:
        """Start reading ``stream``; from any thread."""
        self.ask("add", stream)

    def ask(self, what: str, stream: Stream) -> None:
        """Have the reader's thread ``add`` or ``end`` a stream."""
        with self._lock:
            if self._selector is None:
                self._selector = selectors.DefaultSelector()
                woken, self._wake = socket.socketpair()
                woken.setblocking(False)
                self._selector.register(woken, selectors.EVENT_READ, None)
                threading.Thread(target=self._run, name=self.THREAD, daemon=True).start()
            self._todo.append((what, stream))
            assert self._wake is not None
            self._wake.send(b"\0")

    def unregister(self, stream: Stream) -> None:
        assert self._selector is not None
        try:
            self._selector.unregister(stream.sock)
        except (KeyError, ValueError, OSError):
            pass

    def _run(self) -> None:
        selector = self._selector
        assert selector is not None
        while True:
            for key, _ in selector.select():
                stream = key.data
                if stream is None:
                    self._todos(key.fileobj)  # type: ignore[arg-type]
                elif not stream.ended:
                    try:
                        stream.readable()
                    except Exception as e:  # noqa: BLE001 - a stream's failure is its watch's, never the reader's
                        stream.end(e)
            time.sleep(CADENCE)

    def _todos(self, woken: socket.socket) -> None:
        try:
            while woken.recv(4096):
                pass
        except BlockingIOError:
            pass
        with self._lock:
            todo, self._todo = self._todo, []
        assert self._selector is not None
        for what, stream in todo:
            if what == "end":
                stream.end(None)
            elif not stream.ended:
                try:
                    stream.begin()
                    if not stream.ended:
                        self._selector.register(stream.sock, selectors.EVENT_READ, stream)
                        stream.readable()
                except Exception as e:  # noqa: BLE001 - as in _run
                    stream.end(e)


READER = Reader()
