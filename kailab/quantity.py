"""A Kubernetes quantity ("1", "500m", "1Ti") as a field of a file kailab reads (fleet files, scenario files)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator

QUANTITY = re.compile(r"^\d{1,15}(\.\d{1,9})?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")  # bounded: a number the API server holds


def quantity(text: Any) -> str:
    """``text`` as a quantity string; ValueError, saying what a quantity looks like, when it is not one."""
    if isinstance(text, bool) or not QUANTITY.match(str(text)):
        raise ValueError(f"{text!r} is not a Kubernetes quantity; want one such as 1, 500m or 2")
    return str(text)


Quantity = Annotated[Any, AfterValidator(quantity)]


_SUFFIX = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def amount(text: str) -> float:
    """A quantity (as :func:`quantity` accepts it) as a number: ``"500m"`` → 0.5, ``"1Gi"`` → 1073741824."""
    m = QUANTITY.match(text)
    assert m, text  # checked by quantity() when the file was read
    number = text[: len(text) - len(m.group(2) or "")]
    return float(number) * _SUFFIX[m.group(2) or ""]
