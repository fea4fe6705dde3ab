"""A learner's side: ``kailab join FILE`` with the kubeconfig the instructor handed out, and nothing else.

Joining checks the file (a class credential: context ``kailab-class-<learner>``, a token and the class's certificate
authority, nothing that runs a program), asks the API server who the token is (SelfSubjectReview) and remembers the
learner and the file in the lab folder (``class-credential.json``). From then on kailab's commands act on that
learner's slice: their queues and namespaces (``<learner>-…``), their nodes, their owner labels (``lab.py`` asks
:func:`current`). No Go, no Docker, no build.

What can go wrong is said as one of a few causes, each within :data:`ANSWER_SECONDS`: the cluster does not answer;
its certificate is not one the file's authority signed (a file for another cluster, or for a class whose cluster was
made again); the token expired, or the cluster no longer accepts it (revoked); the file is not a class credential;
it was made for another cluster's class. A folder that holds a lab of its own, or another learner's join, is not
joined; a damaged join record is cleared by ``kailab down``.

A join leaves a mark the instructor's ``class status`` and page read (:func:`mark_joined`): a ConfigMap
``kailab-joined`` in the learner's challenges' namespace, written with their own credential through the API server
(no port of the instructor's is opened for it); when they joined is the API server's time of that write, not the
learner's clock. Their ``down`` removes it.

Their partition's scheduler is their SchedulingShard (``kailab/shards.py``), which their credential may read and patch:
the placement, consolidation and fair-share lessons stop, start and reconfigure it through the API server, and
wait until the supervisor (local runtime) or KAI's operator (kind, existing) runs it; its metrics (fair shares)
come from the address the supervisor writes on the shard (the instructor's loopback: read only on that machine,
and said to be unavailable elsewhere), or through the API server's proxy to the operator's Service. Nobody else's shard is theirs to read or change.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import os
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kailab import labdir, outfile, userfile
from kailab.errors import KailabError
from kailab.labels import JOINED_LABEL, LEARNER_LABEL, NODEPOOL_LABEL
from kailab.scenarios.prefix import check_prefix
from kailab.termtext import one_line

# Every command opens the lab (``current``, the first line a learner's command prints): what only joining, leaving
# or the class's views need (the Kubernetes client, the class's access and credentials) is imported where used.
if TYPE_CHECKING:
    from kailab.kube import Kube
    from kailab.progress import Progress

FILE = "class-credential.json"
CONTEXT_PREFIX = "kailab-class-"
CLUSTER_PREFIX = "kailab-class@"  # a class credential's cluster: the class's server (classroom/access.cluster_name)
ANSWER_SECONDS = 10.0  # every way joining can fail is said within this
TIMEOUT = (3.0, 5.0)  # connect, read: one try
HINT = "Use the file kailab class up --out wrote for you (NAME.kubeconfig)."
ASK = "Ask your instructor for a new kubeconfig."


class DamagedJoin(KailabError):
    """This folder's join record cannot be read; ``kailab down`` clears it."""


@dataclass(frozen=True)
class Joined:
    learner: str
    kubeconfig: Path


# -- the record of a join, in the lab folder --------------------------------------------------------------------------


def current(home: Path) -> Joined | None:
    """The class credential this lab folder joined with; None when it joined none; DamagedJoin when its record
    cannot be read (``kailab down`` clears it)."""
    path = home / FILE

    def damaged(why: str) -> DamagedJoin:
        return DamagedJoin(
            f"This folder's record of the class it joined ({path}) is damaged: {why}.",
            hint="Leave the class here and join again: kailab down, then kailab join FILE",
        )

    data = userfile.read_own_json(path, damaged, limit=64 * 1024)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise damaged("it is not a JSON object")
    learner, kubeconfig = data.get("learner"), data.get("kubeconfig")
    if not isinstance(learner, str):
        raise damaged("it names no learner")
    try:
        check_prefix(learner)
    except ValueError:
        raise damaged(f"{learner[:80]!r} cannot be a learner's name") from None
    if not isinstance(kubeconfig, str) or not kubeconfig.startswith("/") or "\0" in kubeconfig:
        raise damaged("it names no kubeconfig (an absolute path)")
    return Joined(learner, Path(kubeconfig))


