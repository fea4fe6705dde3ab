"""A watch's lines made lean before they are decoded: managedFields cut out, or cut to who wrote the object when.

An object's ``metadata.managedFields`` is half of a pod's JSON and most of its objects — read, kept and freed for
every change — and little of it is read: the GPU ledger reads none of it (:func:`without_managed_fields`), a lesson only its writes' times
(:func:`~kailab.pods.object_time`: :func:`with_write_times`). Both cut the bytes of the line as the API server sends
it, between two markers neither of which can be inside a string (a JSON string escapes its quotes):
- managedFields is the last member of ObjectMeta, which the API server writes in its Go struct's order
  (k8s.io/apimachinery v0.35.4 pkg/apis/meta/v1/types.go, ObjectMeta), and its entries' field sets have no member
  named "spec" (their keys are ``f:``, ``k:``, ``v:``, ``i:`` or "."), so the first ``]},"spec":{`` after it closes
  managedFields, then the metadata;
- an entry (ManagedFieldsEntry) is written manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource.
What is left is the same JSON without that member, or with its entries' manager, operation and time alone. A line
that is not so (no spec after the metadata, a read member after managedFields, an entry without its time) is given
back whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_MANAGED_FIELDS = b',"managedFields":['
_METADATA_END = b']},"spec":{'
# the metadata read from a pod; none of them is ever a member of managedFields
_READ_MEMBERS = (b'"name":"', b'"namespace":"', b'"uid":"', b'"labels":{', b'"annotations":{', b'"ownerReferences":[')
_ENTRY = b'{"manager":"'
_WRITE = re.compile(rb'\{"manager":"((?:[^"\\]|\\.)*)","operation":"(\w*)"(?:,"apiVersion":"[^"]*")?,"time":"([^"]*)"')


def _managed_fields(line: bytes) -> tuple[int, int] | None:
    """Where the managedFields member is in the line: (its start, the end of its array); None when it cannot be cut."""
    start = line.find(_MANAGED_FIELDS)
    if start < 0:
        return None
    end = line.find(_METADATA_END, start)
    if end < 0 or any(line.find(member, start, end) >= 0 for member in _READ_MEMBERS):
        return None
    return start, end + 1


def without_managed_fields(line: bytes) -> bytes:
    """A pod's watch event (one line of JSON) without ``metadata.managedFields`` (the GPU ledger's: no fact comes from
    it). Any other line is given back as it is."""
    cut = _managed_fields(line)
    return line if cut is None else line[: cut[0]] + line[cut[1] :]


def with_write_times(line: bytes) -> bytes:
    """An object's watch event (one line of JSON) with each ``metadata.managedFields`` entry cut to its manager,
    operation and time (a lesson's: the time of an object's newest write is the cluster's time of the change). Any
    other line is given back as it is."""
    cut = _managed_fields(line)
    if cut is None:
        return line
    start, end = cut
    fields = line[start + len(_MANAGED_FIELDS) - 1 : end]
    writes = _WRITE.findall(fields)
    if len(writes) != fields.count(_ENTRY):  # an entry without its time (or not as written above): kept whole
        return line
    kept = b",".join(b'{"manager":"%s","operation":"%s","time":"%s"}' % w for w in writes)
    return line[:start] + b',"managedFields":[' + kept + line[end - 1 :]


def lean_watch(list_fn: Callable, lean: Callable[[bytes], bytes]) -> Callable:
    """A list call whose watch answers with every change's line made lean by ``lean``; its list answers as it is."""

    def call(*args, **kw):
        answer = list_fn(*args, **kw)
        return LeanAnswer(answer, lean) if kw.get("watch") else answer

    return call


class LeanAnswer:
    """A watch's HTTP answer (the client's, unread) whose stream gives each event's line made lean; all else is the
    answer's own (its status, closing it, its connection)."""

    def __init__(self, answer, lean: Callable[[bytes], bytes]):
        self.answer = answer
        self.lean = lean

    def __getattr__(self, name):
        return getattr(self.answer, name)

    def stream(self, *args, **kwargs):
        lean, rest = self.lean, b""
        for chunk in self.answer.stream(*args, **kwargs):
            lines = (rest + (chunk.encode() if isinstance(chunk, str) else chunk)).split(b"\n")
            rest = lines.pop()
            if lines:
                yield b"".join(lean(line) + b"\n" for line in lines)
        if rest:
            yield lean(rest)
