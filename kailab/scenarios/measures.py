"""The measures a wait or expect step's condition may name, and the conditions made of them.

:data:`MEASURES`: each measure's key, value and verdict row's title; the conditions' shape is made from them. A
measure's check is in ``kailab/checks.py``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictBool, StrictInt, StrictStr, Tag, create_model, model_validator

from kailab.labelfield import LabelKey
from kailab.scenarios.values import FileModel, Name, Seconds, Want, WholeWant


class DomainsFile(FileModel):
    """How many values of a node label (racks, zones) a scope's bound pods are on: ``{label: rack-key, count: 1}``."""

    label: LabelKey
    count: WholeWant

    def __str__(self) -> str:
        c = self.count
        count = f"{c.low:g}..{c.high:g}" if c.op == ".." else f"{'' if c.op == '==' else c.op}{c.low:g}"
        return f"{self.label}={count}"


class PodGroupFieldFile(FileModel):
    """A PodGroup field's value, e.g. ``{path: spec.preemptibility, equals: preemptible}``."""

    path: Annotated[StrictStr, Field(pattern=r"^(spec|status|metadata)(\.[A-Za-z][A-Za-z0-9]*)+$")]
    equals: StrictStr | StrictInt | StrictBool

    def __str__(self) -> str:
        return f"{self.path}={str(self.equals).lower() if isinstance(self.equals, bool) else self.equals}"


class PodGroupReasonFile(FileModel):
    """A reason KAI gives in a PodGroup's ``status.schedulingConditions`` (and words its message holds)."""

    reason: Annotated[StrictStr, Field(pattern=r"^[A-Za-z][A-Za-z0-9]*$")]
    message: StrictStr | None = None

    def __str__(self) -> str:
        return self.reason + (f": {self.message}" if self.message else "")


# -- measures ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """One measure a condition may name: its key, what it holds, and the verdict row it makes."""

    word: str  # the file's key
    value: Any  # what the file may give; Want or WholeWant: a count, checked against a Bound
    # The row's title: a format of ``who`` it is about, ``want`` (the wanted value as text) and ``value`` (as the file
    # gave it, e.g. ``{value.path}``); a dict: one such title per wanted text.
    title: str | dict[str, str]
    about: str = ""  # "workload" or "queue": the scope it needs
    needs: str = ""  # what it needs of a cluster (model.ABILITIES)
    short: str = ""  # another key for the same measure

    @property
    def name(self) -> str:
        """The measure in the verdict (a check's ``measure``) and in kailab/checks.py: the key in snake case."""
        return re.sub("([A-Z])", lambda c: "_" + c[1].lower(), self.word)

    @property
    def counted(self) -> bool:
        """A count, compared with a Bound (the rest are properties with a text)."""
        return self.value is Want or self.value is WholeWant

    def want(self, value: Any, raw: Any) -> str:
        """The wanted value as text: a count as the file wrote it, ``true``, or the property's text."""
        return str(raw) if self.counted else str(value).lower() if isinstance(value, bool) else str(value)

    def titled(self, who: str, want: str, value: Any) -> str:
        title = self.title[want] if isinstance(self.title, dict) else self.title
        return title.format(who=who, want=want, value=value)


MEASURES = (
    Measure("pods", WholeWant, "{who}: pods that exist"),
    Measure("running", WholeWant, "{who}: pods Running"),
    Measure("pending", WholeWant, "{who}: pods Pending"),
    Measure("bound", WholeWant, "{who}: pods bound to a node"),
    Measure("evicted", WholeWant, "{who}: pods evicted or preempted"),
    Measure("allocated", Want, "{who}: GPUs allocated", short="gpus"),
    Measure("unschedulable", WholeWant, "{who}: pods marked unschedulable"),
    Measure("nodes", WholeWant, "{who}: nodes its bound pods are on"),
    Measure("fractionGpus", WholeWant, "{who}: GPUs its fractions are on"),
    Measure("fairShare", Want, "{who}: fair share of GPUs (KAI's)", about="queue", needs="fair-share"),
    Measure(
        "placement",
        Literal["distinct", "oneNode"],
        {"distinct": "{who}: pods on distinct nodes", "oneNode": "{who}: pods all on one node"},
    ),
    Measure("allOrNone", Literal[True], "{who}: gang binds all or none", about="workload"),
    Measure("reason", StrictStr, "{who}: reason given for waiting"),
    Measure("notReason", StrictStr, "{who}: reason given does not mention"),
    Measure("boundBefore", Name, "{who} bound before {want}", about="workload"),
    Measure("podGroupField", PodGroupFieldFile, "{who}: PodGroup {value.path}", about="workload"),
    Measure("domains", DomainsFile, "{who}: values of {value.label} its pods are on"),
    Measure("schedulingCondition", StrictStr, "{who}: PodGroup has scheduling condition", about="workload"),
    Measure("noSchedulingCondition", StrictStr, "{who}: PodGroup has no scheduling condition", about="workload"),
    Measure("podGroupReason", PodGroupReasonFile, "{who}: PodGroup says {value.reason}", about="workload"),
    Measure("podGroupAnnotation", LabelKey, "{who}: PodGroup annotated {want}", about="workload"),
    Measure("podGroups", WholeWant, "{who}: PodGroups KAI made for it", about="workload"),
    Measure("onNodeWith", Name, "{who} on a node with {want}", about="workload"),
    Measure(
        "queueExists",
        StrictBool,
        {"true": "{who}: Queue object exists", "false": "{who}: Queue object does not exist"},
        about="queue",
    ),
    Measure("queueAllocated", Want, "{who}: GPUs allocated (Queue status)", about="queue"),
)
MEASURE_OF_KEY = {key: m for m in MEASURES for key in (m.word, m.short) if key}  # file key → measure
MEASURE_NAMED = {m.name: m for m in MEASURES}  # verdict name → measure
_NEEDS_SCOPE = {
    "workload": "{word} is about one workload: add 'workload: NAME'",
    "queue": "{word} is a queue's: add 'queue: NAME'",
}


