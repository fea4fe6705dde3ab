"""A live cache of one kind of object, kept by a list and then a watch: :class:`Watched`.

Its changes are read by the process's one watch reader (:mod:`kailab.watch_reader`) when its list call answers with
the API's JSON; else (the client's typed objects, an answer the reader cannot take) in the watch's own thread.
"""

from __future__ import annotations

import inspect
import json
import pydoc
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import watch
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from kailab.errors import NotRunning
from kailab.lean_lines import LeanAnswer
from kailab.waiting import TimedOut
from kailab.watch_reader import READER, Stream, streamable


def _identity(obj) -> tuple[str, str]:
    """("namespace/name", resourceVersion) of a typed client object or a plain dict (custom resources)."""
    if isinstance(obj, dict):
        meta = obj.get("metadata") or {}
        return f"{meta.get('namespace')}/{meta.get('name')}", meta.get("resourceVersion", "")
    return f"{obj.metadata.namespace}/{obj.metadata.name}", obj.metadata.resource_version


def _listing(listing) -> tuple[list, str]:
    """(items, resourceVersion) of a typed list or a plain dict list (custom resources)."""
    if isinstance(listing, dict):
        return listing.get("items") or [], (listing.get("metadata") or {}).get("resourceVersion", "")
    return listing.items, listing.metadata.resource_version


def _event_version(ev: dict) -> str | None:
    """The resourceVersion a watch event carries (a bookmark's too), from its raw JSON."""
    raw = ev.get("raw_object")
    return ((raw.get("metadata") or {}).get("resourceVersion") or None) if isinstance(raw, dict) else None


