"""Builds the pinned binaries from Go modules into the cache, once per version.

Each pinned module (see ``versions.BUILDS``) is built inside a small module of
ours that mirrors upstream's ``replace`` lines, because ``go install mod@v``
refuses modules that have them. Nothing is downloaded but Go modules.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kailab import versions
from kailab.errors import ChecksumMismatch, KailabError, ModuleUnavailable, ToolMissing
from kailab.paths import cache_home
from kailab.progress import Progress
from kailab.versions import GoBuild

STAMP = ".kailab-built"


def go_env() -> dict[str, str]:
    """The environment every go command runs with: modules on, no toolchain download."""
    env = dict(os.environ)
    env.update({"GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "GOWORK": "off", "CGO_ENABLED": "0"})
    return env


def check_go() -> tuple[int, int]:
    """Return Go's (major, minor), or raise ToolMissing saying what to install."""
    go = shutil.which("go")
    alternative = "or use the kind runtime on a machine with Docker: kailab up --runtime kind"
    if go is None:
        raise ToolMissing(
            "Go is not installed; the local runtime builds its binaries with it.",
            hint=f"Install Go {'.'.join(map(str, versions.GO_MINIMUM))} or newer and put it on PATH, {alternative}.",
        )
    out = subprocess.run(
        [go, "env", "GOVERSION"], capture_output=True, text=True, env=go_env(), timeout=60
    ).stdout.strip()
    found = parse_go_version(out)
    if found is None or found < versions.GO_MINIMUM:
        want = ".".join(map(str, versions.GO_MINIMUM))
        raise ToolMissing(
            f"Go {out or '(unknown version)'} is too old; the pinned modules need Go {want} or newer.",
            hint=f"Upgrade Go to {want} or newer, {alternative}.",
        )
    return found