class WindowFile(FileModel):
    """A window KAI measures on each PodGroup of a workload, which a condition must hold through (``throughWindow``):
    its queue's reclaimMinRuntime or preemptMinRuntime (from the PodGroup's last start), its preemptionDelay (from
    the PodGroup's creation or last eviction), its stalenessGracePeriod (from when KAI marked it stale)."""

    workload: Name
    kind: Literal["reclaimMinRuntime", "preemptMinRuntime", "preemptionDelay", "stalenessGracePeriod"]


class _Condition(FileModel):
    """One condition of a wait or expect step: a scope and one or more measures (the fields MEASURES adds)."""

    queue: Name | None = None
    workload: Name | None = None
    node: Name | None = None
    subGroup: Name | None = None
    title: StrictStr | None = None
    stable: Seconds | None = None
    notBefore: Seconds | None = None  # it may first hold no earlier than this long after the last changing step
    within: Seconds | None = None  # it must first hold within this long after the last changing step
    throughWindow: WindowFile | None = None  # it must keep holding until this window of KAI's ends

    @model_validator(mode="before")
    @classmethod
    def _short_keys(cls, data: Any) -> Any:
        # A measure's short key (``gpus`` for ``allocated``) is the same measure.
        if isinstance(data, dict):
            for m in MEASURES:
                if m.short and m.short in data:
                    if m.word in data:
                        raise ValueError(f"give {m.word} or {m.short}, not both")
                    data = {(m.word if k == m.short else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _one_measure(self):
        if not any(getattr(self, m.word) is not None for m in MEASURES):
            raise ValueError("a condition needs a measure: " + ", ".join(m.word for m in MEASURES))
        for m in MEASURES:
            if m.about and getattr(self, m.word) is not None and getattr(self, m.about) is None:
                raise ValueError(_NEEDS_SCOPE[m.about].format(word=m.word))
        if self.subGroup is not None and not self.workload:
            raise ValueError("subGroup names a subgroup of one workload: add 'workload: NAME'")
        if self.notBefore is not None and self.within is not None and self.notBefore > self.within:
            raise ValueError(
                f"notBefore ({self.notBefore:g}s) is after within ({self.within:g}s): nothing could hold in between"
            )
        if self.stable is not None and self.throughWindow is not None:
            raise ValueError(
                "give stable (seconds) or throughWindow (until a window of KAI's ends), not both: "
                "a window is timed by the cluster's clock"
            )
        return self


# The models below get one field per declared word, made at import time. A type checker cannot see fields made
# that way: to it each model is its base class (which it is), and a word's field reads as an unknown attribute.
_measure_fields: dict[str, Any] = {m.word: (m.value | None, None) for m in MEASURES}
if TYPE_CHECKING:
    ConditionFile = _Condition
else:
    ConditionFile = create_model("ConditionFile", __base__=_Condition, **_measure_fields)


class EitherFile(FileModel):
    """An either-or claim: it holds when every measure of one of its conditions holds."""

    anyOf: list[ConditionFile]
    title: StrictStr | None = None
    stable: Seconds | None = None

    @model_validator(mode="after")
    def _two_or_more(self):
        if len(self.anyOf) < 2:
            raise ValueError("anyOf needs two or more conditions (for one, write the condition itself)")
        return self


def _either_or_not(value: Any) -> str:
    return "either" if isinstance(value, dict) and "anyOf" in value else "condition"


OneCondition = Annotated[
    Annotated[ConditionFile, Tag("condition")] | Annotated[EitherFile, Tag("either")],
    Discriminator(_either_or_not),
]


def _one_or_many(value: Any) -> str:
    return "many" if isinstance(value, list) else "one"


Conditions = Annotated[
    Annotated[OneCondition, Tag("one")] | Annotated[list[OneCondition], Tag("many")],
    Discriminator(_one_or_many),
]
