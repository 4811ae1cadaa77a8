"""`phasegate mcp`: registered by the engine's CLI (`phasegate.cli.parser.EXTERNAL`).

Only argparse at import time: the `mcp` SDK loads when the command runs, and
a missing `mcp` extra is one line naming it, not a traceback."""

from __future__ import annotations

import argparse
from typing import Any

from .._dbpath import default_db
from ..errors import ExitCode, UsageError
from ..observe import serving


def add_mcp(subparsers: Any) -> None:
    """Register `phasegate mcp` on the parser's subcommands.

    Args:
        subparsers: The `phasegate` parser's subcommands.
    """
    p = subparsers.add_parser(
        "mcp",
        help="serve the store to an AI assistant over the Model Context Protocol (needs the mcp extra)",
        description="Serve the store to an AI assistant (MCP): it reads every run and proposes decisions, and "
        "nothing it proposes happens until a person seconds it. stdio by default; --http for streamable HTTP "
        "(loopback only unless --allow-remote, a bearer token printed at start).",
    )
    p.add_argument("--db", default=None, help="database path or URL (default: $PHASEGATE_DB, else ./phasegate.db)")
    p.add_argument(
        "--http",
        default=None,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0 picks one)",
    )
    p.add_argument("--allow-remote", action="store_true", help="allow --http on an address other than loopback")
    p.add_argument(
        "--operator",
        default=None,
        metavar="NAME",
        help="the name the assistant's proposals carry (default: mcp: and the client's own name)",
    )
    p.set_defaults(fn=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    """`phasegate mcp`: serve until the client hangs up (stdio) or a signal stops it (HTTP).

    Args:
        args: The parsed command line.

    Returns:
        The exit code.

    Raises:
        UsageError: The `mcp` extra is missing, a flag is refused, or the store cannot be opened.
    """
    address = serving.parse_address(args.http, "--http", allow_remote=args.allow_remote) if args.http else None
    if args.operator is not None and not args.operator.strip():
        raise UsageError("--operator needs a name")
    try:
        from . import server as _server
    except ImportError as exc:
        raise UsageError(
            f"phasegate mcp needs the mcp extra ({exc.name} is missing): pip install 'phasegate[mcp]'"
        ) from None
    from ..engine import Engine

    with Engine(args.db or default_db(), create=False) as eng:
        srv = _server.build(eng, operator=args.operator)
        if address is None:
            srv.run("stdio")
        else:
            from . import http

            http.serve(srv, address)
    return ExitCode.OK
