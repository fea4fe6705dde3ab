"""A kubeconfig read as kailab reads it: one clear error for a file it cannot use, its credential plugin bounded.

A file that is not YAML, holds bad base64 or names a server that is not a URL gets one message; its credential
(exec) plugin is asked first, bounded in time."""

from __future__ import annotations

import binascii
import json
import os
import signal
import subprocess
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


def load_config(path: Path | str, context: str | None = None) -> client.Configuration:
    """The client configuration for a kubeconfig's context; a :class:`KailabError` that names what is wrong
    with the file (not a file, too large, not YAML, not a mapping, bad base64 data, a server that is not a URL,
    a credential plugin that fails or does not answer). A context that is not there stays ConfigException."""
    from kailab.yamlfile import YamlFile

    hint = "Check it with: kubectl --kubeconfig PATH get nodes"
    f = YamlFile(Path(path), KailabError, hint)
    data = f.read_mapping("a kubeconfig is a mapping (apiVersion, clusters, contexts, users)")
    failure = check_credential_plugin(Path(path), data, context)
    if failure:
        raise KailabError(
            f"The kubeconfig {path}'s credential plugin failed: {failure}.",
            hint="Log in with the plugin yourself (kubectl --kubeconfig PATH get nodes), then try again.",
        )
    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=str(path), context=context, client_configuration=cfg)
    except (binascii.Error, ValueError) as e:
        raise KailabError(
            f"The kubeconfig {path} holds data that is not valid base64 "
            f"(certificate-authority-data, client-certificate-data or client-key-data): {e}.",
            hint=hint,
        ) from None
    url = urllib.parse.urlsplit(cfg.host or "")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise KailabError(
            f"The kubeconfig {path} names the server {cfg.host!r}, which is not a URL.",
            hint="A cluster's server is https://HOST:PORT.",
        )
    return cfg
