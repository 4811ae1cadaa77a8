"""The web server: textual-serve's page and terminal, behind the token, the
Origin check, the operator rules and the session limits of `guard`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import aiohttp_jinja2
import jinja2
import textual_serve
from aiohttp import WSMsgType, web

from . import guard
from .process import ConsoleProcess

log = logging.getLogger("phasegate.serve")

_ASSETS = Path(textual_serve.__file__).resolve().parent
_STATIC = _ASSETS / "static"

#: The page loads only from this server (the upstream template also asks for
#: a web font from a third party, which a sealed network would not want).
_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "font-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


@dataclass(frozen=True)
class ServeConfig:
    """How `phasegate serve` was asked to serve (its flags)."""

    db: str
    """The store each console opens (a path or URL)."""
    host: str = "127.0.0.1"
    """The address listened on (loopback unless a proxy in front authenticates)."""
    port: int = 8765
    """The port listened on (0: any free port, printed)."""
    read_only: bool = True
    """Consoles that only show (the default): no decision from a browser without `--allow-decisions`."""
    operator_header: str | None = None
    """The header an authenticating proxy names the user in, or None."""
    max_sessions: int = 4
    """At most this many consoles at once; one more is refused."""
    idle_timeout: float = 900.0
    """Seconds without a key, a click or a resize after which a session is closed."""
    login: str = "unknown"
    """The server's user: decisions record `web:<login>` when no proxy names the user."""


@dataclass
class Session:
    """One browser's console: its process and its WebSocket."""

    process: ConsoleProcess
    """The console process serving it."""
    websocket: web.WebSocketResponse
    """The browser's connection."""
    last_active: float = field(default_factory=time.monotonic)
    """When the browser last sent a key, a click or a resize (monotonic seconds)."""


