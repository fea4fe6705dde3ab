"""A Kubernetes quantity ("1", "500m", "1Ti") as a field of a file kailab reads (fleet files, scenario files)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator

QUANTITY = re.compile(r"^\d+(\.\d+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")


def quantity(text: Any) -> str:
    """``text`` as a quantity string; ValueError, saying what a quantity looks like, when it is not one."""
    if isinstance(text, bool) or not QUANTITY.match(str(text)):
        raise ValueError(f"{text!r} is not a Kubernetes quantity; want one such as 1, 500m or 2")
    return str(text)


Quantity = Annotated[Any, AfterValidator(quantity)]
