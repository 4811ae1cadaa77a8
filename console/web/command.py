"""`phasegate serve`: registered by the engine's CLI (see `phasegate.cli.parser.EXTERNAL`).

Only argparse at import time: the web server and textual-serve load when the
command runs, and a missing `web` extra is one line, not a traceback."""

from __future__ import annotations

import argparse
import getpass
import logging
import sys
from typing import Any

from phasegate import PhasegateError, UsageError
from phasegate.ops import WAIT_SECONDS, JsonFormatter, SafeFormatter, default_db

from . import guard


def add_serve(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve the console to a browser (needs the web extra)",
        description="Serve the operations console to a browser. Loopback only, a secret token in the URL, "
        "read-only unless --allow-decisions.",
    )
    p.add_argument("--db", default=None, help="database path or URL (default: $PHASEGATE_DB, else ./phasegate.db)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765; 0 picks a free one)")
    p.add_argument(
        "--allow-decisions", action="store_true", help="let browser sessions record decisions (default: read-only)"
    )
    p.add_argument("--allow-remote", action="store_true", help="allow listening on an address other than loopback")
    p.add_argument(
        "--operator-header",
        default=None,
        metavar="NAME",
        help="take the operator's name from this header, set by an authenticating proxy on this machine",
    )
    p.add_argument("--max-sessions", type=int, default=4, metavar="N", help="concurrent sessions (default 4)")
    p.add_argument(
        "--idle-timeout",
        type=WAIT_SECONDS.argtype(),
        default=900.0,
        metavar="SECONDS",
        help="close a session after this long without input (1 s to a year; default 900)",
    )
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines as text (default) or as one JSON object a line (time, level, event, run_id, phase, message)",
    )
    p.set_defaults(fn=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, not {args.port}")
    if args.max_sessions < 1:
        raise UsageError(f"--max-sessions must be at least 1, not {args.max_sessions}")
    if args.operator_header is not None and not guard.valid_header_name(args.operator_header):
        raise UsageError(f"--operator-header {args.operator_header!r} is not an HTTP header name")
    if not guard.is_loopback(args.host):
        if not args.allow_remote:
            raise UsageError(f"--host {args.host} is not a loopback address; add --allow-remote to listen on it")
        print(
            f"phasegate: warning: listening on {args.host}: anyone who can reach it and has the URL gets the "
            "console; put a reverse proxy with authentication and TLS in front",
            file=sys.stderr,
        )
    try:
        from .process import console_argv
        from .server import ConsoleServer, ListenError, ServeConfig
    except ImportError as exc:
        raise UsageError(
            f"phasegate serve needs the web extra ({exc.name} is missing): pip install 'phasegate[web]'"
        ) from None

    db = args.db or default_db()
    # Opened once here, so a wrong path is one line now, not an error in every browser session.
    from phasegate import Engine  # here: every command registers `serve`, few run it

    Engine(db, create=False, readonly=True).close()
    config = ServeConfig(
        db=db,
        host=args.host,
        port=args.port,
        read_only=not args.allow_decisions,
        operator_header=args.operator_header,
        max_sessions=args.max_sessions,
        idle_timeout=args.idle_timeout,
        login=_login(),
    )
    _log_to_stderr(json_lines=args.log_format == "json")
    server = ConsoleServer(config, console_argv(read_only=config.read_only))
    try:
        import asyncio

        asyncio.run(server.run())
    except ListenError as exc:
        raise ServeError(str(exc)) from None
    return 0


class ServeError(PhasegateError):
    """`phasegate serve` cannot serve (the address is taken, a flag is refused): one line, exit 2."""

    title = "cannot serve"
    """The error's title."""


def _login() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return "unknown"


def _log_to_stderr(*, json_lines: bool = False) -> None:
    # Sessions opened and refused are worth seeing; aiohttp's access log is
    # off (its lines would carry the token in the path).
    handler = logging.StreamHandler(sys.stderr)
    # One event, one line: a name from a header or a path cannot forge a line.
    handler.setFormatter(JsonFormatter() if json_lines else SafeFormatter("%(asctime)s serve %(message)s"))
    log = logging.getLogger("phasegate.serve")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
