"""A scenario file's values: names, counts, durations and the bounds an expectation wants, each checked once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

_N = r"\d+(?:\.\d+)?"
_BOUND = re.compile(rf"^\s*(?:(>=|<=|>|<|==)?\s*({_N})|({_N})\s*\.\.\s*({_N}))\s*$")


@dataclass(frozen=True)
class Bound:
    """The count an expectation wants: exactly 8, ``">=8"``, ``"<=8"``, ``">8"``, ``"<8"`` or ``"8..12"``.

    Numbers may have decimals (GPUs allocated to fractional pods: ``"1.5"``).
    """

    op: str
    low: float
    high: float | None = None

    @classmethod
    def parse(cls, text: str) -> Bound:
        m = _BOUND.match(text)
        if not m:
            raise ValueError(f"{text!r} is not a count; want 8, >=8, <=8, >8, <8 or 8..12")
        if m.group(3) is not None:
            low, high = _number(m.group(3)), _number(m.group(4))
            if low > high:
                raise ValueError(f"{text!r} is an empty range; write the smaller number first ({high}..{low})")
            return cls("..", low, high)
        return cls(m.group(1) or "==", _number(m.group(2)))

    def holds(self, value: float) -> bool:
        a, b = self.low, self.high
        return {
            "==": value == a,
            ">=": value >= a,
            "<=": value <= a,
            ">": value > a,
            "<": value < a,
            "..": b is not None and a <= value <= b,
        }[self.op]

    def __str__(self) -> str:
        a = f"{self.low:g}"
        if self.op == "..":
            return f"{a} to {self.high:g}"
        return {"==": a, ">=": f"≥ {a}", "<=": f"≤ {a}", ">": f"> {a}", "<": f"< {a}"}[self.op]


def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() else value


DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
MAX_PODS = 1000  # per workload: the lab's fleets hold dozens; `kailab bench` is for thousands
MAX_SECONDS = 3600  # a sleep, timeout, hold or completeAfter: a lesson takes seconds, an hour is a mistake
MAX_NAME = 63  # a Kubernetes name that is also a label value or a DNS label

Name = Annotated[StrictStr, Field(pattern=DNS_LABEL, max_length=MAX_NAME)]
RESOURCE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)?$")


def _resource_name(text: str) -> str:
    if not RESOURCE_NAME.match(text):
        raise ValueError(
            f"{text!r} is not a resource a ResourceQuota limits; want one such as pods, requests.cpu or "
            "requests.nvidia.com/gpu"
        )
    return text


ResourceName = Annotated[StrictStr, AfterValidator(_resource_name)]  # a ResourceQuota's key
Count = Annotated[StrictInt, Field(ge=0, le=MAX_PODS)]


def seconds(text: Any) -> float:
    """``"30s"`` / ``"500ms"`` / ``"2m"`` / ``5`` → seconds, at most an hour."""
    m = DURATION.match(str(text)) if not isinstance(text, bool) else None
    if not m:
        raise ValueError(f"{text!r} is not a duration; want one such as 30s, 500ms or 2m")
    number, unit = float(m.group(1)), m.group(2) or "s"
    value = number / 1000 if unit == "ms" else number * 60 if unit == "m" else number
    if value > MAX_SECONDS:
        raise ValueError(
            f"{text!r} is {value:g} seconds; kailab waits at most 1h ({MAX_SECONDS}s): a lesson takes seconds"
        )
    return value


def _go_duration(text: Any) -> str:
    if not isinstance(text, str) or not GO_DURATION.match(text):
        raise ValueError(f"{text!r} is not a duration KAI reads; want one such as 30s, 5m or 1h30m")
    return text


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_seconds(text: str) -> float:
    """A Go duration that GO_DURATION accepts (``15s``, ``1m30s``) → seconds."""
    return sum(float(n) * _GO_UNITS[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


def _signed_go_duration(text: Any) -> str:
    """A Go duration that may be negative (KAI reads a negative staleness grace period as "never evict")."""
    if not isinstance(text, str) or not GO_DURATION.match(text.removeprefix("-")):
        raise ValueError(f"{text!r} is not a duration KAI reads; want one such as 30s, 5m, 1h30m (or -1s: never)")
    return text


def _bound(value: Any) -> Bound:
    if isinstance(value, Bound):
        return value
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a count; want 8, >=8, <=8, >8, <8 or 8..12")
    return Bound.parse(str(value))


def _whole_bound(value: Any) -> Bound:
    bound = _bound(value)
    if any(n is not None and not float(n).is_integer() for n in (bound.low, bound.high)):
        raise ValueError(f"{value!r} — this counts pods or nodes: want a whole number (8, >=8, 8..12)")
    return bound


Seconds = Annotated[StrictInt | StrictFloat | StrictStr, AfterValidator(seconds)]
GoDuration = Annotated[Any, AfterValidator(_go_duration)]
SignedGoDuration = Annotated[Any, AfterValidator(_signed_go_duration)]
Want = Annotated[Any, AfterValidator(_bound)]  # a count that may have decimals (GPUs)
WholeWant = Annotated[Any, AfterValidator(_whole_bound)]  # a count of pods or nodes
Number = StrictInt | StrictFloat


class FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _amount(value: float) -> float:
    if value < 0 and value != -1:
        raise ValueError(f"{value!r} — want a number ≥ 0, or -1 for unlimited")
    return value


Amount = Annotated[Number, AfterValidator(_amount)]


def _gpus(value: float) -> float:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= 64:
        return value
    if isinstance(value, float) and 0 < value < 1:
        return value
    raise ValueError(f"{value!r} — want whole GPUs (0 to 64) or a fraction of one GPU (0.5)")


Gpus = Annotated[Number, AfterValidator(_gpus)]
UNLIMITED = -1


def exactly_one(model: Any, words: tuple[str, ...], what: str) -> None:
    """``model`` (a step, a prediction) has exactly one of ``words``; else the error says which it has."""
    given = [w for w in words if getattr(model, w) is not None]
    if len(given) != 1:
        raise ValueError(
            f"{what} needs exactly one of {', '.join(words)}" + (f"; this one has {', '.join(given)}" if given else "")
        )
