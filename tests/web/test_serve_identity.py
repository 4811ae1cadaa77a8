"""#29 finding 3 through a real `phasegate serve`: a WebSocket handshake
carrying the operator header twice (a proxy that appends instead of
replacing) or a comma-joined value opens no session, whatever comes first."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any


def raw_handshake(served: Any, header_lines: list[str]) -> int:
    """A WebSocket opening handshake written byte by byte, so one header can
    be sent twice; returns the HTTP status (101 = a session opened)."""
    host, port = served.hostport.rsplit(":", 1)
    lines = [
        f"GET /{served.token}/ws?width=80&height=24 HTTP/1.1",
        f"Host: {served.hostport}",
        f"Origin: {served.origin}",
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        *header_lines,
    ]
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = s.makefile("rb").readline().decode()
    return int(status_line.split()[1])


def test_a_repeated_or_comma_joined_operator_header_is_refused(store: Path, serve: Any) -> None:
    served = serve(store, "--allow-decisions", "--operator-header", "X-Forwarded-User")
    for lines in (
        ["X-Forwarded-User: mallory", "X-Forwarded-User: alice"],
        ["X-Forwarded-User: alice", "x-forwarded-user: alice"],
        ["X-Forwarded-User: mallory, alice"],
        ["X-Forwarded-User: mallory,alice"],
    ):
        assert raw_handshake(served, lines) == 403, lines
    assert served.children() == []
    assert "was sent more than once" in served.log()
    # One plain name still opens a session.
    assert raw_handshake(served, ["X-Forwarded-User: alice"]) == 101
