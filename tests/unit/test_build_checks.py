"""What a build needs is checked before the first build starts: Go, free disk, a writable cache, and every
missing pin served by the Go module proxy — a refusal in seconds, never minutes into building."""

from __future__ import annotations

import shutil
import time

import pytest
from test_bad_inputs import kailab  # tests/unit/test_bad_inputs.py

from kailab import build, versions
from kailab.errors import KailabError, ModuleUnavailable, ToolMissing
from kailab.progress import Progress

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go command")
LOCAL_BUILDS = [versions.build(n) for n in ("etcd", "kwok", "kubernetes", "kai")]


@pytest.fixture
def empty_proxy(tmp_path, monkeypatch):
    """A file:// Go proxy that serves nothing, and an empty module cache: no network, nothing cached."""
    (tmp_path / "proxy").mkdir()
    monkeypatch.setenv("GOPROXY", f"file://{tmp_path / 'proxy'}")
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modcache"))
    monkeypatch.setenv("GONOSUMDB", "")
    return tmp_path / "proxy"


@needs_go
def test_a_proxy_that_does_not_serve_kai_stops_the_build_before_it_starts(tmp_path, empty_proxy):
    cache = tmp_path / "cache"
    kai = versions.build("kai")
    start = time.monotonic()
    with pytest.raises(ModuleUnavailable) as err:
        build.ensure_built(LOCAL_BUILDS, Progress(quiet=True), cache)
    assert time.monotonic() - start < 60  # refused up front, not after minutes of building
    assert err.value.message == f"The Go module proxy does not serve {kai.module}@{kai.version} (needed for kai)."
    assert "GOPROXY=file:///path/to/mirror" in err.value.hint
    assert str(empty_proxy) in err.value.details  # the proxy's own answer
    assert not (cache / "bin").exists()  # nothing was built


@needs_go
def test_a_go_too_old_is_said_before_building(tmp_path, monkeypatch):
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "go").write_text("#!/bin/sh\necho go1.20.3\n")
    (fake / "go").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    with pytest.raises(ToolMissing) as err:
        build.ensure_built(LOCAL_BUILDS, Progress(quiet=True), tmp_path / "cache")
    assert err.value.message == "Go go1.20.3 is too old; the pinned modules need Go 1.26 or newer."


@needs_go
def test_too_little_disk_is_said_with_the_figure(tmp_path, monkeypatch, empty_proxy):
    monkeypatch.setattr(build, "COLD_BUILD_GB", {k: 1e6 for k in build.COLD_BUILD_GB})  # no disk is that large
    with pytest.raises(KailabError) as err:
        build.ensure_built(LOCAL_BUILDS, Progress(quiet=True), tmp_path / "cache")
    assert err.value.message.startswith("A first build needs about 3000000 GB free on the disk of the binary cache "), (
        err.value.message
    )
    assert "GB." in err.value.message and "go clean -cache" in err.value.hint


def test_the_cold_build_figures_add_up_to_what_was_measured():
    # 0.45 + 1.7 + 4.6 GB measured, and Prometheus 0.05 + 1.0 + 0.85 GB: rounded up per place
    assert sum(build.COLD_BUILD_GB.values()) == 10.0


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda p: p.write_text("x"), "it is a file, not a folder"),
        (lambda p: (p.parent / "file").write_text("x"), "a folder above it is a file"),
    ],
    ids=["file", "under-a-file"],
)
def test_a_cache_that_cannot_be_a_folder_is_said(tmp_path, make, words):
    cache = tmp_path / "cache"
    make(cache)
    where = cache if cache.exists() else tmp_path / "file" / "cache"
    with pytest.raises(KailabError) as err:
        build.ensure_built(LOCAL_BUILDS, Progress(quiet=True), where)
    assert err.value.message == f"The binary cache {where} cannot be written: {words}."
    assert "KAILAB_CACHE" in err.value.hint


def test_kailab_cache_naming_a_file_on_the_command_line(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.write_text("x")
    monkeypatch.setenv("KAILAB_CACHE", str(cache))
    proc = kailab("up", "--runtime", "local", home=tmp_path / "lab")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"✗ Error: The binary cache {cache} cannot be written: it is a file, not a folder." in proc.stderr
