"""A lab opened to a network (``kailab up --address``): this machine's addresses, a free port, the learners' URL.

Which addresses are this machine's, whether a port is free at one, and the URL learners on other machines reach the
lab's API server at.

A lab listens on loopback unless ``--address`` names an address of this machine; then its API server — and only
its API server — answers there too, with a serving certificate valid for that address. Pure checks and words; the
runtimes open the API server (local: kwokctl's kube-apiserver, kind: ``networking.apiServerAddress``).
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse

import psutil

from kailab.errors import KailabError


def machine_addresses() -> list[str]:
    """Every IP address of this machine's interfaces (in this network namespace), loopback included."""
    found = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                found.append(entry.address.split("%", 1)[0])  # fe80::1%eth0 → fe80::1
    return found


def check_address(text: str, addresses: list[str] | None = None) -> str:
    """``text`` as an address learners can be given, in its normal form; a clear error when it is not an IP address,
    is loopback or unspecified (no one else reaches those), or is not one of this machine's (``addresses``: None,
    :func:`machine_addresses`)."""
    have = machine_addresses() if addresses is None else addresses
    theirs = sorted(a for a in have if not ipaddress.ip_address(a).is_loopback)
    choose = (
        f"This machine's addresses: {', '.join(theirs)}." if theirs else "This machine has no address but loopback."
    )
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        raise KailabError(
            f"--address {text!r} is not an IP address.",
            hint=f"Give the address of this machine that learners reach (ip -brief address shows them). {choose}",
        ) from None
    if ip.is_unspecified or ip.is_loopback:
        raise KailabError(
            f"--address {ip} is {'no address' if ip.is_unspecified else 'loopback'}: learners on other machines "
            "cannot reach this machine there.",
            hint="Leave --address out for a lab on this machine only, or give the address learners reach. " + choose,
        )
    if ip.is_link_local:
        raise KailabError(
            f"--address {ip} is a link-local address, which differs per network interface and cannot be put in a "
            "kubeconfig as it is.",
            hint=choose,
        )
    if str(ip) not in {str(ipaddress.ip_address(a)) for a in have}:
        raise KailabError(f"--address {ip} is not an address of this machine.", hint=choose)
    return str(ip)


def listen_all(address: str) -> str:
    """The bind address that makes a server answer at ``address`` and on loopback: every address of its family
    (kube-apiserver takes one bind address, and the lab's own components reach it on loopback)."""
    return "::" if ipaddress.ip_address(address).version == 6 else "0.0.0.0"


def port_taken(address: str, port: int) -> bool:
    """True when something listens on ``port`` at ``address`` (or at every address, which includes it)."""
    family = socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((listen_all(address), port))
        except OSError:
            return True
    return False


def host_port(address: str, port: int) -> str:
    """``10.0.0.1:80``, ``[::]:80``: an address and port as one would type them."""
    return f"[{address}]:{port}" if ipaddress.ip_address(address).version == 6 else f"{address}:{port}"


def with_host(url: str, address: str) -> str:
    """``url`` (``https://127.0.0.1:PORT``) with ``address`` as its host: what learners elsewhere reach."""
    parts = urllib.parse.urlsplit(url)
    host = f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host))
