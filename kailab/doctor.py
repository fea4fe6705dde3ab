"""``kailab doctor``: is each runtime usable here, and if not, what to install."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from kailab import build, versions
from kailab.errors import KailabError
from kailab.runtimes.kind_plan import TOOLS, host_facts, run_command


@dataclass
class Finding:
    tool: str
    ok: bool
    found: str
    needed_for: str
    fix: str = ""


def _version(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout + proc.stderr).strip()
    m = re.search(r"v?\d+\.\d+(\.\d+)?", text)
    return m.group(0) if m else text.splitlines()[0] if text else "unknown"


def _older(version: str, minimum: tuple[int, int]) -> bool:
    """ "v3.7.2" older than (3, 8)?"""
    m = re.match(r"v?(\d+)\.(\d+)", version)
    return m is not None and (int(m.group(1)), int(m.group(2))) < minimum


# What an offline kind lab builds from Go modules itself when it is not on PATH (kailab/runtimes/kind_offline.py).
OFFLINE_BUILT = ("kind", "kubectl", "helm")


def diagnose() -> list[Finding]:
    out = []
    for tool, argv in {
        "docker": ["docker", "--version"],
        "kind": ["kind", "version"],
        "kubectl": ["kubectl", "version", "--client"],
        "helm": ["helm", "version", "--short"],
    }.items():
        v = _version(argv)
        if tool == "helm" and v and _older(v, (3, 8)):
            out.append(Finding(tool, False, f"{v} (OCI charts need 3.8 or newer)", "kind runtime", TOOLS[tool]))
            continue
        if v is None and tool in OFFLINE_BUILT and shutil.which("go"):
            out.append(Finding(tool, True, "not found: kailab up --runtime kind --offline builds it", "kind runtime"))
            continue
        out.append(Finding(tool, v is not None, v or "not found", "kind runtime", "" if v else TOOLS[tool]))
    if shutil.which("docker"):
        try:
            engine = subprocess.run(
                ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=20
            )
        except subprocess.TimeoutExpired:
            engine = subprocess.CompletedProcess([], 124, "", "")
        out.append(
            Finding(
                "docker engine",
                engine.returncode == 0,
                engine.stdout.strip() if engine.returncode == 0 else "does not answer",
                "kind runtime",
                "" if engine.returncode == 0 else "Start the Docker engine (docker info must work).",
            )
        )
        if engine.returncode == 0:
            # What the kind config allows for here (cgroup v1, a capability the host cannot grant): said, not fixed.
            out.append(Finding("docker host", True, "; ".join(host_facts(run_command).describe()), "kind runtime"))
    try:
        major, minor = build.check_go()
        out.append(Finding("go", True, f"{major}.{minor}", "local runtime"))
        kai = versions.build("kai")
        answer = None if build.is_built(kai) else build.module_available(kai)
        out.append(
            Finding(
                f"Go proxy serves KAI {versions.KAI_VERSION}",
                answer is None,
                "yes" if answer is None else answer.strip().splitlines()[-1][-160:],
                "local runtime",
                "" if answer is None else build.MIRROR_HINT,
            )
        )
    except KailabError as e:
        out.append(Finding("go", False, e.message, "local runtime", e.hint or ""))
    return out
