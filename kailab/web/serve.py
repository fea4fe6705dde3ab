"""Serving a page of the lab a command opened: the address bound, the watches started, uvicorn until Ctrl-C.

The address is checked and bound before anything starts (a port in use, an address that is not this machine's: one
clear error), then the hub's watches (the lab answers, or one clear error), then uvicorn until Ctrl-C or SIGTERM,
which stop it cleanly (watches ended, no thread left)."""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kailab.errors import KailabError
from kailab.web.hub import Hub

if TYPE_CHECKING:
    from kailab.lab import Lab

LOOPBACK = "127.0.0.1"
LAB_PORT = 8390  # kailab serve
CLASS_PORT = 8391  # kailab class serve: beside a lab's page on the same machine


def machine_addresses() -> list[str]:
    """This machine's addresses (IPv4 first), to say where the page can be bound or reached."""
    import psutil

    found = {
        a.address.split("%")[0]
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family in (socket.AF_INET, socket.AF_INET6)
    }
    return sorted(found, key=lambda a: (":" in a, a))


def bind(address: str, port: int) -> socket.socket:
    """A listening socket on ``address``:``port`` (0: any free port); a KailabError that says what to do when the
    port is taken, the address is not this machine's, or is not an address at all."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise KailabError(
            f"--address {address!r} is not an address of this machine ({getattr(e, 'strerror', None) or e}).",
            hint=f"Give one of: {', '.join(machine_addresses())} (0.0.0.0: all of them).",
        ) from None
    family, _, _, _, where = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a page just stopped: its port again at once
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if address in ("::", "") else 1)
        sock.bind(where)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise bind_error(e, address, port) from None
    return sock


def bind_error(e: OSError, address: str, port: int) -> KailabError:
    if e.errno == errno.EADDRINUSE:
        return KailabError(
            f"Port {port} on {address} is already in use (another kailab serve, or another program).",
            hint=f"Choose another: --port {port + 10} — or see what listens there: ss -ltnp 'sport = :{port}'",
        )
    if e.errno == errno.EADDRNOTAVAIL:
        return KailabError(
            f"{address} is not an address of this machine, so the page cannot be served there.",
            hint=f"Give one of: {', '.join(machine_addresses())} (0.0.0.0: all of them).",
        )
    if e.errno == errno.EACCES:
        return KailabError(
            f"Port {port} needs root on this machine.", hint=f"Choose a port above 1023: --port {LAB_PORT}"
        )
    return KailabError(f"The page cannot listen on {address} port {port}: {e.strerror or e}.")


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def run(hub: Hub, page, sock: socket.socket, said: Callable[[str], None]) -> None:
    """Serve until Ctrl-C or SIGTERM; the hub is started here and stopped, its watches with it, however it ends."""
    import uvicorn

    from kailab.web.app import make_app

    address = sock.getsockname()[0]
    local = is_loopback(address)
    try:
        hub.start()
    except BaseException:
        sock.close()
        raise
    try:
        app = make_app(hub, page, local_only=address.startswith("127."))  # Host: 127.0.0.1 or localhost
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=1, server_header=False
        )
        said(f"Serving {page.title(hub.view).removeprefix('kailab — ')}'s page at {url(sock)}")
        if not local:
            unspecified = address in ("0.0.0.0", "::")
            where = ", ".join(a for a in machine_addresses() if not is_loopback(a)) if unspecified else address
            said(
                f"Anyone who reaches {where or address} on port {sock.getsockname()[1]} sees it: read-only, the "
                "class's progress only, never a credential."
            )
        said("Ctrl-C stops it.")
        sys.stdout.flush()  # the address now, also through a pipe
        try:
            uvicorn.Server(config).run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn stops on the signal, then raises it again for the caller: done
            pass
    finally:
        sock.close()
        hub.stop()


def serve_lab(lab: Lab, address: str, port: int, said: Callable[[str], None]) -> None:
    """``kailab serve``: this lab's page (a joined learner's: their slice, as ``kailab watch`` sees it), until
    Ctrl-C."""
    from kailab.labels import LEARNER_LABEL, RECORD_LABEL
    from kailab.web.app import Page
    from kailab.web.models import LabModel

    sock = bind(address, port)  # a taken port or a wrong address is said before the lab is asked anything
    try:
        kube = lab.kube
        if lab.learner:
            model = LabModel(kube, lab.view, f"learner {lab.learner}")
        else:  # the lab's own lesson records, not a class learner's
            model = LabModel(kube, lab.view, "the lab", lab.owner.selector(RECORD_LABEL, f"!{LEARNER_LABEL}"))
    except BaseException:
        sock.close()
        raise
    run(Hub(model), Page(model), sock, said)


def serve_class(lab: Lab, address: str, port: int, stuck_after: float, said: Callable[[str], None]) -> None:
    """``kailab class serve``: the class's page, with the instructor's kubeconfig alone, until Ctrl-C."""
    from kailab.web.app import Page
    from kailab.web.models import ClassModel

    klass = lab.klass()  # no lab, or a learner's folder: said before anything is bound
    sock = bind(address, port)
    try:
        model = ClassModel(lab.kube, klass.learners, stuck_after)
    except BaseException:
        sock.close()
        raise
    run(Hub(model), Page(model), sock, said)
