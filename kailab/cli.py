"""The kailab command line: every command in ``--help``'s order, and the one place an error is printed.

The commands are in kailab/commands/, one module per group. A KailabError is printed once, with what to do, exit
code 1; no tracebacks unless ``KAILAB_DEBUG=1``.
"""

from __future__ import annotations

import os
import signal
import sys

import typer
from rich.text import Text

from kailab.commands import claims, lab, lessons, look, machine
from kailab.commands.typer_help import flags_without_a_type
from kailab.errors import KailabError
from kailab.lesson import EXERCISE_NAMES
from kailab.progress import stderr

# The epilog stands for the hidden demo-NAME shortcuts (one line, not twelve commands).
app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="A lab that teaches GPU queue scheduling with KAI Scheduler on a fleet of fake GPUs.",
    epilog="demo-NAME   shortcut for demo NAME: kailab demo-quota, kailab demo-borrow, …",
)
flags_without_a_type()

for name, command in (
    ("up", lab.up),
    ("down", lab.down),
    ("status", lab.status),
    ("kubeconfig", lab.kubeconfig),
    ("queues", lab.apply_queues),
    ("run", lessons.run),
    ("demo", lessons.demo),
    ("explain", look.explain),
    ("watch", look.watch),
    ("serve", look.serve),
    ("lesson", lessons.lesson),
    ("challenge", lessons.challenge),
    ("claims", claims.claims),
    ("evidence", look.evidence),
    ("bench", machine.bench),
    ("doctor", machine.doctor),
    ("version", machine.version),
    ("join", lab.join),
):
    app.command(name)(command)
for name in EXERCISE_NAMES:  # kailab demo-quota, demo-borrow …: one per exercise, listed once in --help (the epilog)
    app.command(f"demo-{name}", hidden=True)(lessons.demo_shortcut(name))


@app.callback()
def _slice(ctx: typer.Context) -> None:
    """Every command of a learner who joined a class first says whose slice it acts on; in a folder whose join
    record is damaged, every command but ``down`` (which clears it), ``join``, ``version`` and ``doctor`` says so
    instead."""
    from kailab.classroom.joined import DamagedJoin
    from kailab.lab import Lab, LearnerSlice

    try:
        opened = Lab.open()
    except DamagedJoin:
        if ctx.invoked_subcommand in ("down", "join", "version", "doctor"):
            return
        raise
    except Exception:  # noqa: BLE001 (another damaged file: the command itself says what is wrong)
        return
    if isinstance(opened, LearnerSlice):
        from kailab.classroom.joined import slice_line

        stderr.print(slice_line(opened.learner), markup=False, highlight=False)


def _add_class_commands() -> None:
    from kailab.commands.klass import app as class_app

    app.add_typer(class_app, name="class")


_add_class_commands()


def _api_refused(e) -> None:
    """An API error no command turned into words: what the server said, and for 403 what to ask for."""
    from kailab.api_errors import api_error_words

    stderr.print(
        Text.assemble(("✗ Error:", "red"), f" The cluster's API server refused a request: {api_error_words(e)}.")
    )
    hint = (
        "The kubeconfig's user lacks that permission (the verb, resource and API group above): ask the "
        "cluster's admin to grant it, or use a kubeconfig with those rights."
        if e.status == 403
        else "See: kailab status"
    )
    stderr.print(Text.assemble(("→", "yellow"), f" {hint}"))
    sys.exit(1)


def _os_failed(e: OSError) -> None:
    """A write the system refused: to the output (a full device, a closed pipe) or to a named file."""
    import errno

    try:
        sys.stdout = open(os.devnull, "w")  # the interpreter's own last flush must not fail again
    except OSError:
        pass
    if e.errno == errno.EPIPE:  # `kailab status | head -1`: the reader has all it wanted
        sys.exit(1)
    where = f"{e.filename}" if e.filename else "kailab's output"
    try:
        stderr.print(Text.assemble(("✗ Error:", "red"), f" Cannot write {where}: {e.strerror or e}."))
        stderr.print(
            Text.assemble(
                ("→", "yellow"),
                " Free some space or choose another place, then run again."
                if e.errno in (errno.ENOSPC, errno.EDQUOT)
                else " Choose a place you can write.",
            )
        )
    except OSError:
        pass  # stderr too is full or closed: the exit code says it
    sys.exit(1)


def _stop_like_ctrl_c(signum, frame) -> None:
    raise KeyboardInterrupt  # the same clean-up as Ctrl-C: a half-made lab, the bench's nodes, are removed


def main() -> None:
    """Entry point. Typer reports usage errors itself (exit 2); a KailabError is printed once, exit 1.
    SIGTERM (a CI timeout, ``kill``) stops a command as Ctrl-C does, so its clean-up runs."""
    from kailab.termtext import plain_library_output

    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)
    plain_library_output()  # a library's warning or log line on stderr is text, never a terminal's command
    try:
        try:
            app()  # standalone: usage errors, --help and Ctrl-C are Typer's; it ends with SystemExit
        finally:
            sys.stdout.flush()  # here, where a full disk or a closed pipe is said, not at the interpreter's exit
    except KailabError as e:
        if os.environ.get("KAILAB_DEBUG"):
            raise
        stderr.print(Text.assemble(("✗ Error:", "red"), f" {e.message}"))
        if e.details:
            stderr.print(e.details)
        if e.hint:
            stderr.print(Text.assemble(("→", "yellow"), f" {e.hint}"))
        sys.exit(e.exit_code)
    except OSError as e:  # output to a full disk or a closed pipe, a folder that cannot be written
        if os.environ.get("KAILAB_DEBUG"):
            raise
        _os_failed(e)
    except Exception as e:  # API errors, bugs: one line, not a traceback
        if os.environ.get("KAILAB_DEBUG"):
            raise
        if getattr(e, "status", None) == 401:  # kubernetes' ApiException and the dynamic client's errors carry it
            stderr.print(
                Text.assemble(
                    ("✗ Error:", "red"),
                    " The cluster no longer accepts this lab's credential (401 "
                    "Unauthorized). A class credential: your class has ended or your credential "
                    "was revoked.",
                )
            )
            stderr.print(
                Text.assemble(
                    ("→", "yellow"), " Ask your instructor for a new kubeconfig; for a lab of your own: kailab up"
                )
            )
            sys.exit(1)
        from kubernetes.client.exceptions import ApiException

        if isinstance(e, ApiException):
            _api_refused(e)
        stderr.print(Text.assemble(("✗ Unexpected error:", "red"), f" {type(e).__name__}: {str(e).strip()[:600]}"))
        stderr.print(
            Text.assemble(("→", "yellow"), " Run again with KAILAB_DEBUG=1 for the traceback, and please report it.")
        )
        sys.exit(1)