def slice_line(learner: str) -> str:
    """The first line of every command a learner's run prints: whose slice it is."""
    return (
        f"Learner {learner}: partition {NODEPOOL_LABEL}={learner}, nodes {learner}-kwok-*, "
        f"queues and namespaces {learner}-*"
    )


def forget(home: Path, progress: Progress, why: KailabError) -> None:
    """A damaged join's ``kailab down``: its record removed (and the lab folder, if nothing else is in it); nothing
    on the cluster, which the instructor's ``class down`` clears."""
    labdir.report_left(home, labdir.remove(home, [FILE]), progress)
    progress.info(
        f"{why.message} It was removed: this folder has left the class. Nothing was removed on the cluster "
        "(the instructor's kailab class down removes what is left of yours).",
        style="yellow",
    )


# -- the credential file ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credential:
    """A class credential as its file says it: whose, which server, which class's cluster, the token."""

    learner: str
    server: str
    cluster: str
    token: str


def _not_a_credential(path: Path, why: str) -> KailabError:
    return KailabError(f"{path} is not a class credential: {why}.", hint=HINT)


def read_credential(path: Path) -> Credential:
    """The class credential in ``path``; one clear error for a file that cannot be read or is not one. A class
    credential holds a token and the class's certificate authority, and nothing else to sign in with: a file
    whose user runs a program (``exec``), or has no certificate authority, is refused before anything is run."""
    from kailab.kubeconfig import kubeconfig_problem
    from kailab.yamlfile import YamlFile

    if not os.path.lexists(path):
        raise KailabError(f"No file {path}.", hint="Give the kubeconfig your instructor handed out (NAME.kubeconfig).")
    data = YamlFile(path, KailabError, HINT).read_mapping(
        "a kubeconfig is a mapping (apiVersion, clusters, contexts, users)"
    )
    context = data.get("current-context", "")
    learner = context[len(CONTEXT_PREFIX) :] if isinstance(context, str) and context.startswith(CONTEXT_PREFIX) else ""
    if not learner:
        shown = context if isinstance(context, str) and context else "missing"
        raise _not_a_credential(path, f"its context is {shown[:80]}, not {CONTEXT_PREFIX}NAME")
    try:
        check_prefix(learner)
    except ValueError:
        raise _not_a_credential(path, f"{learner[:80]!r} cannot be a learner's name") from None
    if problem := kubeconfig_problem(data):
        raise KailabError(f"The kubeconfig {path} cannot be used: {problem}.", hint=HINT)
    ctx = next(c["context"] for c in data["contexts"] if c["name"] == context)
    cluster_entry = next(c for c in data["clusters"] if c["name"] == ctx["cluster"])
    cluster, user = (
        cluster_entry["cluster"],
        next((u.get("user") or {} for u in data.get("users") or [] if u["name"] == ctx.get("user")), {}),
    )
    if set(user) != {"token"} or not user["token"]:
        signs_in = ", ".join(sorted(map(str, user))) or "nothing"
        raise _not_a_credential(path, f"its user signs in with {signs_in[:80]}; a class credential holds a token only")
    server = cluster["server"]
    url = urllib.parse.urlsplit(server)
    if url.scheme != "https" or not url.hostname:
        raise _not_a_credential(path, f"its server {server[:80]!r} is not https://HOST:PORT")
    ca = cluster.get("certificate-authority-data")
    if not isinstance(ca, str) or cluster.get("insecure-skip-tls-verify"):
        raise _not_a_credential(path, "it does not hold the class's certificate authority (certificate-authority-data)")
    try:
        base64.b64decode(ca, validate=True)
    except (binascii.Error, ValueError):
        raise _not_a_credential(path, "its certificate-authority-data is not base64") from None
    name = cluster_entry["name"]
    if name.startswith(CLUSTER_PREFIX) and name[len(CLUSTER_PREFIX) :] != url.netloc:
        raise KailabError(
            f"{path} was made for the class at {name[len(CLUSTER_PREFIX) :][:80]}, but names the server "
            f"{server[:80]}: it is another cluster's credential, or was changed.",
            hint=HINT,
        )
    return Credential(learner, server, name, user["token"])


