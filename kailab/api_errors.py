"""A failed request to the API server in one line: no answer, refused, failed TLS, or the server's own message."""

from __future__ import annotations

import json
import ssl
from typing import TYPE_CHECKING

import urllib3

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

PROBE_TIMEOUT = (3.0, 3.0)  # connect, read: does the API server answer at all (no retries)


def no_answer(e: Exception) -> str:
    """What a failed request says about the server: "does not answer within 3s", "refuses connections"..."""
    reason = getattr(e, "reason", None) or e
    chain = [reason, *(x for x in (getattr(reason, "__cause__", None), getattr(reason, "__context__", None)) if x)]
    if any(isinstance(x, (ssl.SSLError, urllib3.exceptions.SSLError)) for x in chain):
        return tls_failed(str(reason))
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return "has a host name that does not resolve"
    if any(isinstance(x, ConnectionRefusedError) for x in chain) or "Connection refused" in str(reason):
        return "refuses connections (is the cluster running?)"
    if isinstance(reason, (urllib3.exceptions.TimeoutError, TimeoutError)) or "timed out" in str(reason):
        return f"does not answer within {PROBE_TIMEOUT[1]:.0f}s"
    return f"cannot be reached ({type(reason).__name__}: {str(reason)[:200]})"


def api_error_words(e: ApiException) -> str:
    """An API error in one line: status, reason and the server's own message (which, for 403, names the verb,
    resource and API group the user may not use) — never the response's headers."""
    try:
        message = json.loads(e.body).get("message") if e.body else None
    except (ValueError, AttributeError):
        message = None
    reason = " ".join(str(e.reason or "").split())[:200]
    return f"{e.status} {reason}" + (f": {str(message)[:400]}" if message else "")


def tls_failed(detail: str) -> str:
    """A TLS failure, and what to check."""
    return f"fails TLS ({detail.strip()[:200]}): check the kubeconfig's certificate-authority data and server name"