class ConsoleServer:
    """Serves the console page and one console process per WebSocket."""

    def __init__(
        self,
        config: ServeConfig,
        argv: list[str],
        *,
        token: str | None = None,
        out: TextIO | None = None,
    ) -> None:
        self.config = config
        """How it serves."""
        self.argv = argv
        """The command line each session's console is started with."""
        self._token = token or guard.new_token()
        self._out = out or sys.stdout
        self._sessions: dict[int, Session] = {}
        self._starting = 0
        self._next_id = 0
        self._stopping = False

    # -- the aiohttp application ----------------------------------------------

    def make_app(self) -> web.Application:
        """The web application: the page, its static files and the WebSocket, behind the token."""
        app = web.Application(middlewares=[self._require_token], client_max_size=64 * 1024)
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(_ASSETS / "templates"), autoescape=True)
        app.add_routes(
            [
                web.get("/{token}/", self.handle_index),
                web.get("/{token}/ws", self.handle_websocket),
                web.get("/{token}/static/{path:.+}", self.handle_static),
            ]
        )
        return app

    @web.middleware
    async def _require_token(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        # Checked before routing, for every path: without the token nothing is
        # served, nothing says what is here, and no process starts.
        first = request.path.lstrip("/").split("/", 1)[0]
        if not guard.token_matches(first, self._token):
            log.warning("refused %s from %s: no valid token", request.method, request.remote)
            return web.Response(status=403, text="403: a valid access token is required\n")
        response = await handler(request)
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("Cache-Control", "no-store")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The console's page, pointed at this server's WebSocket."""
        scheme = "wss" if self._secure(request) else "ws"
        context: dict[str, Any] = {
            "font_size": _int(request.query.get("fontsize"), 16, 6, 48),
            "app_websocket_url": f"{scheme}://{request.host}/{self._token}/ws",
            "config": {"static": {"url": f"/{self._token}/static/"}},
            "application": {"name": "phasegate console" + (" (read-only)" if self.config.read_only else "")},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Content-Security-Policy"] = _CSP
        return response

    async def handle_static(self, request: web.Request) -> web.StreamResponse:
        """A static file of the page (nothing outside the static folder)."""
        target = (_STATIC / request.match_info["path"]).resolve()
        if not target.is_relative_to(_STATIC) or not target.is_file():
            raise web.HTTPNotFound()
        return web.FileResponse(target)

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        """One browser's session: admitted (origin, operator, room left), then a console process of its own until
        either side closes."""
        refusal = self._admit(request)
        if isinstance(refusal, guard.Refusal):
            log.warning("refused a session from %s: %s", request.remote, refusal.reason)
            return web.Response(status=refusal.status, text=f"{refusal.status}: {refusal.reason}\n")
        operator = refusal
        # Reserved before the first await, so two requests cannot both take the last place.
        self._starting += 1
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=64 * 1024)
        try:
            await websocket.prepare(request)
            process = ConsoleProcess(
                self.argv,
                operator=operator,
                db=self.config.db,
                web_user=operator if self.config.operator_header else None,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=partial(_close, websocket),
            )
            width = _int(request.query.get("width"), 80, 20, 500)
            height = _int(request.query.get("height"), 24, 5, 300)
            await process.start(width, height)
        except BaseException:
            self._starting -= 1
            raise
        self._next_id += 1
        sid = self._next_id
        session = self._sessions[sid] = Session(process, websocket)
        self._starting -= 1
        log.info("session %d opened for %s (process %s)", sid, operator, process.pid)
        try:
            await self._relay(session)
        finally:
            self._sessions.pop(sid, None)
            await process.stop()
            await websocket.close()
            log.info("session %d closed", sid)
        return websocket

    def _admit(self, request: web.Request) -> str | guard.Refusal:
        """The operator name of a new session, or why it is refused."""
        if self._stopping:
            return guard.Refusal(503, "the server is stopping")
        if not guard.origin_matches(request.headers.get("Origin"), request.host):
            return guard.Refusal(403, "the page's origin is not this server")
        header = self.config.operator_header
        who = guard.operator_for(
            header=header,
            # Every copy of the header, joined: a repeated one is refused (guard.py), not its first value believed.
            value=",".join(request.headers.getall(header, [])) or None if header else None,
            peer=request.remote,
            login=self.config.login,
        )
        if isinstance(who, guard.Refusal):
            return who
        if len(self._sessions) + self._starting >= self.config.max_sessions:
            return guard.Refusal(503, f"all {self.config.max_sessions} sessions are in use")
        return who

    def _secure(self, request: web.Request) -> bool:
        # A TLS-terminating proxy on this machine says the browser used https.
        forwarded = request.headers.get("X-Forwarded-Proto", "").lower() == "https"
        return request.secure or (forwarded and guard.is_loopback(request.remote))

    async def _relay(self, session: Session) -> None:
        """The browser's keys, clicks and resizes to the console process; the
        process's output goes back through the callbacks it was given."""
        process = session.process
        async for message in session.websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind, data = envelope[0], (envelope[1] if len(envelope) > 1 else None)
            except (ValueError, TypeError, IndexError, KeyError):
                continue  # not the page's protocol: ignored
            if kind == "stdin" and isinstance(data, str):
                # Only what a person does counts as activity: a page left open
                # sends blur, focus and ping on its own, and would keep an
                # unattended session (write-capable, maybe) open for ever.
                session.last_active = time.monotonic()
                await process.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                session.last_active = time.monotonic()
                await process.set_terminal_size(
                    _int(data.get("width"), 80, 20, 500), _int(data.get("height"), 24, 5, 300)
                )
            elif kind == "ping" and isinstance(data, str):
                await session.websocket.send_json(["pong", data])
            elif kind == "blur":
                await process.blur()
            elif kind == "focus":
                await process.focus()

    # -- limits and shutdown --------------------------------------------------

    @property
    def session_count(self) -> int:
        """How many sessions are open now."""
        return len(self._sessions)

    async def close_idle(self) -> None:
        """Close every session idle for longer than the timeout."""
        now = time.monotonic()
        for sid, session in list(self._sessions.items()):
            if now - session.last_active > self.config.idle_timeout:
                log.info("session %d idle for %.0fs: closing it", sid, now - session.last_active)
                await session.websocket.close(code=4000, message=b"idle timeout")

    async def _reap_idle(self) -> None:
        every = max(0.5, min(30.0, self.config.idle_timeout / 4))
        while True:
            await asyncio.sleep(every)
            await self.close_idle()

    async def close_all(self) -> None:
        """Stop every console process and close its page (on SIGTERM)."""
        self._stopping = True
        sessions = list(self._sessions.values())
        await asyncio.gather(*(s.process.stop() for s in sessions), return_exceptions=True)
        await asyncio.gather(
            *(s.websocket.close(code=1001, message=b"server stopping") for s in sessions), return_exceptions=True
        )

    async def run(self, ready: Callable[[str], None] | None = None) -> None:
        """Serve until SIGTERM or SIGINT; then stop every session and return."""
        runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=5)
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ListenError(
                f"cannot listen on {self.config.host}:{self.config.port}: {exc.strerror or exc}"
            ) from None
        port = runner.addresses[0][1]
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/{self._token}/"
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        # The URL is the one place the token appears: on this terminal, never in a log.
        print(f"phasegate console at {url}", file=self._out, flush=True)
        if ready is not None:
            ready(url)
        reaper = asyncio.create_task(self._reap_idle())
        try:
            await stop.wait()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            await self.close_all()
            await runner.cleanup()


class ListenError(OSError):
    """The address cannot be bound (in use, not this machine's, not permitted)."""


async def _close(websocket: web.WebSocketResponse) -> None:
    """The console quit (the operator pressed q): its page shows "closed"."""
    await websocket.close()


def _int(value: object, default: int, low: int, high: int) -> int:
    try:
        number = int(str(value))
    except ValueError:
        return default
    return max(low, min(high, number))
