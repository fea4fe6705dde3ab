"""A kubeconfig read as kailab reads it: one clear error for a file it cannot use, its credential plugin bounded.

A file that is not YAML, is of a shape the official client would trip over (a traceback, not a message), holds bad
base64 or names a server that is not a URL gets one message; the files it names (certificates, keys, a token file)
are read by kailab's rule for files it reads first (:mod:`kailab.userfile`), and its credential (exec) plugin is asked
first, bounded in time."""

from __future__ import annotations

import binascii
import json
import os
import signal
import subprocess
import threading
import urllib.parse
from pathlib import Path

from kubernetes import client, config

from kailab.errors import KailabError

EXEC_TIMEOUT = 6.0  # a kubeconfig's credential (exec/login) plugin: its answer, or an error


def _credential_plugin(data: dict, context: str | None) -> dict | None:
    """The ``exec`` section of the user that ``context`` (or the current context) names, if it has one."""

    def named(key: str, name: object) -> dict:
        for item in data.get(key) or []:
            if isinstance(item, dict) and item.get("name") == name and isinstance(item.get(key[:-1]), dict):
                return item[key[:-1]]
        return {}

    user = named("users", named("contexts", context or data.get("current-context")).get("user"))
    plugin = user.get("exec")
    return plugin if isinstance(plugin, dict) and plugin.get("command") else None


