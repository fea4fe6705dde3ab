"""Test workers side by side: each pytest-xdist worker runs its labs in a network namespace of its own.

A local lab binds fixed loopback ports (KAI's podgroup-controller always listens on :8080), so two labs cannot share
one network namespace. Where this process may make namespaces (root on Linux), ``python -m pytest`` runs several
workers (pyproject.toml: ``-n auto``, ``pytest_xdist_auto_num_workers`` in conftest.py), and each worker runs its
lab and the fleet tests in a namespace of its own, with only its own loopback (:func:`private_network`); the rest
(builds that download Go modules, unit tests, the kind tests, whose API server Docker publishes on the machine's
loopback) stays on the machine's network. Elsewhere one worker runs everything on the machine's network, as before.

Linux keeps a network namespace per thread: the calls below move the calling (main) thread, and the processes
and threads it starts while there stay there.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000  # <sched.h>
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # <linux/sockios.h>, <net/if.h>
# Labs side by side on 2 cores: most of a fleet test's time is waiting. 3 workers beside the kind tests loaded the
# cores to 16 and lessons' waits failed.
WORKERS = 2

_wanted = False  # set in each worker when several run
_private: int | None = None  # this worker's own network namespace (an fd), once made
_machine: int | None = None  # the machine's network namespace (an fd), kept when the worker's own is made


def _libc_call(name: str, *args: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")


def _namespace_fd() -> int:
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # made in the new namespace: its own "lo"
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def private_networks_possible() -> bool:
    """True when this process may make network namespaces (tried in a child, which then exits)."""
    if not hasattr(os, "fork") or not os.path.exists("/proc/thread-self/ns/net"):
        return False
    pid = os.fork()
    if pid == 0:  # the child: try, and say by the exit status
        try:
            _libc_call("unshare", CLONE_NEWNET)
            _loopback_up()
            os._exit(0)
        except BaseException:  # noqa: BLE001 (any failure means no)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def use_private_networks() -> None:
    """From now on :func:`private_network` moves this worker's labs to a namespace of their own (one for the worker,
    made the first time)."""
    global _wanted
    _wanted = True


@contextmanager
def _back_after() -> Iterator[None]:
    """Run the block, then move this thread back to the network namespace it was in."""
    here = _namespace_fd()
    try:
        yield
    finally:
        _libc_call("setns", here, CLONE_NEWNET)
        os.close(here)


@contextmanager
def private_network() -> Iterator[None]:
    """Run the block (and what it starts) in this worker's own network namespace, with its own loopback; on the
    machine's where this worker runs alone."""
    global _private, _machine
    if not _wanted:
        yield
        return
    with _back_after():
        if _private is None:
            _machine = _namespace_fd()
            _libc_call("unshare", CLONE_NEWNET)
            _loopback_up()
            _private = _namespace_fd()
        else:
            _libc_call("setns", _private, CLONE_NEWNET)
        yield


@contextmanager
def machine_network() -> Iterator[None]:
    """Run the block (and what it starts) on the machine's network, from inside this worker's own (a build that
    downloads Go modules, first needed by a test that runs there); as it is where there is no namespace of its own."""
    if _machine is None:
        yield
        return
    with _back_after():
        _libc_call("setns", _machine, CLONE_NEWNET)
        yield
