"""The server's one thread between the cluster and the browsers: a page's view made again when its watches change.

A burst of changes is taken once, :data:`Hub.SETTLE` after the first; the view is made again too when the model
says it changes by itself (a lesson becoming stuck, fair shares due); the listeners are told when it is new.
Browsers only read :attr:`Hub.view`: connecting, leaving and coming back costs no thread and no watch."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Protocol

from kailab.kube import wait_until
from kailab.web.watches import Watches


class Model(Protocol):
    """A page's watches and view (kailab/web/models.py)."""

    kind: str
    watches: Watches

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def version(self) -> tuple: ...
    def tick(self, browsing: bool) -> float | None: ...
    def view(self) -> dict: ...


class Hub:
    SETTLE = 0.25  # seconds a burst of changes (a Job's pods) is given to arrive before the view is made again

    def __init__(self, model: Model):
        self.model = model
        self.cond: threading.Condition = model.watches.cond
        self.view: dict = {}
        self.version = 0  # views made that differed from the one before
        self.browsers = 0  # connected now (the app counts them)
        self._listeners: list[Callable[[], object]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kailab-page", daemon=True)

    def listen(self, fn: Callable[[], object]) -> None:
        """Call ``fn()`` (in the hub's thread) each time the view is new."""
        self._listeners.append(fn)

    def start(self) -> None:
        """Start the watches (their first lists: a clear error when the cluster does not answer) and the thread."""
        self.model.start()
        self._make()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self.cond:
            self.cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(10)
        self.model.stop()

    def wake(self) -> None:
        """Look again now (a browser came: fair shares may be due)."""
        with self.cond:
            self.cond.notify_all()

    def _run(self) -> None:
        seen = self.model.version()
        while not self._stop.is_set():
            due = self.model.tick(self.browsers > 0)
            changed = wait_until(self.cond, partial(self._changed, seen), due if due is not None else 30)
            if self._stop.is_set():
                return
            if changed:
                self._stop.wait(self.SETTLE)
            seen = self.model.version()
            self._make()

    def _changed(self, seen: tuple) -> bool:
        return self._stop.is_set() or self.model.version() != seen

    def _make(self) -> None:
        try:
            view = self.model.view()
        except Exception as e:  # noqa: BLE001 (the cluster went away mid-look: said on the page, tried again later)
            from kailab.web.watches import failure_words

            view = {**self.view, "down": failure_words(e)}
        if view != self.view:
            self.view = view
            self.version += 1
            for fn in self._listeners:
                fn()
