"""Tools on PATH: kailab doctor names what is missing or too old; --runtime auto picks what fits."""

from __future__ import annotations

import os
import stat


def fake_tool(folder, name, output):
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{output}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_old_helm_and_missing_kind_are_findings_with_fixes(tmp_path, monkeypatch):
    from kailab import doctor

    fake_tool(tmp_path, "helm", "v3.7.2+g663a896")
    fake_tool(tmp_path, "kubectl", "Client Version: v1.35.0")
    monkeypatch.setenv("PATH", str(tmp_path))
    found = {f.tool: f for f in doctor.diagnose()}
    assert not found["helm"].ok and "3.8" in found["helm"].found and "Helm 3.8" in found["helm"].fix
    assert found["kubectl"].ok and found["kubectl"].found == "v1.35.0"
    assert not found["kind"].ok and "go install sigs.k8s.io/kind@" in found["kind"].fix
    assert not found["go"].ok


def test_current_helm_is_fine(tmp_path, monkeypatch):
    from kailab import doctor

    fake_tool(tmp_path, "helm", "v3.16.4+g7877b45")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")
    assert {f.tool: f.ok for f in doctor.diagnose()}["helm"] is True


def test_auto_picks_kind_only_with_docker_answering_and_its_tools(tmp_path, monkeypatch):
    from kailab.runtimes import choose_runtime

    monkeypatch.setenv("PATH", str(tmp_path))
    fake_tool(tmp_path, "docker", "27.3.1")
    chosen, why = choose_runtime("auto")
    assert chosen.traits.name == "local"
    assert (
        why.startswith("a Docker engine answers, but kind, kubectl, helm are not installed") and "local runtime" in why
    )
    for tool in ("kind", "kubectl", "helm"):
        fake_tool(tmp_path, tool, "v1.0.0")
    chosen, why = choose_runtime("auto")
    assert chosen.traits.name == "kind" and why == "a Docker engine answers (server 27.3.1)"


def test_auto_without_docker_picks_local(tmp_path, monkeypatch):
    from kailab.runtimes import choose_runtime

    monkeypatch.setenv("PATH", str(tmp_path))
    chosen, why = choose_runtime("auto")
    assert chosen.traits.name == "local" and why.startswith("Docker is not installed")
