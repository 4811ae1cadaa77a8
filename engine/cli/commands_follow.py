"""`phasegate follow RUN`: a run's records printed as they commit, like
`kubectl logs -f`, until the run ends (exit 0) or Ctrl-C (exit 130, quietly).

The reading is `Engine.follow` (views/follow.py); this prints each event as
a line of escaped text, or with `--json` as one JSON object a line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from datetime import datetime

from ..errors import ExitCode, UsageError
from ..safetext import safe_json
from .args import open_engine

_AGO = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h|d)$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: float) -> float:
    """`--since`: a time (ISO 8601, `2026-12-07T15:00:00Z`) or how long ago (`30s`, `5m`, `2h`, `1d`).

    Args:
        text: The flag's value.
        now: UNIX seconds, for a "how long ago".

    Returns:
        The time, UNIX seconds.

    Raises:
        UsageError: neither a time nor a duration.
    """
    m = _AGO.match(text.strip())
    if m:
        return now - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since {text!r}: not a time (2026-12-07T15:00:00Z) or a duration (30s, 5m, 2h, 1d)"
        ) from None
    if when.tzinfo is None:
        raise UsageError(f"--since {text!r}: say the time zone (a Z or +00:00 at the end)")
    return when.timestamp()


def cmd_follow(args: argparse.Namespace) -> int:
    since = parse_since(args.since, time.time()) if args.since is not None else None
    try:
        with open_engine(args) as eng:
            events = eng.follow(args.run_id, since=since)  # an unknown run: one line, exit 2, before any output

            async def show() -> None:
                async for event in events:
                    if args.json:
                        line = safe_json(json.dumps(event.to_json(), ensure_ascii=False))
                    else:
                        clock = time.strftime("%H:%M:%S", time.gmtime(event.at))
                        line = f"{clock}  {event.kind:<9} {event.said()}"
                    print(line, flush=True)

            asyncio.run(show())
    except KeyboardInterrupt:
        # Ctrl-C is how a follow ends before its run does: no traceback, no line.
        sys.stdout.flush()
        return ExitCode.INTERRUPTED
    return ExitCode.OK