def check_credential_plugin(path: Path, data: dict, context: str | None) -> str | None:
    """Run the kubeconfig's credential (exec) plugin once, bounded by EXEC_TIMEOUT; None when it answers (or there
    is none), else what went wrong. The official client runs the plugin with no time limit and only logs its
    failure, so kailab asks it first, the way kubectl would (the ExecCredential protocol, KUBERNETES_EXEC_INFO)."""
    plugin = _credential_plugin(data, context)
    if plugin is None:
        return None
    command = str(plugin["command"])
    if "/" in command and not os.path.isabs(command):  # relative to the kubeconfig's folder, as kubectl reads it
        command = str(path.parent / command)
    env = {
        **os.environ,
        **{str(e.get("name")): str(e.get("value")) for e in plugin.get("env") or [] if isinstance(e, dict)},
    }
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": plugin.get("apiVersion"), "kind": "ExecCredential", "spec": {"interactive": False}}
    )
    try:
        proc = subprocess.Popen(
            [command, *map(str, plugin.get("args") or [])],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as e:
        return f"{command} cannot be run: {e.strerror or e}"
    try:
        _, err = proc.communicate(timeout=EXEC_TIMEOUT)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # it runs in a session of its own: its group is what it started
        except OSError:
            pass
        proc.communicate()
        return f"{command} did not answer within {EXEC_TIMEOUT:.0f}s"
    if proc.returncode != 0:
        return f"process returned {proc.returncode}. {err.strip()}".strip()
    return None


# What the official client reads as text in a kubeconfig's cluster and user entries (anything else there is passed by)
_TEXT_FIELDS = {
    "cluster": ("server", "certificate-authority", "certificate-authority-data", "tls-server-name", "proxy-url"),
    "user": (
        "token",
        "tokenFile",
        "client-certificate",
        "client-certificate-data",
        "client-key",
        "client-key-data",
        "username",
        "password",
    ),
}


def kubeconfig_problem(data: dict, context: str | None = None) -> str | None:
    """What in a kubeconfig's shape the official client would trip over (a traceback, not a message), in words;
    None when there is nothing. ``context``: the one to use (None: its current one); a ``context`` that is not there
    is left to the client, whose error the caller turns into a list of the contexts there are."""

    def kind(value: object) -> str:
        return "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else repr(value)[:40]

    entries: dict[str, dict[str, dict]] = {}
    for key, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
        items = data.get(key)
        if items is None:
            items = []
        if not isinstance(items, list):
            return f"its {key} are {kind(items)}, not a list"
        entries[key] = {}
        for n, item in enumerate(items, 1):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                return f"{key}[{n}] is not a mapping with a name"
            body = item.get(inner)
            if not isinstance(body, dict) and not (inner == "user" and body is None):
                return f"{key}[{n}] ({item['name']}) has no {inner} mapping (found {kind(body)})"
            for field in _TEXT_FIELDS.get(inner, ()):
                if isinstance(body, dict) and field in body and not isinstance(body[field], str):
                    return f"{key}[{n}] ({item['name']}): {field} is {kind(body[field])}, not text"
            entries[key][item["name"]] = body or {}
    name = context or data.get("current-context")
    if not isinstance(name, str) or not name:
        return "it names no current context (current-context)"
    if name not in entries["contexts"]:
        return None if context else f"its current context {name!r} is not one of its contexts"
    ctx = entries["contexts"][name]
    for ref, key in (("cluster", "clusters"), ("user", "users")):
        if ref == "user" and ctx.get("user") in (None, ""):
            continue
        if not isinstance(ctx.get(ref), str) or ctx[ref] not in entries[key]:
            return f"its context {name!r} names the {ref} {ctx.get(ref)!r}, which is not one of its {key}"
    if not isinstance(entries["clusters"][ctx["cluster"]].get("server"), str):
        return f"its cluster {ctx['cluster']!r} has no server"
    return None


_FILE_FIELDS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


def check_named_files(path: Path, data: dict, context: str | None, hint: str) -> None:
    """The files the kubeconfig's context names (a certificate authority, a client certificate or key, a token file)
    read by the rule for files kailab reads (:mod:`kailab.userfile`) before the client reads them: a FIFO would block
    it, a device never end. Relative paths are the kubeconfig's folder's, as kubectl reads them."""
    from kailab.userfile import read_bytes

    name = context or data.get("current-context")
    ctx = next((c["context"] for c in data.get("contexts") or [] if c.get("name") == name), None)
    if not isinstance(ctx, dict):
        return
    for kind, key in (("cluster", "clusters"), ("user", "users")):
        body = next((e.get(kind) for e in data.get(key) or [] if e.get("name") == ctx.get(kind)), None) or {}
        for field in _FILE_FIELDS[kind]:
            if isinstance(body.get(field), str) and body[field]:
                named = path.parent / os.path.expanduser(body[field])
                try:
                    read_bytes(named, limit=1024 * 1024)
                except KailabError as e:
                    why = e.message.removeprefix(f"Cannot read {named}: ")
                    raise KailabError(f"The kubeconfig {path} names the {field} {named}: {why}", hint=hint) from None


def _load_bounded(path: Path, context: str | None, cfg: client.Configuration) -> None:
    """The official client reads the kubeconfig into ``cfg``, within EXEC_TIMEOUT: a user's ``auth-provider``
    (OIDC) refreshes an expired token from its issuer with no time limit. ``persist_config=False``: the client never
    writes the user's kubeconfig back (a refreshed token)."""
    done, failed = threading.Event(), []

    def load() -> None:
        try:
            config.load_kube_config(
                config_file=str(path), context=context, client_configuration=cfg, persist_config=False
            )
        except BaseException as e:  # noqa: BLE001 (raised again in the caller's thread)
            failed.append(e)
        finally:
            done.set()

    threading.Thread(target=load, name="kubeconfig", daemon=True).start()  # daemon: a hung one never holds the exit
    if not done.wait(EXEC_TIMEOUT):
        raise KailabError(
            f"The kubeconfig {path} could not be read within {EXEC_TIMEOUT:.0f}s: its user's auth provider "
            "did not answer (an OIDC issuer refreshing an expired token).",
            hint="Log in again so that its token is fresh (kubectl --kubeconfig PATH get nodes), then try again.",
        )
    if failed:
        raise failed[0]


def load_config(path: Path | str, context: str | None = None) -> client.Configuration:
    """The client configuration for a kubeconfig's context; a :class:`KailabError` that names what is wrong
    with the file (not a file, too large, not YAML, not a mapping, bad base64 data, a server that is not a URL,
    a credential plugin that fails or does not answer). A context that is not there stays ConfigException."""
    from kailab.yamlfile import YamlFile

    hint = "Check it with: kubectl --kubeconfig PATH get nodes"
    f = YamlFile(Path(path), KailabError, hint)
    data = f.read_mapping("a kubeconfig is a mapping (apiVersion, clusters, contexts, users)")
    if problem := kubeconfig_problem(data, context):
        raise KailabError(f"The kubeconfig {path} cannot be used: {problem}.", hint=hint)
    check_named_files(Path(path), data, context, hint)
    failure = check_credential_plugin(Path(path), data, context)
    if failure:
        raise KailabError(
            f"The kubeconfig {path}'s credential plugin failed: {failure}.",
            hint="Log in with the plugin yourself (kubectl --kubeconfig PATH get nodes), then try again.",
        )
    cfg = client.Configuration()
    try:
        _load_bounded(Path(path), context, cfg)
    except (binascii.Error, ValueError) as e:
        raise KailabError(
            f"The kubeconfig {path} holds data that is not valid base64 "
            f"(certificate-authority-data, client-certificate-data or client-key-data): {e}.",
            hint=hint,
        ) from None
    except config.ConfigException as e:
        if context and f"name {context} in" in str(e):  # a context that is not there: the caller names the others
            raise
        raise KailabError(f"The kubeconfig {path} cannot be used: {str(e)[:300]}.", hint=hint) from None
    except KailabError:
        raise
    except Exception as e:  # an auth provider's token refresh (OIDC: its issuer does not answer), a file it names
        raise KailabError(
            f"The kubeconfig {path} cannot be used: {type(e).__name__}: {str(e)[:300]}.", hint=hint
        ) from None
    url = urllib.parse.urlsplit(cfg.host or "")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise KailabError(
            f"The kubeconfig {path} names the server {cfg.host!r}, which is not a URL.",
            hint="A cluster's server is https://HOST:PORT.",
        )
    return cfg


def share_tls(api: client.ApiClient) -> None:
    """Every new connection of ``api`` made with one TLS context, its CA and client certificate loaded once: urllib3
    makes a context for each connection and loads both files into it (0.6 ms of CPU), and a lesson opens hundreds (a
    watch's connection ends with it). Left as it was — each connection's own context, which says what is wrong — for
    anything but a verified connection with a CA and an unencrypted key, or when loading them fails."""
    import ssl

    import urllib3
    from urllib3.util import create_urllib3_context

    pool = api.rest_client.pool_manager
    kw = pool.connection_pool_kw
    if type(pool) is not urllib3.PoolManager or "ssl_context" in kw or kw.get("cert_reqs") != ssl.CERT_REQUIRED:
        return  # a proxy's, a context given already, or verification off
    if not (kw.get("ca_certs") or kw.get("ca_cert_data")) or (kw.get("key_file") and not kw.get("cert_file")):
        return

    def no_password() -> bytes:  # an encrypted key: never OpenSSL's prompt on the terminal
        raise ValueError("the client key is encrypted")

    try:
        context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
        context.load_verify_locations(cafile=kw.get("ca_certs"), cadata=kw.get("ca_cert_data"))
        if kw.get("cert_file"):
            context.load_cert_chain(kw["cert_file"], kw.get("key_file"), password=no_password)
    except (OSError, ValueError, ssl.SSLError):
        return
    loaded = ("ca_certs", "ca_cert_data", "cert_file", "key_file")
    pool.connection_pool_kw = {**{k: v for k, v in kw.items() if k not in loaded}, "ssl_context": context}
