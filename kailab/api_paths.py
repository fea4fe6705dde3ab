"""Requests by the API's path, for what the typed client's modules would cost more to import than to use.

CustomObjectsApi's module alone takes 0.3 s to import (pydantic builds a validator for each of its calls), BatchV1Api's
0.1 s; a lesson needs only a few of their calls: its PodGroups' and Queues' list and watch, its namespace's PodGroups
and Jobs deleted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from kubernetes import client
from kubernetes.client.exceptions import ApiException

# The typed client's list arguments → the API's query parameters (what a list or a watch of kailab's asks)
_QUERY = {
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
    "resource_version": "resourceVersion",
    "timeout_seconds": "timeoutSeconds",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "watch": "watch",
    "limit": "limit",
}


# What a GET answers with when only the object's metadata is wanted (the API server's PartialObjectMetadata)
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def api_request(
    api: client.ApiClient,
    method: str,
    path: str,
    query: Sequence = (),
    body: dict | None = None,
    timeout=None,
    accept: str = "application/json",
):
    """One request of the API's ``path`` through the client's connection; the answer, unread (``.data`` reads it),
    or ApiException when the server refuses."""
    headers = {"Accept": accept, **({"Content-Type": "application/json"} if body is not None else {})}
    method, url, headers, body, _ = api.param_serialize(
        method, path, query_params=list(query), header_params=headers, body=body, auth_settings=["BearerToken"]
    )
    answer = api.call_api(method, url, header_params=headers, body=body, _request_timeout=timeout)
    if not 200 <= answer.status <= 299:
        answer.read()
        raise ApiException.from_response(http_resp=answer, body=None, data=None)
    return answer.response


def path_lister(api: client.ApiClient, path: str) -> Callable:
    """A list call of the API's ``path`` (``/apis/<group>/<version>/…/<plural>``) that takes the typed client's list
    arguments and answers as its calls do with ``_preload_content=False``: for ``kube.as_json`` and
    ``kube.Watched``."""

    def call(*, _preload_content: bool = False, _request_timeout=None, **kw):
        if unknown := kw.keys() - _QUERY.keys():
            raise TypeError(f"path_lister: no such list argument: {', '.join(sorted(unknown))}")
        return api_request(
            api, "GET", path, [(_QUERY[k], v) for k, v in kw.items() if v is not None], None, _request_timeout
        )

    return call


def object_metadata(api: client.ApiClient, path: str) -> dict | None:
    """The metadata of the object at ``path``, None when there is none (404): a CRD's whole JSON runs to a
    megabyte, and its labels or its being there is all some reads ask."""
    try:
        return json.loads(api_request(api, "GET", path, accept=METADATA).data).get("metadata") or {}
    except ApiException as e:
        if e.status == 404:
            return None
        raise
