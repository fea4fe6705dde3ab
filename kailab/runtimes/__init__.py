"""The runtimes, and the registry that knows them: ``kailab up --runtime NAME``, ``--runtime auto`` and ``up`` itself.

The registry imports the built-in runtimes the first time one is asked for; the runtime interface (``base.py``)
imports none.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kailab.errors import KailabError
from kailab.runtimes.base import LabInfo, Runtime, UpOptions

if TYPE_CHECKING:
    from kailab.labstate import LabState
    from kailab.progress import Progress

_REGISTRY: dict[str, type[Runtime]] = {}


def register(cls: type[Runtime]) -> type[Runtime]:
    """Add a runtime beside the built-in ones (local, kind, existing)."""
    _REGISTRY[cls.traits.name] = cls
    return cls


def _load_builtin() -> None:
    if {"local", "kind", "existing"} <= set(_REGISTRY):
        return
    from kailab.runtimes.existing import ExistingRuntime
    from kailab.runtimes.kind import KindRuntime
    from kailab.runtimes.local import LocalRuntime

    for cls in (LocalRuntime, KindRuntime, ExistingRuntime):
        _REGISTRY.setdefault(cls.traits.name, cls)


def runtime_names() -> list[str]:
    """Every runtime, in the order ``--runtime auto`` tries them."""
    _load_builtin()
    return sorted(_REGISTRY, key=lambda n: (_REGISTRY[n].traits.preference, n))


def get_runtime(name: str) -> type[Runtime]:
    _load_builtin()
    if name not in _REGISTRY:
        raise KailabError(f"No runtime named {name!r}.", hint=f"Runtimes: auto, {', '.join(runtime_names())}.")
    return _REGISTRY[name]


def choose_runtime(requested: str) -> tuple[type[Runtime], str]:
    """``auto`` → the first runtime, in preference order, that fits this machine. Returns (runtime, why).

    When none fits, the last one is tried: its own error says what to install.
    """
    if requested != "auto":
        return get_runtime(requested), f"--runtime {requested}"
    names = [n for n in runtime_names() if _REGISTRY[n].traits.makes_cluster]
    reasons: list[str] = []
    for name in names:
        ok, why = _REGISTRY[name].available()
        if ok:
            return _REGISTRY[name], "; ".join(reasons + [f"using the {name} runtime ({why})"]) if reasons else why
        reasons.append(why)
    return _REGISTRY[names[-1]], "; ".join(reasons) + f"; trying the {names[-1]} runtime, which says what it needs"


def check_options(cls: type[Runtime], options: UpOptions) -> None:
    """Refuse, before anything starts, options the runtime does not take (saying which runtime does), then
    whatever else the runtime itself refuses (:meth:`Runtime.check_options`)."""
    extra = sorted(options.given() - cls.traits.takes)
    if extra:
        _load_builtin()
        takers = {o: [n for n in runtime_names() if o in _REGISTRY[n].traits.takes] for o in extra}
        hint = (
            f"Leave it out, or choose the runtime that takes it: kailab up --runtime {takers[extra[0]][0]}"
            if takers[extra[0]]
            else "Leave it out."
        )
        if "retain" in extra and cls.traits.after_failed_up:
            hint = f"The {cls.traits.name} runtime {cls.traits.after_failed_up}; leave out --retain."
        raise KailabError(
            "; ".join(
                f"{UpOptions.FLAGS[o]} is for the {' or '.join(takers[o]) or 'no'} runtime, not the {cls.traits.name} runtime"
                for o in extra
            )
            + ".",
            hint=hint,
        )
    cls.check_options(options)


def bring_up(
    home: Path,
    running: LabState | None,
    options: UpOptions,
    requested: str,
    progress: Progress,
    show_findings: Callable[[list], None],
) -> LabInfo:
    """``kailab up`` in ``home``: the runtime of the lab that is ``running`` (its state), else the one ``requested``
    (``auto``: :func:`choose_runtime`), refusing another runtime or another fleet for a running lab and options the
    runtime does not take; an adopted cluster's findings are shown (``show_findings``) before anything changes."""
    from rich.text import Text

    if running and requested not in ("auto", running.runtime):
        raise KailabError(
            f"A lab is already running on the {running.runtime} runtime.", hint="Remove it first: kailab down"
        )
    if running and running.shape and running.shape != options.fleet.describe():
        raise KailabError(
            f"The lab that is up has another fleet ({running.shape}); "
            f"kailab up does not change a running lab's fleet to {options.fleet.describe()}.",
            hint="Start again with the new fleet: kailab down && kailab up "
            + " ".join(a for a in sys.argv[2:] if a not in ("-q", "--quiet")),
        )
    if running:
        cls, why = get_runtime(running.runtime), "the lab that is running"
    else:
        cls, why = choose_runtime(requested)
    check_options(cls, options)
    if options.address is not None:
        from kailab.network import check_address

        options.address = check_address(options.address)
        if running and running.address != options.address:
            where = f"at {running.address}" if running.address else "on this machine's loopback only"
            raise KailabError(
                f"The lab that is up listens {where}; kailab up does not move a running lab to {options.address}.",
                hint=f"Start again there: kailab down && kailab up --address {options.address}",
            )
    if (
        cls.traits.makes_cluster and not running
    ):  # its nodes run on this machine: refused, with the figures, if too many
        from kailab.sizing import check_lab

        check_lab(options.fleet.node_count)
    progress.info(Text.assemble("Runtime: ", (cls.traits.name, "bold"), f" ({why})"))
    rt = cls(home)
    if found := rt.preflight(options):  # an adopted cluster is checked, and said, before anything changes
        show_findings(found)
    return rt.up(options, progress)
