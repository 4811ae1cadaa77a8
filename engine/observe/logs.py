"""`--log-format json`: one JSON object a line, for a log shipper.

Each line has `time` (ISO 8601, UTC, milliseconds), `level`, `event` (the
part of phasegate that logged it: `worker`, `watch`, `run`, `serve`...),
`run_id` and `phase` (null when the line is about neither) and `message`.
The message is made safe first (`safetext.safe`: control characters, escape
sequences and bidi overrides as visible escapes), then JSON-encoded with
every character outside ASCII escaped, so stored text can neither break a
line nor drive the terminal of whoever reads the log raw.
"""

from __future__ import annotations

import json
import logging
import re
import time

from ..safetext import safe

#: A log call's format string, as phasegate's own lines are written: "run %s: ..."
#: and "... phase %s ..." or "failed in %s". The arguments in those places are
#: the run and the phase.
_RUN = re.compile(r"^run %[sr]\b")
_PHASE = re.compile(r"\b(?:phase|failed in) %[sr]\b")
_ARG = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdrifgeEx]")


def _arg_at(fmt: str, match: re.Match[str] | None, args: object) -> str | None:
    """The argument that fills the placeholder `match` found in `fmt`."""
    if match is None or not isinstance(args, tuple):
        return None
    index = len(_ARG.findall(fmt[: match.start()]))
    return str(args[index]) if index < len(args) else None


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (the module's note says which keys).

    A record may carry `run_id`, `phase` and `event` itself (`extra=`); else
    the run and the phase are read from where phasegate's own lines put them.

    Args:
        tracebacks: Add a logged exception's traceback as `traceback` (`--debug`).
    """

    def __init__(self, *, tracebacks: bool = False) -> None:
        super().__init__()
        self.tracebacks = tracebacks
        """Whether a logged exception's traceback is added."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line.

        Args:
            record: The log record.

        Returns:
            The line, without its newline.
        """
        message = record.getMessage()
        fmt = record.msg if isinstance(record.msg, str) else ""
        run_id = getattr(record, "run_id", None) or _arg_at(fmt, _RUN.search(fmt), record.args)
        phase = getattr(record, "phase", None) or _arg_at(fmt, _PHASE.search(fmt), record.args)
        event = getattr(record, "event", None) or record.name.removeprefix("phasegate.") or record.name
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message += f": {type(exc).__name__}: {exc}"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        line: dict[str, object] = {
            "time": stamp,
            "level": record.levelname.lower(),
            "event": safe(str(event)),
            "run_id": safe(run_id) if run_id is not None else None,
            "phase": safe(phase) if phase is not None else None,
            "message": safe(message),
        }
        if self.tracebacks and record.exc_info:
            line["traceback"] = safe(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=True)


def use_json(tracebacks: bool = False, logger: logging.Logger | None = None) -> None:
    """Every handler of `logger` (default: the root logger) writes JSON lines from now on.

    Args:
        tracebacks: As `JsonFormatter`.
        logger: Whose handlers change.
    """
    for handler in (logger or logging.getLogger()).handlers:
        handler.setFormatter(JsonFormatter(tracebacks=tracebacks))
