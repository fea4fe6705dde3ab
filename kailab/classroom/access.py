"""Credentials on the cluster: ``class up --out DIR`` grants each learner a kubeconfig, ``class down`` revokes it."""

from __future__ import annotations

import base64
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from kubernetes import client

from kailab import outfile, partitions
from kailab.classroom import credentials
from kailab.errors import KailabError
from kailab.kube import Kube
from kailab.labels import CHALLENGE_NAMESPACE, KAI_NAMESPACE
from kailab.ownership import Owner
from kailab.userfile import read_bytes


def cluster_name(server: str) -> str:
    """The class's cluster as a learner's kubeconfig names it: its server address (``join`` checks it)."""
    return "kailab-class@" + server.split("://", 1)[-1]


def _ca_data(kube: Kube) -> str:
    path = kube.api.configuration.ssl_ca_cert
    if not path:
        raise KailabError("The lab's kubeconfig names no certificate authority; a learner's kubeconfig needs one.")
    return base64.b64encode(read_bytes(path, hint="Check the lab's kubeconfig: kailab kubeconfig")).decode()


def kubeconfig_path(out: Path, learner: str) -> Path:
    return out / f"{learner}.kubeconfig"


def check_out(out: Path, learners: list[str], force: bool = False) -> None:
    """Refuse, before anything is applied, an ``--out`` where a learner's kubeconfig may not be written: a file in
    the way of the folder, or a kubeconfig there kailab did not write (unless ``force``): :mod:`kailab.outfile`."""
    if os.path.lexists(out) and not out.is_dir():
        raise outfile.WriteRefused(
            f"kailab will not write the learners' kubeconfigs in {out}: it is not a folder.",
            hint="Give --out a folder (new, or one of yours).",
        )
    for learner in learners:
        outfile.check_user_file(kubeconfig_path(out, learner), force, f"{learner}'s kubeconfig")


def grant(
    kube: Kube,
    learners: list[str],
    out: Path,
    force: bool = False,
    usage_db_url: str | None = None,
    server: str | None = None,
) -> list[Path]:
    """Apply the class's policy (``usage_db_url``: the lab's usage database a learner's shard may name) and each
    learner's ServiceAccount, roles and namespaces; write ``out/NAME.kubeconfig`` with a fresh token (TokenRequest
    API), naming the API server at ``server`` (None: as ``kube`` reaches it). Returns the files written."""
    check_out(out, learners, force)
    for obj in credentials.class_objects(Owner(), usage_db_url):
        kube.apply(obj)
    server = server or kube.api.configuration.host
    ca, cluster = _ca_data(kube), cluster_name(server)

    def one(learner: str) -> Path:
        mine = Kube(kube.kubeconfig, kube.context)  # a client per thread
        namespaces = lesson_namespaces(learner)
        # Each waits for its default ServiceAccount: all at once (one after another, 8 learners took 17 s).
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda ns: mine.ensure_namespace(ns, partitions.owner(learner).labels), namespaces))
        for obj in credentials.learner_objects(learner, namespaces, Owner()):
            mine.apply(obj)
        token = request_token(mine, learner)
        conf = credentials.kubeconfig(learner, server, ca, token, cluster)
        return outfile.write_user_file(  # a credential: the instructor's to hand out, readable by them alone
            kubeconfig_path(out, learner),
            yaml.safe_dump(conf, sort_keys=False),
            f"{learner}'s class credential (kailab class up --out; kailab join FILE)",
            outfile.YAML,
            force,
            mode=0o600,
        )

    with ThreadPoolExecutor(max_workers=8) as pool:  # learners at once
        return list(pool.map(one, learners))


def lesson_namespaces(learner: str) -> list[str]:
    """The learner's namespace of each built-in exercise, and the challenges' one (``class up`` makes them; their Role
    is bound there). A lesson's tasks run in the lesson's namespace. A partition's name is ``<learner>-<the
    exercise's>`` (:func:`kailab.partitions.for_partition`; tests/unit/test_import_cost.py holds the two to the
    same answer)."""
    return sorted({f"{learner}-{n}" for n in (*exercise_namespaces(), CHALLENGE_NAMESPACE)})


@functools.cache
def exercise_namespaces() -> tuple[str, ...]:
    """Each exercise's namespace as its file says it (``namespace:``, else ``kailab-<name>``, as the loader has it),
    read without the scenario loader: every learner's status, watch and ``down``, and the instructor's class status,
    ask for these (the whole loader took 0.6 s for the 17 exercises on a busy host)."""
    import yaml

    from kailab.lesson import lesson_names
    from kailab.paths import EXERCISES

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = []
    for name in lesson_names():
        path = EXERCISES / f"{name}.yaml"
        try:
            doc = yaml.load(path.read_text(), Loader=loader)  # noqa: S506 (a safe loader)
            out.append(str(doc.get("namespace") or f"kailab-{doc['name']}"))
        except (yaml.YAMLError, OSError, AttributeError, KeyError, TypeError):  # a lesson an instructor added, broken
            from kailab.scenarios.loader import load_scenario

            out.append(load_scenario(path).namespace)  # its file and line said, as for any lesson
    return tuple(out)


def challenge_namespace(learner: str) -> str:
    """The learner's namespace of the challenges (one of :func:`lesson_namespaces`): where their join's mark is."""
    return f"{learner}-{CHALLENGE_NAMESPACE}"


def request_token(kube: Kube, learner: str) -> str:
    body = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=credentials.TOKEN_SECONDS)
    )
    got = kube.core.create_namespaced_service_account_token(
        credentials.service_account(learner), credentials.CLASS_NAMESPACE, body
    )
    return got.status.token


def revoke(kube: Kube, learner: str) -> None:
    """Delete the learner's ServiceAccount (its tokens stop working at once) and cluster roles."""
    kube.delete("v1", "ServiceAccount", credentials.service_account(learner), credentials.CLASS_NAMESPACE)
    name = f"kailab-learner-{learner}"
    for kind, n in (("ClusterRoleBinding", name), ("ClusterRoleBinding", f"{name}-reader"), ("ClusterRole", name)):
        kube.delete(credentials.RBAC, kind, n)
    for kind in ("RoleBinding", "Role"):  # in KAI's namespace: reading their scheduler's Deployment
        kube.delete(credentials.RBAC, kind, name, KAI_NAMESPACE)


def revoke_class(kube: Kube) -> None:
    """Delete what every learner shared: the admission policy, the reader role, the ServiceAccounts' namespace."""
    for api, kind, name in (
        (credentials.ADMISSION, "ValidatingAdmissionPolicyBinding", credentials.POLICY),
        (credentials.ADMISSION, "ValidatingAdmissionPolicy", credentials.POLICY),
        (credentials.RBAC, "ClusterRole", credentials.READER),
    ):
        kube.delete(api, kind, name)
    kube.delete_namespace(credentials.CLASS_NAMESPACE)  # and wait: a class up right after would find it terminating