def parse_go_version(text: str) -> tuple[int, int] | None:
    """``go1.26.8`` → (1, 26)."""
    m = re.search(r"go(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def binary_dir(build: GoBuild, cache: Path | None = None) -> Path:
    return (cache or cache_home()) / "bin" / build.key


def is_built(build: GoBuild, cache: Path | None = None) -> bool:
    """True when every binary of this pin is in the cache."""
    bindir = binary_dir(build, cache)
    return (bindir / STAMP).exists() and all((bindir / b).exists() for b in build.binaries)


def ensure_built(
    builds: Iterable[GoBuild], progress: Progress, cache: Path | None = None, lock: str = ".lock"
) -> dict[str, Path]:
    """Build what is missing; return {binary name: path} for every requested build.

    ``lock``: the lock file (in the cache) held while building; a component group of its own has its own lock,
    so its long first build does not hold up a lab that needs only the others.

    Before the first build starts (minutes), everything it needs is checked (seconds): see :func:`check_before_building`."""
    cache = cache or cache_home()
    builds = list(builds)
    paths: dict[str, Path] = {}
    check_cache(cache)
    missing = [b for b in builds if not is_built(b, cache)]
    if missing:
        with progress.step(f"Checking Go, free disk and the Go module proxy for {', '.join(b.name for b in missing)}"):
            check_before_building(missing, cache)
    with _locked(cache, lock):
        for b in builds:
            if not is_built(b, cache):
                with progress.step(f"Building {b.name} {b.version} from Go modules (first time only)") as step:
                    seconds = build_module(b, cache)
                    step.note(", ".join(b.binaries))
                    _record_build_time(cache, b, seconds)
            for name in b.binaries:
                paths[name] = binary_dir(b, cache) / name
    return paths


def check_cache(cache: Path) -> None:
    """The binary cache is a folder kailab can write (KAILAB_CACHE may name a file, or a folder of another user)."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=cache, prefix=".write-test.")  # a new file: never one that is there
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        what = (
            "it is a file, not a folder"
            if cache.exists() and not cache.is_dir()
            else "a folder above it is a file"
            if isinstance(e, (FileExistsError, NotADirectoryError))
            else e.strerror or str(e)
        )
        raise KailabError(
            f"The binary cache {cache} cannot be written: {what}.",
            hint="Make it writable, or point KAILAB_CACHE at a folder you own.",
        ) from None


# What a cold build of every pin took on disk (measured 2026-11: 0.45 GB of binaries in the cache without KAI,
# 1.7 GB of modules in GOMODCACHE, 4.6 GB in Go's build cache; Prometheus alone: 0.05 GB, 1.0 GB and 0.85 GB),
# with room to spare; GB per place.
COLD_BUILD_GB = {
    "the binary cache": 1.0,
    "Go's module cache (go env GOMODCACHE)": 3.0,
    "Go's build cache (go env GOCACHE)": 6.0,
}


def check_before_building(missing: list[GoBuild], cache: Path) -> None:
    """What a build needs, checked before it starts, so a newcomer learns in seconds what would otherwise end a
    build minutes in: a Go new enough, the disk space a cold build takes, and every missing pin served by the
    Go module proxy with its pinned hash (KAI first: a proxy that does not serve it is the commonest case)."""
    check_go()
    check_disk(cache)
    for b in sorted(missing, key=lambda b: b.name != "kai"):
        module_source(b)  # raises ModuleUnavailable / ChecksumMismatch with the proxy's answer


def check_disk(cache: Path) -> None:
    """Enough free space where the cold build writes (places on one disk add up); KailabError saying the figure."""
    places = dict(
        zip(COLD_BUILD_GB, [cache, *(Path(_go_env_value(v) or cache) for v in ("GOMODCACHE", "GOCACHE"))], strict=True)
    )
    need: dict[int, list] = {}
    for what, path in places.items():
        existing = next(p for p in [path, *path.parents] if p.exists())
        need.setdefault(os.stat(existing).st_dev, [existing, 0.0, []])
        entry = need[os.stat(existing).st_dev]
        entry[1] += COLD_BUILD_GB[what]
        entry[2].append(f"{what} {path}")
    for existing, gb, what in need.values():
        free = shutil.disk_usage(existing).free / 1e9
        if free < gb:
            raise KailabError(
                f"A first build needs about {gb:.0f} GB free on the disk of {'; '.join(what)}; it has {free:.1f} GB.",
                hint="Free some space (go clean -cache frees Go's build cache), or point KAILAB_CACHE, "
                "GOMODCACHE and GOCACHE at a disk with room.",
            )


def _go_env_value(name: str) -> str:
    proc = subprocess.run(["go", "env", name], capture_output=True, text=True, env=go_env(), timeout=60)
    return proc.stdout.strip()


def build_module(build: GoBuild, cache: Path) -> float:
    """Build one pinned module's binaries; return the seconds it took."""
    start = time.monotonic()
    src = pinned_module_dir(build, cache / "src" / build.key)
    env = go_env()
    info = download(build, src, env)
    # Upstream's own go.sum pins every dependency, so nothing needs the checksum database.
    with open(src / "go.sum", "a") as fh:
        fh.write((Path(info["Dir"]) / "go.sum").read_text())
    for old, new in mirrored_replaces(build, info["GoMod"], src, env):
        _go(["mod", "edit", "-replace", f"{old}={new}"], src, env, build)
    _go(["get", f"{build.module}@{build.version}"], src, env, build)
    bindir = binary_dir(build, cache)
    staging = bindir.with_name(bindir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, pkg in build.binaries.items():
        ldflags = " ".join(filter(None, ["-s -w", build.ldflags]))
        tags = [f"-tags={build.tags}"] if build.tags else []
        _go(["build", "-trimpath", *tags, f"-ldflags={ldflags}", "-o", str(staging / name), pkg], src, env, build)
    (staging / STAMP).write_text(json.dumps({"module": build.module, "version": build.version}))
    shutil.rmtree(bindir, ignore_errors=True)
    staging.rename(bindir)
    return time.monotonic() - start


def pinned_module_dir(build: GoBuild, src: Path) -> Path:
    """A module of ours whose go.sum holds only the pinned module's two hash lines (written anew)."""
    src.mkdir(parents=True, exist_ok=True)
    (src / "go.mod").write_text(f"module kailab.local/build/{build.name}\n\ngo 1.26\n")
    (src / "go.sum").write_text(build.go_sum_lines())
    return src


def download(build: GoBuild, workdir: Path, env: dict[str, str]) -> dict:
    """``go mod download -json`` of the pinned module inside ``workdir``, checked against its go.sum.

    Returns Go's record of it (``Dir``, ``GoMod``, ``Sum``…); raises what went wrong.
    """
    args = ["mod", "download", "-json", f"{build.module}@{build.version}"]
    proc = _run_go(args, workdir, env)
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        info = {}
    error = "\n".join(filter(None, [info.get("Error"), proc.stderr.strip()]))
    if proc.returncode != 0 or info.get("Error") or "Dir" not in info:
        raise _go_failure(args, build, error or f"go exited {proc.returncode} and printed no module record")
    return info


def mirrored_replaces(build: GoBuild, gomod: str, workdir: Path, env: dict[str, str]) -> list[tuple[str, str]]:
    """Upstream's replace lines (from its downloaded go.mod), as pairs a module of ours can use.

    A replacement by a local path (``=> ./staging/src/k8s.io/api``) becomes the same
    module at ``build.sibling_version``; a replacement by a module version is kept.
    """
    parsed = json.loads(_go(["mod", "edit", "-json", gomod], workdir, env, build))
    return replaces_from_gomod_json(parsed, build.sibling_version)


def replaces_from_gomod_json(parsed: dict, sibling_version: str | None) -> list[tuple[str, str]]:
    """Pure part of :func:`mirrored_replaces`, on ``go mod edit -json`` output."""
    pairs = []
    for r in parsed.get("Replace") or []:
        old, new = r["Old"], r["New"]
        old_spec = old["Path"] + (f"@{old['Version']}" if old.get("Version") else "")
        if new.get("Version"):
            pairs.append((old_spec, f"{new['Path']}@{new['Version']}"))
        elif new["Path"].startswith((".", "/")):
            if "FORBIDDEN" in new["Path"] or sibling_version is None:
                continue  # a guard against a dependency, not a real module
            pairs.append((old_spec, f"{old['Path']}@{sibling_version}"))
    return pairs


GO_TIMEOUT = 3600  # one go command; a cold Kubernetes build takes minutes, never an hour


def _run_go(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["go", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=GO_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        raise KailabError(
            f"go {' '.join(args)} did not finish in {GO_TIMEOUT // 60} minutes.",
            hint="Check the network to your Go module proxy (go env GOPROXY), then run again.",
        ) from e


def _go(args: list[str], cwd: Path, env: dict[str, str], build: GoBuild) -> str:
    proc = _run_go(args, cwd, env)
    if proc.returncode == 0:
        return proc.stdout
    raise _go_failure(args, build, (proc.stderr or proc.stdout).strip())


MIRROR_HINT = (
    "Point GOPROXY at a proxy or a file mirror that serves it, e.g. "
    "GOPROXY=file:///path/to/mirror,$(go env GOPROXY) — see the README, "
    "'Restricted or air-gapped networks' — or use the kind runtime on a machine with Docker."
)


def _go_failure(args: list[str], build: GoBuild, text: str) -> KailabError:
    """The error for a failed go command: a refused module, a hash that differs, or a build failure."""
    mismatch = re.search(r"verifying (\S+?)(/go\.mod)?: checksum mismatch", text)
    if mismatch:
        return ChecksumMismatch(
            f"Go refused {mismatch.group(1)}{mismatch.group(2) or ''}: the proxy served bytes whose hash differs "
            f"from the one pinned in go.sum (needed for {build.name}).",
            hint=(
                "Your GOPROXY (go env GOPROXY) serves a module other than the published one. "
                "Point it at a proxy or mirror that serves the module exactly as published."
            ),
            details=_tail(text),
        )
    if re.search(r"40[34] (Forbidden|Not Found)|410 Gone|not available|unknown revision|no such file", text):
        return ModuleUnavailable(
            f"The Go module proxy does not serve {build.module}@{build.version} (needed for {build.name}).",
            hint=MIRROR_HINT,
            details=_tail(text),
        )
    return KailabError(
        f"Building {build.name} {build.version} failed at: go {' '.join(args)}",
        hint="Read the go output above; a rerun of the same command reuses what was already built.",
        details=_tail(text),
    )


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.splitlines()[-lines:])


@contextmanager
def _locked(cache: Path, lock: str = ".lock") -> Iterator[None]:
    """One build at a time per lock, so two ``kailab up`` never build over each other."""
    from kailab.outfile import open_own_log

    with open_own_log(cache / lock) as fh:  # a FIFO or a link there is refused, never waited on or followed
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _record_build_time(cache: Path, build: GoBuild, seconds: float) -> None:
    """Kept for bench/: how long the cold build of each pin took."""
    from kailab.outfile import WriteRefused, write_own
    from kailab.userfile import peek_text

    path = cache / "build-times.json"
    try:
        data = json.loads(peek_text(path) or "{}")
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    data[build.key] = round(seconds, 1)
    try:
        write_own(path, json.dumps(data, indent=2))
    except WriteRefused:  # a figure for bench/, not worth failing a build that is done
        pass


def module_source(build: GoBuild) -> Path:
    """The pinned module's own files (in Go's module cache), downloaded and hash-checked if needed."""
    with tempfile.TemporaryDirectory(prefix="kailab-module-") as tmp:
        return Path(download(build, pinned_module_dir(build, Path(tmp)), go_env())["Dir"])


def module_available(build: GoBuild) -> str | None:
    """None when the proxy serves the pinned module with the pinned hash, else why not (for tests and doctor)."""
    try:
        module_source(build)
    except KailabError as e:
        return "\n".join(filter(None, [e.message, e.details]))
    return None