def learner_of(path: Path) -> str:
    """The learner a class credential is for; a clear error for a file that is not one."""
    return read_credential(path).learner


# -- joining ----------------------------------------------------------------------------------------------------------


def refuse_folder(home: Path, learner: str) -> None:
    """Refuse to join in a folder that holds a lab of its own (``kailab up``'s), or another learner's join."""
    labdir.check_home(home)
    if not labdir.is_ours(home):
        return  # a new folder, or one kailab did not make (which labdir.claim refuses unless it is empty)
    lab_entries = sorted(p.name for p in home.iterdir() if p.name not in (labdir.MARKER, labdir.VERDICTS, FILE))
    if lab_entries:
        raise KailabError(
            f"{home} holds a lab of its own ({', '.join(lab_entries[:4])}): kailab does not join a class there.",
            hint="Join from a folder of your own: KAILAB_HOME=~/kailab-class kailab join FILE "
            "(or remove this lab first: kailab down).",
        )
    there = current(home)  # a damaged record: DamagedJoin, cleared by kailab down
    if there is not None and there.learner != learner:
        raise KailabError(
            f"{home} has joined the class as {there.learner}: one folder holds one learner's join.",
            hint=f"Leave {there.learner}'s join first (kailab down), or join from another folder: "
            "KAILAB_HOME=~/kailab-class-2 kailab join FILE",
        )


def join(path: Path, home: Path) -> Joined:
    """Check the credential and the folder, ask the cluster who the token is, then remember it in ``home``."""
    from kailab.classroom import credentials
    from kailab.kube import Kube

    path = Path(os.path.abspath(path))
    cred = read_credential(path)
    refuse_folder(home, cred.learner)
    user = whoami(Kube(path), path)
    if user != credentials.username(cred.learner):
        prefix = credentials.username("")
        other = user[len(prefix) :] if user.startswith(prefix) else ""
        known = f"{other}'s: it is another learner's credential" if other else f"{user[:120]}: not a class credential"
        raise KailabError(
            f"{path.name} says it is {cred.learner}'s, but the cluster knows its token as {known}.", hint=HINT
        )
    mark_joined(Kube(path), cred.learner)  # for the instructor's class status: who has joined, and when
    labdir.claim(home)
    outfile.write_own(
        home / FILE,
        json.dumps({"learner": cred.learner, "kubeconfig": str(path)}, indent=1),
        root=home,
        hint="Leave the class here first: kailab down",
    )
    return Joined(cred.learner, path)


JOINED = "kailab-joined"  # the mark of a join (see the module)


def joined_object(learner: str, host: str) -> dict:
    """The mark a learner's join writes: in their challenges' namespace, labelled as theirs; ``host`` (their
    machine's name, as it says) and the learner's clock are data, shown as such."""
    from kailab import partitions
    from kailab.classroom import access

    labels = {**partitions.owner(learner).labels, LEARNER_LABEL: learner, JOINED_LABEL: "true"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": JOINED, "namespace": access.challenge_namespace(learner), "labels": labels},
        "data": {"host": host[:63], "said": datetime.now(UTC).isoformat(timespec="seconds")},
    }


def mark_joined(kube: Kube, learner: str) -> None:
    """Write the mark of this join (with the learner's credential). A class whose namespaces were made without
    credentials for it (no such namespace) has nobody to show it to: nothing is written."""
    from kubernetes.client.exceptions import ApiException

    mark = joined_object(learner, socket.gethostname())
    namespace = mark["metadata"]["namespace"]
    try:  # the core API itself (no discovery first: one round trip for a learner on a far laptop)
        try:
            kube.core.create_namespaced_config_map(namespace, mark, _preload_content=False)
        except ApiException as e:
            if e.status != 409:
                raise
            kube.core.replace_namespaced_config_map(JOINED, namespace, mark, _preload_content=False)  # joined again
    except ApiException as e:
        if e.status != 404:
            raise


