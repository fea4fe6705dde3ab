"""Image archives written by hand in ``docker save``'s layout, so images made from binaries never pass through Docker.

An archive holds manifest.json, a config and layer tars; kind_offline.py loads them into a kind node."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from kailab.outfile import write_own
from kailab.userfile import peek_text


@dataclass
class Layer:
    """One layer: an uncompressed tar file and its sha256 (the image's diff id)."""

    path: Path
    sha256: str


def layer_of(path: Path) -> Layer:
    """A tar file as a layer; its hash is kept beside it (``.sha256``) so a big layer is hashed once."""
    stamp = path.with_name(path.name + ".sha256")
    known = peek_text(stamp, 128)  # kailab's own: a FIFO or a link there is no stamp
    if known and stamp.stat().st_mtime >= path.stat().st_mtime:
        return Layer(path, known.strip())
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    write_own(stamp, h.hexdigest())
    return Layer(path, h.hexdigest())


@dataclass
class FileEntry:
    """A file to put in a layer: from a host file, or given bytes; or a symlink (``link``) or a folder."""

    path: str
    source: Path | None = None
    data: bytes | None = None
    mode: int = 0o644
    link: str | None = None
    folder: bool = False


def write_layer(out: Path, entries: list[FileEntry]) -> Layer:
    """A layer tar of these entries (root-owned), with the folders above each one."""
    folders: set[str] = set()
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for e in entries:
            parts = e.path.strip("/").split("/")
            for i in range(1, len(parts) + (1 if e.folder else 0)):
                folder = "/".join(parts[:i])
                if folder not in folders:
                    folders.add(folder)
                    info = tarfile.TarInfo(folder)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755, 0
                    tar.addfile(info)
            if e.folder:
                continue
            info = tarfile.TarInfo(e.path.strip("/"))
            info.mtime = 0
            if e.link is not None:
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, e.link, 0o777
                tar.addfile(info)
                continue
            info.mode = e.mode
            if e.source is not None:
                info.size = e.source.stat().st_size
                with open(e.source, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                data = e.data or b""
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return layer_of(out)


def image_config(layers: list[Layer], config: dict, labels: dict[str, str] | None = None) -> bytes:
    """The image's config blob (OCI image config, as Docker writes it)."""
    cfg = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], **config}
    if labels:
        cfg["Labels"] = labels
    blob = {
        "architecture": _arch(),
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer.sha256}" for layer in layers]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "kailab"} for _ in layers],
    }
    return json.dumps(blob, sort_keys=True).encode()


def write_archive(fileobj, tags: list[str], layers: list[Layer], config: dict, labels: dict | None = None) -> None:
    """A ``docker save`` archive of one image to ``fileobj`` (streamed: layers are copied, never held in memory)."""
    blob = image_config(layers, config, labels)
    config_name = hashlib.sha256(blob).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": tags, "Layers": [f"{layer.sha256}/layer.tar" for layer in layers]}]
    with tarfile.open(fileobj=fileobj, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, config_name, blob)
        for layer in layers:
            info = tarfile.TarInfo(f"{layer.sha256}/layer.tar")
            info.size = layer.path.stat().st_size
            with open(layer.path, "rb") as fh:
                tar.addfile(info, fh)
        _add_bytes(tar, "manifest.json", json.dumps(manifest).encode())


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _arch() -> str:
    machine = os.uname().machine
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
