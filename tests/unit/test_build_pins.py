"""Pinned hashes: Go itself refuses a proxy or mirror that serves other bytes than the published module."""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest

from kailab import build, versions
from kailab.errors import ChecksumMismatch

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go command")


def escaped(path: str) -> str:
    """Go's module-path escaping for proxies: an upper-case letter becomes '!' and its lower case."""
    return "".join(f"!{c.lower()}" if c.isupper() else c for c in path)


def tampered_mirror(root, module: str, version: str):
    """A file proxy that serves ``module@version`` with made-up content."""
    vdir = root / escaped(module) / "@v"
    vdir.mkdir(parents=True)
    gomod = f"module {module}\n\ngo 1.26\n"
    (vdir / "list").write_text(version + "\n")
    (vdir / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2026-08-01T00:00:00Z"}))
    (vdir / f"{version}.mod").write_text(gomod)
    with zipfile.ZipFile(vdir / f"{version}.zip", "w") as z:
        z.writestr(f"{module}@{version}/go.mod", gomod)
        z.writestr(f"{module}@{version}/main.go", 'package main\n\nfunc main() { println("not KAI") }\n')


def test_a_mirror_that_serves_other_bytes_is_refused(tmp_path):
    kai = versions.build("kai")
    tampered_mirror(tmp_path / "mirror", kai.module, kai.version)
    env = {
        **build.go_env(),
        "GOPROXY": f"file://{tmp_path / 'mirror'}",
        "GOMODCACHE": str(tmp_path / "modcache"),
        "GOFLAGS": "-mod=mod -modcacherw",
        "GONOSUMDB": "",
        "GOPRIVATE": "",
        "GOINSECURE": "",
    }
    src = build.pinned_module_dir(kai, tmp_path / "src")
    with pytest.raises(ChecksumMismatch) as refused:
        build.download(kai, src, env)
    assert kai.module in refused.value.message
    assert "differs from the one pinned" in refused.value.message
    extracted = tmp_path / "modcache" / f"{escaped(kai.module)}@{kai.version}"
    assert not extracted.exists(), "Go unpacked the tampered module"


def test_the_build_module_starts_with_every_pin_in_go_sum(tmp_path):
    for pin in (*versions.BUILDS, *versions.OPERATOR_BUILDS):
        src = build.pinned_module_dir(pin, tmp_path / pin.key)
        lines = (src / "go.sum").read_text().splitlines()
        assert lines == [
            f"{pin.module} {pin.version} {pin.sums[0]}",
            f"{pin.module} {pin.version}/go.mod {pin.sums[1]}",
        ]
        assert all(s.startswith("h1:") and s.endswith("=") for s in pin.sums)


def test_the_operators_are_pinned_at_the_versions_and_hashes_kais_own_module_pins():
    """KAI's pod-grouper understands the operators' kinds as its go.mod pins them: kailab runs those very modules."""
    import os

    kai = versions.build("kai")
    why = build.module_available(kai)
    if why is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must read KAI's module: {why}")
        pytest.skip(f"KAI's module cannot be had here: {why.splitlines()[0]}")
    source = build.module_source(kai)
    requires = (source / "go.mod").read_text().split()
    sums = set((source / "go.sum").read_text().splitlines())
    for pin in versions.OPERATOR_BUILDS:
        assert requires[requires.index(pin.module) + 1] == pin.version, pin.name
        assert set(pin.go_sum_lines().splitlines()) <= sums, pin.name
