"""`--log-format json`: one JSON object a line, for a log shipper.

Each line has the keys log pipelines expect: `timestamp` (ISO 8601, UTC,
milliseconds), `level`, `logger` (the logger's name: `phasegate.worker`,
`phasegate.run`, ...), `message`, and, null when unknown, `run_id`,
`workflow`, `phase`, `trace_id` and `span_id` (the OpenTelemetry span current
where the line was logged, when tracing is on). The run, workflow and phase
come from what the engine is doing in that thread (`bound`), else from where
phasegate's own lines put them ("run %s: ...").

The message is made safe first (`safetext.safe`: control characters, escape
sequences and bidi overrides as visible escapes), then JSON-encoded with
every character outside ASCII escaped, so stored text can neither break a
line nor drive the terminal of whoever reads the log raw.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..safetext import safe

#: A log call's format string, as phasegate's own lines are written: "run %s: ..."
#: and "... phase %s ..." or "failed in %s". The arguments in those places are
#: the run and the phase.
_RUN = re.compile(r"^run %[sr]\b")
_PHASE = re.compile(r"\b(?:phase|failed in) %[sr]\b")
_ARG = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdrifgeEx]")

KEYS = ("timestamp", "level", "logger", "message", "run_id", "workflow", "phase", "trace_id", "span_id")
"""Every line's keys, in order."""

_CONTEXT: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("phasegate_log_context", default=None)

_json_on = False


@contextmanager
def bound(**fields: str | None) -> Iterator[None]:
    """Lines logged in this thread (or task) meanwhile carry these fields
    (`run_id`, `workflow`, `phase`), unless a line says otherwise.

    Args:
        fields: Key -> value; a None value is left out.

    Yields:
        Nothing.
    """
    token = _CONTEXT.set({**(_CONTEXT.get() or {}), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def _arg_at(fmt: str, match: re.Match[str] | None, args: object) -> str | None:
    """The argument that fills the placeholder `match` found in `fmt`."""
    if match is None or not isinstance(args, tuple):
        return None
    index = len(_ARG.findall(fmt[: match.start()]))
    return str(args[index]) if index < len(args) else None


def _span_ids() -> tuple[str | None, str | None]:
    """The current OpenTelemetry span's trace and span id, when tracing is loaded and a span records."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None, None  # never imported here: nothing is traced
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None, None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (the module's note says which keys).

    A record may carry `run_id`, `workflow` and `phase` itself (`extra=`); else
    they are read from what the thread is doing (`bound`), then from where
    phasegate's own lines put the run and the phase.

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
        ctx = _CONTEXT.get() or {}
        run_id = getattr(record, "run_id", None) or _arg_at(fmt, _RUN.search(fmt), record.args) or ctx.get("run_id")
        phase = getattr(record, "phase", None) or _arg_at(fmt, _PHASE.search(fmt), record.args) or ctx.get("phase")
        workflow = getattr(record, "workflow", None) or ctx.get("workflow")
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message += f": {type(exc).__name__}: {exc}"
        trace_id, span_id = _span_ids()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        line: dict[str, object] = {
            "timestamp": stamp,
            "level": record.levelname.lower(),
            "logger": safe(record.name),
            "message": safe(message),
            "run_id": _opt(run_id),
            "workflow": _opt(workflow),
            "phase": _opt(phase),
            "trace_id": trace_id,
            "span_id": span_id,
        }
        if self.tracebacks and record.exc_info:
            line["traceback"] = safe(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=True)


def _opt(value: Any) -> str | None:
    return safe(str(value)) if value is not None else None


def use_json(tracebacks: bool = False, logger: logging.Logger | None = None) -> None:
    """Every handler of `logger` (default: the root logger) writes JSON lines from now on.

    Args:
        tracebacks: As `JsonFormatter`.
        logger: Whose handlers change.
    """
    global _json_on
    if logger is None:
        _json_on = True
    for handler in (logger or logging.getLogger()).handlers:
        handler.setFormatter(JsonFormatter(tracebacks=tracebacks))


def json_on() -> bool:
    """Whether this process logs JSON lines (`use_json` on the root logger).

    Returns:
        True after `use_json()`.
    """
    return _json_on


def say(text: str, *, level: str = "info", logger: str = "phasegate", prefix: str = "") -> None:
    """One line on stderr whatever the log levels are (a start-up or fatal
    line a person must see): JSON when the process logs JSON, else `prefix`
    and `text` as they are.

    Args:
        text: The line (already made safe when it holds stored text).
        level: Its level, for the JSON line.
        logger: Its logger's name, for the JSON line.
        prefix: Put before `text` in the text format only (`phasegate: `).
    """
    if _json_on:
        record = logging.LogRecord(logger, logging.getLevelName(level.upper()), "", 0, text, None, None)
        sys.stderr.write(JsonFormatter().format(record) + "\n")
    else:
        sys.stderr.write(prefix + text + "\n")
    sys.stderr.flush()
