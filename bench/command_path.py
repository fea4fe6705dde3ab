"""How far a kailab command goes before it does its work: module hops, lab.json reads and runtimes built.

    python bench/command_path.py demo quota            # needs a running lab (kailab up); KAILAB_HOME as usual
    python bench/command_path.py --source DIR status   # another checkout's kailab (e.g. `git archive REV`)

Runs the command in this process with a profiler on the main thread and prints, until the engine plays the first
step of a scenario (the whole command when it plays none):

- module hops: calls from a function of one kailab module into a function of another (each call counted; also how
  many distinct caller → callee module pairs, and modules, those calls touched); and at the first step, the hops
  on the call stack from the command's function down to the step's player (kailab frames only);
- lab.json reads: calls of ``LabState.read`` (every reader of the lab's state goes through it);
- runtimes built: calls of ``Runtime.__init__`` (the base class of every runtime).

It stops the process at the first step (the lab keeps that scenario's objects until the next run or ``kailab
down``). The figures are the issue's ("One Lab, partitions behind the runtime") targets: one read, one runtime.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="a checkout whose kailab to run (default: the installed one)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="kailab's arguments, e.g. demo quota")
    args = parser.parse_args()
    if args.source:
        sys.path.insert(0, str(args.source.resolve()))
    import kailab
    from kailab import cli
    from kailab.labstate import LabState
    from kailab.runtimes.base import Runtime

    package = str(Path(kailab.__file__).parent) + os.sep
    engine = package + os.path.join("scenarios", "engine.py")
    counts = {"reads": 0, "runtimes": 0, "hops": 0}
    pairs: set[tuple[str, str]] = set()

    read, init = LabState.read.__func__, Runtime.__init__  # type: ignore[attr-defined]

    def counted_read(cls, *a, **k):
        counts["reads"] += 1
        return read(cls, *a, **k)

    def counted_init(self, *a, **k):
        counts["runtimes"] += 1
        return init(self, *a, **k)

    LabState.read = classmethod(counted_read)  # type: ignore[method-assign, assignment]
    Runtime.__init__ = counted_init  # type: ignore[method-assign]

    def module(filename: str) -> str | None:
        return filename[len(package) :] if filename.startswith(package) else None

    def stack_hops(frame) -> list[str]:
        """The kailab modules on the stack, outermost first, each once per run of frames in it."""
        chain: list[str] = []
        while frame is not None:
            m = module(frame.f_code.co_filename)
            if m and (not chain or chain[-1] != m):
                chain.append(m)
            frame = frame.f_back
        return list(reversed(chain))

    def report(where: str, stack: list[str] | None = None) -> None:
        print(
            json.dumps(
                {
                    "kailab": package,
                    "command": " ".join(args.command),
                    "until": where,
                    "module_hops": counts["hops"],
                    "module_pairs": len(pairs),
                    "modules": len({m for pair in pairs for m in pair}),
                    "lab_json_reads": counts["reads"],
                    "runtimes_built": counts["runtimes"],
                    **({"stack_hops": len(stack) - 1, "stack": " → ".join(stack)} if stack else {}),
                },
                indent=1,
            ),
            file=sys.__stdout__,
            flush=True,
        )

    def profile(frame, event, arg):
        if event != "call":
            return
        callee = module(frame.f_code.co_filename)
        if callee is None:
            return
        if frame.f_code.co_filename == engine and frame.f_code.co_name == "_":  # a step's player: the first step
            sys.setprofile(None)
            report("the first step", stack_hops(frame))
            os._exit(0)
        caller = frame.f_back and module(frame.f_back.f_code.co_filename)
        if caller and caller != callee:
            counts["hops"] += 1
            pairs.add((caller, callee))

    sys.argv = ["kailab", *args.command]
    sys.setprofile(profile)
    try:
        cli.main()
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
    report("the end of the command")


if __name__ == "__main__":
    main()
