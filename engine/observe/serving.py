"""Serving `/metrics`: the address parsed, loopback unless asked, the bound
port said on stderr (`127.0.0.1:0` picks a free one)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from . import logs

#: The extra a metrics flag needs, as the one-line refusal names it.
NEEDS_METRICS = "pip install 'phasegate[metrics]'"


def is_loopback(host: str | None) -> bool:
    """A loopback address, or `localhost`: what may be served without
    `--allow-remote`, and a peer the served console trusts as this machine.

    Args:
        host: A host name or an IP address (IPv6 with or without brackets,
            with or without a zone); None or "" is an unknown peer.

    Returns:
        Whether only this machine can connect to it (an unknown or
        unparsable host is not).
    """
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback


@dataclass(frozen=True)
class Address:
    """Where to listen."""

    host: str
    """The host or address, without IPv6 brackets."""
    port: int
    """The port; 0 picks a free one."""


def parse_address(text: str, flag: str, *, allow_remote: bool = False) -> Address:
    """`HOST:PORT` (`[::1]:9464` for IPv6, or a bare `PORT` on 127.0.0.1), checked.

    Args:
        text: What the flag was given.
        flag: The flag's name, for the refusal.
        allow_remote: Whether an address other than loopback may be used.

    Returns:
        The address.

    Raises:
        UsageError: Not an address, a port out of range, or not loopback without `allow_remote`.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"{flag} {text!r} is not HOST:PORT") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"{flag}: the port must be 0..65535, not {port}")
    if not is_loopback(host) and not allow_remote:
        raise UsageError(f"{flag} {host} is not a loopback address; add --allow-remote to listen on it")
    return Address(host, port)


def serve(registry: Any, address: Address) -> Any:
    """Serve `registry` at `http://ADDRESS/metrics` from a daemon thread.

    Args:
        registry: A `prometheus_client` registry (or any collector).
        address: Where to listen.

    Returns:
        The server (`.shutdown()` stops it; `.server_port` is the port bound).

    Raises:
        UsageError: The address cannot be listened on.
    """
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(address.port, addr=address.host, registry=registry)
    except OSError as exc:
        raise UsageError(f"cannot listen on {address.host}:{address.port}: {exc.strerror or exc}") from None
    host = f"[{address.host}]" if ":" in address.host else address.host
    # What a test or a person reads to find a port picked by the system.
    logs.say(f"metrics on http://{host}:{server.server_port}/metrics", logger="phasegate.metrics")
    if not is_loopback(address.host):
        logs.say(
            f"metrics served on {address.host}: anyone who can reach it reads the counts",
            level="warning",
            logger="phasegate.metrics",
            prefix="phasegate: warning: ",
        )
    return server


def require_metrics() -> None:
    """Refuse at once, in one line, when the `metrics` extra is missing.

    Raises:
        UsageError: `prometheus_client` cannot be imported.
    """
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise UsageError(f"metrics need the metrics extra (prometheus_client is missing): {NEEDS_METRICS}") from None
