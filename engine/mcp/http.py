"""`phasegate mcp --http`: streamable HTTP behind a bearer token.

The rule `phasegate serve` keeps: a fresh secret of 256 bits for each start,
printed once on this terminal (never logged), compared in constant time on
every request before anything else reads it; loopback unless
`--allow-remote`. An MCP client sends it as `Authorization: Bearer TOKEN`.
"""

from __future__ import annotations

import hmac
import secrets
import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer

from ..errors import UsageError
from ..observe.serving import Address, is_loopback

PATH = "/mcp"
"""Where the MCP endpoint is served."""


def new_token() -> str:
    """A URL-safe bearer token with 256 bits of randomness (as `serve`'s)."""
    return secrets.token_urlsafe(32)


def authorized(header: bytes | None, token: str) -> bool:
    """Whether an `Authorization` header carries the token, compared in constant time.

    Args:
        header: The header's value, or None when there is none.
        token: The token this server printed.

    Returns:
        True for `Bearer TOKEN`.
    """
    presented = header or b""
    expected = b"Bearer " + token.encode()
    return hmac.compare_digest(presented, expected)


class BearerGuard:
    """An ASGI wrapper: every HTTP request without the token gets 401, and
    reaches nothing else (the lifespan passes, so the app can start)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), None)
            if not authorized(header, self.token):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"401: a valid bearer token is required\n"})
                return
        elif scope["type"] != "lifespan":
            return
        await self.app(scope, receive, send)


def serve(server: MCPServer[Any], address: Address, token: str | None = None) -> None:
    """Serve `server` at `http://ADDRESS/mcp` until SIGINT or SIGTERM.

    Args:
        server: The MCP server.
        address: Where to listen (checked: loopback unless allowed).
        token: The bearer token; None makes a fresh one.

    Raises:
        UsageError: The address cannot be listened on.
    """
    import anyio
    import uvicorn

    token = token or new_token()
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address.host, address.port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {address.host}:{address.port}: {exc.strerror or exc}") from None
    # Listening before the address is said: a client that reads it connects at once.
    sock.listen(128)
    port = sock.getsockname()[1]
    app = BearerGuard(server.streamable_http_app(streamable_http_path=PATH, host=address.host), token)
    host = f"[{address.host}]" if ":" in address.host else address.host
    # The one place the token appears: this terminal, never a log.
    print(
        f"mcp on http://{host}:{port}{PATH} (send the header Authorization: Bearer {token})",
        file=sys.stderr,
        flush=True,
    )
    if not is_loopback(address.host):
        print(
            f"phasegate: warning: mcp served on {address.host}: anyone who can reach it and has the token reads"
            " every run and can propose decisions; put TLS in front",
            file=sys.stderr,
            flush=True,
        )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])
