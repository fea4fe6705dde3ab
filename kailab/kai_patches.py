"""The lab's changes to KAI's own objects, as JSON patches (RFC 6902), and the one function that applies them.

The runtimes that install KAI (local, kind) apply the same patch: the local runtime with
:func:`apply_json_patch` before it creates the CRD, the kind runtime with ``kubectl patch --type=json``.
"""

from __future__ import annotations

import json

from kailab.errors import KailabError

# The one change the lab makes to KAI's CRDs: the PodGroup's spec.subGroups defaults to an empty list. KAI v0.17.0's
# pod-grouper builds every PodGroup with ``subGroups: []``, the API gives it back without the field, and the two never
# compare equal (pkg/podgrouper/podgroup/handler.go, podGroupsEqual): so for every event of every pod it rewrote the
# PodGroup, lost the race to the podgroup-controller's status patches, and was requeued with a 1 s doubling backoff — a
# 32-pod Job waited 4–8 s to be grouped. With the default, the API gives back what the pod-grouper built, it finds
# nothing to change, and the Job is grouped in about 1 s (measured; see bench/). No KAI component tells an empty list
# from none (they all read len(); only the generated deep-copy checks for nil).
PODGROUP_CRD = "podgroups.scheduling.run.ai"
PODGROUP_CRD_PATCH: list[dict] = [  # RFC 6902, for `kubectl patch --type=json` and for apply_json_patch
    {"op": "test", "path": "/spec/versions/0/name", "value": "v2alpha2"},
    {
        "op": "add",
        "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/subGroups/default",
        "value": [],
    },
]


def apply_json_patch(obj: dict, ops: list[dict]) -> dict:
    """A copy of ``obj`` with the patch's ``test`` and ``add`` operations applied (all the lab's patches use)."""
    out = json.loads(json.dumps(obj))
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = out
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        key = int(last) if isinstance(target, list) else last
        if op["op"] == "test":
            if target[key] != op["value"]:
                raise KailabError(
                    f"KAI's CRD is not what the lab expects at {op['path']}: {target[key]!r}, not {op['value']!r}.",
                    hint="The pinned KAI version and its CRD disagree; see kailab/versions.py.",
                )
        elif op["op"] == "add":
            target[key] = op["value"]
        else:
            raise ValueError(f"unsupported JSON patch operation {op['op']!r}")
    return out