def unmark_joined(kube: Kube, learner: str) -> None:
    from kailab.classroom import access

    kube.delete("v1", "ConfigMap", JOINED, access.challenge_namespace(learner))


def join_states(learners: list[str], marks: list[dict]) -> dict[str, dict | None]:
    """learner → their join (``at``: when the API server last took the mark, ISO 8601; ``host``: their machine's
    name as they said it), None for one who has not joined (or left with ``down``). ``marks``: the ConfigMaps
    labelled :data:`~kailab.labels.JOINED_LABEL` (the API's JSON); one not named and placed as a learner's mark is
    nobody's. Pure."""
    from kailab.classroom import access

    out: dict[str, dict | None] = dict.fromkeys(learners)
    for cm in marks:
        meta = cm.get("metadata") or {}
        learner = (meta.get("labels") or {}).get(LEARNER_LABEL)
        if (
            learner not in out
            or meta.get("name") != JOINED
            or meta.get("namespace") != access.challenge_namespace(learner)
        ):
            continue
        times = [meta.get("creationTimestamp"), *((f or {}).get("time") for f in meta.get("managedFields") or [])]
        at = max((str(t) for t in times if t), default="")
        host = (cm.get("data") or {}).get("host")
        out[learner] = {
            "at": at.replace("Z", "+00:00"),
            "host": one_line(host)[:63] if isinstance(host, str) else "",
        }
    return out


def whoami(kube: Kube, path: Path) -> str:
    """Who the cluster knows the credential as (SelfSubjectReview), asked once with bounded timeouts; one clear
    error, within :data:`ANSWER_SECONDS`, for each way it can fail."""
    from kubernetes import client

    host = kube.api.configuration.host
    answer: dict = {}

    def ask() -> None:
        cfg = copy.copy(kube.api.configuration)
        cfg.retries = False
        api = client.ApiClient(cfg)
        try:
            answer["review"] = client.AuthenticationV1Api(api).create_self_subject_review(
                {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, _request_timeout=TIMEOUT
            )
        except Exception as e:  # noqa: BLE001 (said below, in words)
            answer["error"] = e
        finally:
            api.close()

    asking = threading.Thread(target=ask, daemon=True)  # a name lookup is not bounded by the socket's timeouts
    asking.start()
    asking.join(ANSWER_SECONDS)
    if "review" in answer:
        try:
            return str(answer["review"].status.user_info.username)
        except AttributeError:
            raise KailabError(f"The cluster at {host} did not say whose {path.name} is.", hint=ASK) from None
    raise _failed(answer.get("error"), host, path, kube)


def _failed(e: Exception | None, host: str, path: Path, kube: Kube) -> KailabError:
    """The one error for a SelfSubjectReview that did not answer: unreachable, certificate, expired, revoked."""
    from kailab.api_errors import no_answer
    from kailab.classroom import credentials

    if e is None:
        return KailabError(
            f"The class's cluster at {host} does not answer within {ANSWER_SECONDS:.0f}s: is the class up, and this "
            "machine on its network?",
            hint="Ask your instructor whether the class is up and which address it has.",
        )
    status = getattr(e, "status", None)
    reason = str(getattr(e, "reason", "") or "")
    if (
        status == 0
        and reason.startswith("SSLError")
        or "CERTIFICATE_VERIFY_FAILED" in str(e)
        or ("certificate" in str(e).lower() and "SSL" in str(e))
    ):
        return KailabError(
            f"The server at {host} presents a certificate that {path.name}'s certificate authority does not accept: "
            "the file is for another cluster, or the class's cluster was made again since it was handed out.",
            hint=ASK,
        )
    if status == 401:
        expired = _expiry(kube)
        if expired is not None and expired <= datetime.now(UTC):
            return KailabError(
                f"{path.name}'s token expired at {expired.isoformat(timespec='minutes')} (a class credential lasts "
                f"{credentials.TOKEN_SECONDS // 3600} hours).",
                hint=ASK,
            )
        return KailabError(
            f"The class's cluster at {host} no longer accepts {path.name} (401 Unauthorized): your class has ended or "
            "your credential was revoked (or another cluster issued it).",
            hint=ASK,
        )
    if isinstance(status, int) and status:
        return KailabError(
            f"The class's cluster at {host} refused to say whose {path.name} is ({status} {reason[:80]}): it is not "
            "a class credential of this cluster.",
            hint=HINT,
        )
    return KailabError(
        f"The class's cluster at {host} that {path.name} names {no_answer(e)}: is the class up, and this machine on "
        "its network?",
        hint="Ask your instructor whether the class is up and which address it has.",
    )


def _expiry(kube: Kube) -> datetime | None:
    """When the kubeconfig's token expires, as it says (a ServiceAccount token is a JWT with ``exp``); None when it
    does not say."""
    token = str(
        kube.api.configuration.api_key.get("BearerToken", "") or kube.api.configuration.api_key.get("authorization", "")
    )
    token = token.removeprefix("Bearer ").strip()
    try:
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "==="))
        return datetime.fromtimestamp(float(claims["exp"]), UTC)
    except (IndexError, ValueError, KeyError, TypeError, OverflowError, OSError, binascii.Error):
        return None


