"""The runtimes, and the registry that knows them: ``kailab up --runtime NAME`` and ``--runtime auto``.

The registry imports each runtime only when asked for one; the runtime interface (``base.py``) imports none.
"""

from __future__ import annotations

from kailab.errors import KailabError
from kailab.runtimes.base import Runtime, UpOptions

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
