"""The lab's state file, ``lab.json`` in the lab folder: which runtime made the lab, and where its kubeconfig is.

Plain data read and written here; nothing in this module knows a runtime.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kailab.errors import KailabError
from kailab.outfile import write_own
from kailab.userfile import read_own_json


class DamagedState(KailabError):
    """The lab's state file cannot be read."""


@dataclass
class LabState:
    """What ``lab.json`` says. Written by the runtime that made the lab; read by every command through :meth:`read`."""

    runtime: str
    kubeconfig: str
    fleet: str = ""
    total_gpus: int = 0
    versions: dict = field(default_factory=dict)
    shape: str = ""  # the fleet's pools, as Fleet.describe() says them
    kai_components: list[str] = field(default_factory=list)  # local runtime: KAI processes it started
    complete: bool = True  # kind runtime: False while an `up` is under way (or was interrupted)
    context: str = ""  # existing runtime: the kubeconfig's context it adopted ("" its current one)
    prefix: str = ""  # existing runtime: in front of the lab's queue and namespace names
    lab_id: str = ""  # existing runtime: on every object the lab makes (kailab.io/lab-id)
    kwok_objects: list[dict] = field(default_factory=list)  # existing runtime with --kwok: what it applied, in order
    address: str = ""  # local, kind: where learners on other machines reach the API server (--address); "" loopback

    FILE = "lab.json"

    @classmethod
    def read(cls, home: Path, runtimes: Collection[str] | None = None) -> LabState | None:
        """The state of the lab in ``home``; None when there is none; DamagedState when it cannot be used
        (also when it names a runtime not in ``runtimes``, if they are given)."""
        path = home / cls.FILE
        data = read_own_json(path, lambda why: cls._damaged(path, why))
        if data is None:
            return None
        if not isinstance(data, dict):
            raise cls._damaged(path, "it is not a JSON object")
        missing = [k for k in ("runtime", "kubeconfig") if not isinstance(data.get(k), str)]
        if missing:
            raise cls._damaged(path, f"it has no {' and no '.join(missing)}")
        if runtimes is not None and data["runtime"] not in runtimes:
            raise cls._damaged(path, f"it names a runtime kailab does not have: {data['runtime']!r}")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if wrong := [
            k for k, v in known.items() if not isinstance(v, type(getattr(cls(runtime="", kubeconfig=""), k)))
        ]:
            raise cls._damaged(path, f"{', '.join(wrong)} {'has' if len(wrong) == 1 else 'have'} the wrong type")
        if not all(isinstance(x, str) for x in known.get("kai_components", [])) or not all(
            isinstance(x, dict) for x in known.get("kwok_objects", [])
        ):
            raise cls._damaged(path, "kai_components or kwok_objects holds items of the wrong type")
        try:
            return cls(**known)
        except TypeError as e:
            raise cls._damaged(path, str(e)) from e

    _hint = "Remove the lab and start again: kailab down && kailab up"

    @classmethod
    def _damaged(cls, path: Path, why: str) -> DamagedState:
        return DamagedState(f"The lab's state file {path} is damaged: {why}.", hint=cls._hint)

    def write(self, home: Path) -> None:
        write_own(home / self.FILE, json.dumps(asdict(self), indent=2), root=home, hint=self._hint)