class Watched:
    """A live cache of one kind, filled by a list and then a watch.

    Listeners (``on_change``) get every change as ``(type, object)``: ADDED, MODIFIED, DELETED.
    After a relist (the first list, or when the watch had to start again) the listeners get
    the difference from what they saw — synthetic ADDED/MODIFIED/DELETED — so a listener's
    picture never silently diverges. ``version`` counts changes (a cheap "anything new?").
    Several Watched may share one ``threading.Condition``, notified on every change.
    """

    FAIL_AFTER = 30.0
    # seconds a watch request asks to stay open before the server ends it and it goes on from where it was (each
    # new request costs both sides a round; a dropped connection is seen at once, as a read that fails)
    WATCH_SECONDS = 300

    def __init__(
        self, list_fn: Callable, namespace: str | None = None, cond: threading.Condition | None = None, **kwargs
    ):
        self._list_fn = list_fn
        self._namespace = namespace
        self._kwargs = kwargs
        self.objects: dict[str, Any] = {}  # what list_fn gives: the client's objects, or dicts
        self.version = 0
        self._cond = cond or threading.Condition()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._listeners: list[Callable[[str, Any], None]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._watch: watch.Watch | None = None  # the client's, for typed objects
        self._answer = None  # a watch's answer read in this watch's thread
        self._stream: Stream | None = None  # a watch's answer read by the process's reader
        self._version: str | None = None  # the last resourceVersion seen: where a new watch goes on from
        self._typed = _gives_typed_objects(list_fn)
        self.error: Exception | None = None  # the last failure of the watch, while it keeps failing
        self._failing_since: float | None = None

    @property
    def cond(self) -> threading.Condition:
        """The condition notified on every change (for :func:`wait_until`)."""
        return self._cond

    def start(self) -> Watched:
        self._thread.start()
        if not self._ready.wait(30):
            raise NotRunning("The API server did not answer a watch within 30s.", hint="See: kailab status") from (
                TimedOut("Not within 30s: a watch's first answer.")
            )
        return self

    def stop(self) -> None:
        """End the watch and wait for its thread: a thread left reading TLS at exit aborts Python."""
        self._stop.set()
        mine = threading.current_thread()
        deadline = time.monotonic() + 5
        while self._thread.is_alive() and time.monotonic() < deadline:
            w, answer, stream = self._watch, self._answer, self._stream
            if w is not None:
                w.stop()  # shuts the socket down, which unblocks the read (once the stream has opened)
            if answer is not None:
                _shut(answer)
            if stream is not None:
                stream.stop()
            if mine is self._thread or mine.name == READER.THREAD:  # from a listener: it ends once this one returns
                return
            self._thread.join(0.05)

    def on_change(self, fn: Callable[[str, Any], None]) -> None:
        """Call ``fn(type, object)`` on every change; add listeners before :meth:`start`."""
        self._listeners.append(fn)

    def check(self) -> None:
        """Raise once the watch has failed without a break for FAIL_AFTER seconds."""
        since = self._failing_since
        if since is not None and time.monotonic() - since > self.FAIL_AFTER:
            raise NotRunning(
                f"Watching the cluster has failed for {self.FAIL_AFTER:.0f}s: "
                f"{type(self.error).__name__}: {str(self.error)[:300]}",
                hint="Is the lab's API server up? See: kailab status",
            )

    def snapshot(self) -> list:
        """The objects as last seen (see :meth:`check`)."""
        self.check()
        with self._cond:
            return list(self.objects.values())

    def _key(self, obj) -> str:
        return _identity(obj)[0]

    def _call(self, **extra):
        if self._namespace is not None:
            return self._list_fn(self._namespace, **self._kwargs, **extra)
        return self._list_fn(**self._kwargs, **extra)

    def _changed(self, kind: str, obj) -> None:
        with self._cond:
            if kind == "DELETED":
                self.objects.pop(self._key(obj), None)
            else:
                self.objects[self._key(obj)] = obj
            self.version += 1
            self._cond.notify_all()
        for fn in self._listeners:
            fn(kind, obj)

    def _relisted(self, items: list) -> None:
        """Tell the listeners how a fresh list differs from what they saw."""
        fresh = {self._key(o): o for o in items}
        for key, old in list(self.objects.items()):
            if key not in fresh:
                self._changed("DELETED", old)
        for key, obj in fresh.items():
            old = self.objects.get(key)
            if old is None:
                self._changed("ADDED", obj)
            elif _identity(old)[1] != _identity(obj)[1]:
                self._changed("MODIFIED", obj)

    def _run(self) -> None:
        """List once, then watch from the list's resourceVersion; a watch the server ends (every WATCH_SECONDS) goes on
        from the last version it saw (bookmarks keep that recent while nothing changes), as an informer does: a relist
        only after an error (the version too old, 410 Gone, included), not on every new request (a full list of every
        pod of the cluster twice a minute, in the GPU ledger, when the requests lasted 30 s)."""
        self._version = None
        while not self._stop.is_set():
            try:
                if self._version is None:
                    listing = self._call()
                    self.error, self._failing_since = None, None
                    items, self._version = _listing(listing)
                    self._relisted(items)
                    self._ready.set()
                if self._stop.is_set():
                    return
                if self._typed:
                    self._follow_typed()
                else:
                    self._follow()
            except Exception as e:  # kept (and raised by check() if it lasts); listed again, then watched
                self._version = None
                self.error = e
                if self._failing_since is None:
                    self._failing_since = time.monotonic()
                with self._cond:
                    self._cond.notify_all()
                if self._stop.wait(0.5):
                    return

    def _follow(self) -> None:
        """One watch request, as the API's JSON, until the server ends it: read by the process's reader, or here."""
        answer = self._call(
            watch=True,
            _preload_content=False,
            resource_version=self._version,
            timeout_seconds=self.WATCH_SECONDS,
            allow_watch_bookmarks=True,
        )
        status = getattr(answer, "status", 200)
        if isinstance(status, int) and not 200 <= status <= 299:
            _close(answer)
            raise ApiException(status=status, reason=getattr(answer, "reason", None))
        inner, lean = (answer.answer, answer.lean) if isinstance(answer, LeanAnswer) else (answer, None)
        if streamable(inner):
            ended = threading.Event()
            why: list[BaseException | None] = []

            def on_end(error: BaseException | None) -> None:
                why.append(error)
                ended.set()

            on_line = self._line if lean is None else (lambda line: self._line(lean(line)))
            stream = self._stream = Stream(inner, on_line, on_end)
            READER.add(stream)
            if self._stop.is_set():
                stream.stop()
            ended.wait()
            self._stream = None
            if why[0] is not None and not self._stop.is_set():
                raise why[0]
            return
        self._answer = answer
        try:
            for line in iter_resp_lines(answer):
                if self._stop.is_set():
                    return
                if line:
                    self._line(line)
        finally:
            self._answer = None
            _close(answer)

    def _line(self, line: bytes | str) -> None:
        """One change of a watch, a line of the API's JSON: a bookmark moves the version on; an ERROR raises (410
        Gone: the version is too old, listed again)."""
        ev = json.loads(line)
        kind, obj = ev.get("type"), ev.get("object")
        if kind == "ERROR":
            status = obj if isinstance(obj, dict) else {}
            raise ApiException(status=status.get("code"), reason=f"{status.get('reason')}: {status.get('message')}")
        version = (obj.get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None
        if version:
            self._version = version
        if kind in ("ADDED", "MODIFIED", "DELETED") and not self._stop.is_set():
            self._changed(kind, obj)

    def _follow_typed(self) -> None:
        """One watch request through the client's ``Watch``, which makes its typed objects."""
        w = self._watch = watch.Watch()
        for ev in w.stream(
            self._list_fn,
            *([self._namespace] if self._namespace is not None else []),
            resource_version=self._version,
            timeout_seconds=self.WATCH_SECONDS,
            allow_watch_bookmarks=True,
            **self._kwargs,
        ):
            self._version = _event_version(ev) or self._version
            if self._stop.is_set():
                w.stop()
                break
            if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                self._changed(ev["type"], ev["object"])


def _gives_typed_objects(list_fn: Callable) -> bool:
    """Whether the client's ``Watch`` makes typed objects of a list call's changes: its return annotation, else its
    docstring's ``:return:``, names a list model (as ``Watch.get_return_type`` reads them; an
    :func:`~kailab.kube.as_json` call has neither)."""
    try:
        annotation = inspect.signature(list_fn).return_annotation
    except (TypeError, ValueError):
        annotation = inspect.Signature.empty
    name = "" if annotation is inspect.Signature.empty else getattr(annotation, "__name__", annotation)
    if not name:
        for line in (pydoc.getdoc(list_fn) or "").splitlines():
            if line.startswith(":return:"):
                name = line[len(":return:") :].strip()
    return isinstance(name, str) and name.endswith("List")


def _shut(answer) -> None:
    """Unblock a read of ``answer`` in another thread: its socket shut down (closing it there could hang on TLS)."""
    sock = getattr(getattr(answer, "connection", None), "sock", None)
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _close(answer) -> None:
    try:
        answer.close()
        answer.release_conn()
    except Exception:  # noqa: BLE001,S110 - closing what is already closed
        pass
