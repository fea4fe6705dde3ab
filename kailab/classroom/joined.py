"""A learner's side: ``kailab join FILE`` with the kubeconfig the instructor handed out, and nothing else.

Joining checks the file (a class credential: context ``kailab-class-<learner>``), asks the API server who the
token is (SelfSubjectReview) and remembers the learner and the file in the lab folder (``class-credential.json``).
From then on kailab's commands act on that learner's slice: their queues and namespaces (``<learner>-…``), their
nodes, their owner labels (``lab.py`` asks :func:`current`). No Go, no Docker, no build.

Their partition's scheduler is their SchedulingShard (``kailab/shards.py``), which their credential may read and patch:
the placement, consolidation and fair-share lessons stop, start and reconfigure it through the API server, and
wait until the supervisor (local runtime) or KAI's operator (kind, existing) runs it; its metrics (fair shares)
come from the address the supervisor writes on the shard (the instructor's loopback: read only on that machine,
and said to be unavailable elsewhere), or through the API server's proxy to the operator's Service. Nobody else's shard is theirs to read or change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client

from kailab import labdir, partitions
from kailab.classroom import access, credentials
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import RECORD_LABEL
from kailab.ownership import CLUSTER_KINDS

FILE = "class-credential.json"
CONTEXT_PREFIX = "kailab-class-"


@dataclass(frozen=True)
class Joined:
    learner: str
    kubeconfig: Path


def current(home: Path) -> Joined | None:
    """The class credential this lab folder joined with; None when it joined none."""
    try:
        data = json.loads((home / FILE).read_text())
        return Joined(str(data["learner"]), Path(data["kubeconfig"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def learner_of(path: Path) -> str:
    """The learner a class credential is for; a clear error for a file that is not one."""
    try:
        conf = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise KailabError(
            f"No file {path}.", hint="Give the kubeconfig your instructor handed out (NAME.kubeconfig)."
        ) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise KailabError(f"{path} is not a kubeconfig kailab can read: {type(e).__name__}.") from None
    context = conf.get("current-context", "") if isinstance(conf, dict) else ""
    learner = context[len(CONTEXT_PREFIX) :] if isinstance(context, str) and context.startswith(CONTEXT_PREFIX) else ""
    if not learner:
        raise KailabError(
            f"{path} is not a class credential (its context is {context or 'missing'}, not {CONTEXT_PREFIX}NAME).",
            hint="Use the file kailab class up --out wrote for you.",
        )
    return learner


def join(path: Path, home: Path) -> Joined:
    """Check the credential against its cluster, then remember it in ``home``."""
    path = path.resolve()
    learner = learner_of(path)
    user = whoami(Kube(path), path)
    if user != credentials.username(learner):
        raise KailabError(
            f"{path.name} says it is {learner}'s, but the cluster knows its token as {user}: it is "
            "not a credential of this class.",
            hint="Use the file kailab class up --out wrote for you.",
        )
    labdir.claim(home)
    (home / FILE).write_text(json.dumps({"learner": learner, "kubeconfig": str(path)}, indent=1))
    return Joined(learner, path)


def whoami(kube: Kube, path: Path) -> str:
    """Who the cluster knows the credential as (SelfSubjectReview); one clear error when it is revoked (401) or
    its cluster does not answer."""
    try:
        review = client.AuthenticationV1Api(kube.api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, _request_timeout=5
        )
    except client.exceptions.ApiException as e:
        if e.status == 401:
            raise KailabError(
                f"The class's cluster no longer accepts {path.name} (401): your class has ended or "
                "your credential was revoked.",
                hint="Ask your instructor for a new kubeconfig.",
            ) from None
        raise
    except Exception as e:  # connection refused, a name that does not resolve, a certificate for another server
        raise KailabError(
            f"The cluster {kube.api.configuration.host} that {path.name} names does not answer "
            f"({type(e).__name__}): is this file for this class, on this network?",
            hint="Ask your instructor whether the class is up and which file is yours.",
        ) from None
    return review.status.user_info.username


def leave(joined: Joined, home: Path) -> list[str]:
    """A learner's ``down``: empty their lesson namespaces and delete their queues, priority classes and lesson
    records (their own only: the credential allows nothing else), then forget the credential. A class that has
    ended (the credential revoked, the cluster gone) is left all the same, and said so (KailabError, after)."""
    kube = Kube(joined.kubeconfig)
    try:
        whoami(kube, joined.kubeconfig)
    except KailabError as e:  # nothing of theirs to remove there, or nothing that answers: the class's to clear
        (home / FILE).unlink(missing_ok=True)
        raise KailabError(
            f"{e.message} Nothing was removed on the cluster; this folder has left the class.",
            hint="The instructor's kailab class down removes what is left of yours.",
        ) from None
    owner = partitions.owner(joined.learner)
    done = []
    for name in access.lesson_namespaces(joined.learner):
        if kube.get("v1", "Namespace", name) is not None:
            kube.empty_namespace(name)
            kube.core.delete_collection_namespaced_config_map(name, label_selector=RECORD_LABEL)
            done.append(name)
    for api, kind in CLUSTER_KINDS:
        for obj in kube.list(api, kind, label_selector=owner.selector()):
            kube.delete(api, kind, obj["metadata"]["name"])
            done.append(obj["metadata"]["name"])
    (home / FILE).unlink(missing_ok=True)
    return done
