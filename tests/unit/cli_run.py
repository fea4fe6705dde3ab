"""The kailab command line run in this process, as a user runs it: its exit code, stdout and stderr.

``kailab.cli.main`` with these arguments, ``KAILAB_HOME`` (and any other variables) set, stdin given, in a folder:
what a ``python -m kailab`` process would print, without starting one (each start costs about a second). A few
tests still start the process itself (tests/unit/test_bad_inputs.py's smoke tests, tests/unit/test_said.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path


def kailab(
    *args: str, home: Path, stdin: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``kailab ARGS`` here; never raises for the command's own failures (they are its exit code)."""
    from kailab import cli

    wanted = {"KAILAB_HOME": str(home), **(env or {})}
    saved_env = {k: os.environ.get(k) for k in (*wanted, "KAILAB_DEBUG")}
    saved = (sys.argv, sys.stdin, os.getcwd(), signal.getsignal(signal.SIGTERM))
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        os.environ.update(wanted)
        os.environ.pop("KAILAB_DEBUG", None)
        sys.argv = ["kailab", *args]
        sys.stdin = io.StringIO(stdin or "")
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv, sys.stdin = saved[0], saved[1]
        os.chdir(saved[2])
        signal.signal(signal.SIGTERM, saved[3])
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(["kailab", *args], code, out.getvalue(), err.getvalue())
