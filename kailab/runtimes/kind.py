"""The kind runtime (placeholder until its plan is written)."""

from __future__ import annotations

import shutil
import subprocess

from kailab.runtimes.base import Runtime, register


@register
class KindRuntime(Runtime):
    name = "kind"

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if shutil.which("docker") is None:
            return False, "Docker is not installed"
        proc = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
        if proc.returncode != 0:
            return False, "no Docker engine answers (docker info failed)"
        return True, f"a Docker engine answers (server {proc.stdout.strip()})"

    def up(self, options, progress):
        raise NotImplementedError

    def down(self, progress):
        raise NotImplementedError

    def info(self):
        return None

    def kubeconfig(self):
        raise NotImplementedError
