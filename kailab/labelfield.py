"""A Kubernetes label key or value as a field of a file kailab reads (fleet files, scenario files)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, StrictStr

LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_VALUE = 63


def label_key(key: str) -> str:
    """``key`` if it is a valid label or annotation key; else ValueError saying what one looks like."""
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or not LABEL_NAME.match(name):
        raise ValueError(
            f"{key!r} is not a valid label or annotation key (an optional DNS prefix and '/', "
            "then up to 63 letters, digits, '-', '_' or '.')"
        )
    return key


def label_value(value: str) -> str:
    """``value`` if it is a valid label value; else ValueError saying what one looks like."""
    if len(value) > MAX_VALUE or not LABEL_VALUE.match(value):
        raise ValueError(
            f"{value!r} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit (or empty)"
        )
    return value


LabelKey = Annotated[StrictStr, AfterValidator(label_key)]
LabelValue = Annotated[StrictStr, AfterValidator(label_value)]