def leave(joined: Joined, home: Path) -> list[str]:
    """A learner's ``down``: empty their lesson namespaces and delete their queues and priority classes (their own
    only: the credential allows nothing else), their scheduler left running with the lab's defaults, then forget
    the credential. Their lesson records stay, for the instructor's ``class status``; their namespaces and shard
    stay, so their next lesson (after ``kailab join`` again) starts clean. A class that has ended (the credential
    revoked, the cluster gone) is left all the same, and said so (KailabError, after)."""
    from kailab import partitions
    from kailab.classroom import access
    from kailab.kube import Kube
    from kailab.ownership import CLUSTER_KINDS
    from kailab.scheduler_settings import SchedulerSettings
    from kailab.shards import ShardSchedulerControl

    try:
        kube = Kube(joined.kubeconfig)
        whoami(kube, joined.kubeconfig)
    except KailabError as e:  # nothing of theirs to remove there, or nothing that answers: the class's to clear
        labdir.remove(home, [FILE])
        raise KailabError(
            f"{e.message} Nothing was removed on the cluster; this folder has left the class.",
            hint="The instructor's kailab class down removes what is left of yours.",
        ) from None
    owner = partitions.owner(joined.learner)
    done: list[str] = []
    left: list[str] = []

    def remove(name: str, how) -> None:  # each on its own: one that fails leaves the others removed
        try:
            how()
            done.append(name)
        except Exception as e:  # noqa: BLE001 (said below, with what is left)
            left.append(f"{name} ({getattr(e, 'reason', None) or type(e).__name__})")

    for name in access.lesson_namespaces(joined.learner):
        if kube.get("v1", "Namespace", name) is not None:
            remove(name, lambda n=name: _empty(kube, n))
    for api, kind in CLUSTER_KINDS:
        for obj in kube.list(api, kind, label_selector=owner.selector()):
            remove(obj["metadata"]["name"], lambda a=api, k=kind, n=obj["metadata"]["name"]: kube.delete(a, k, n))
    remove(
        f"{joined.learner}'s scheduler", lambda: ShardSchedulerControl(kube, joined.learner).start(SchedulerSettings())
    )
    remove("the mark of your join", lambda: unmark_joined(kube, joined.learner))
    if left:  # the join is kept, so that kailab down can try again
        raise KailabError(
            f"Removed {len(done)} of your lesson objects; these are left: {', '.join(left[:5])}.",
            hint="Run kailab down again (or ask your instructor: kailab class down removes what is left of yours).",
        )
    labdir.remove(home, [FILE])
    return done


def _empty(kube: Kube, namespace: str) -> None:
    """Their lesson's objects gone; its lesson records stay, for the instructor's ``class status``."""
    kube.empty_namespace(namespace)
