"""Stored text made safe to show: the one rule every screen asks.

Anything read from the store (a run id, a phase error, a probe value, a
decision's reason, a runbook) was written by someone else: a workflow, an
operator, a damaged file. Sent raw to a terminal, an escape sequence in it can
recolour the screen, retitle the window or write the operator's clipboard
(OSC 52), and a bidirectional override can make one run id read as another.
`safe` turns every such character into a visible escape, so what the operator
reads is exactly what is stored, and nothing in it acts on the terminal.
"""

from __future__ import annotations

import logging
import re
import unicodedata

#: Bidirectional embeddings, overrides, isolates and marks: they reorder what
#: follows them on screen, so a run id can be made to read as another one.
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe(ch: str) -> bool:
    """Whether one character must not reach a terminal as itself: C0 and C1
    controls (ESC included), DEL, format characters (bidi controls, zero
    widths), line and paragraph separators, surrogates, private-use and unassigned
    code points. Spaces and printable text of any script pass."""
    if ch in BIDI:
        return True
    cat = unicodedata.category(ch)
    if cat == "Zs":
        return False  # a space of any width only displays
    return not ch.isprintable() or cat in ("Cf", "Cs", "Co", "Cn")


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"  # ESC shows as \x1b, CSI (C1) as \x9b
    return f"<U+{code:04X}>"  # a bidi override shows as <U+202E>


def safe(value: object) -> str:
    """`value` as one line of text a terminal only displays: every character
    `unsafe` names (newlines and tabs too) becomes a visible escape.

    Args:
        value: Stored text, or anything `str()` makes text of; None is "".

    Returns:
        The text with control characters (C0, DEL, C1, so every escape
        sequence), bidi controls and other invisible characters written as
        `\\x1b`, `<U+202E>` and the like.
    """
    text = "" if value is None else str(value)
    if text.isprintable() and text.isascii():
        return text  # the common case, and no copy
    return "".join(_escape(ch) if unsafe(ch) else ch for ch in text)


def is_safe(text: str) -> bool:
    """True when `safe(text)` would show `text` unchanged."""
    return not any(unsafe(ch) for ch in text)


_JSON_UNSAFE = re.compile("[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def safe_json(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with the
    characters a terminal acts on written as `\\uXXXX` escapes. The JSON means
    the same (those characters can only be inside its strings); C0 controls
    are already escaped by `json.dumps`.

    Args:
        text: JSON text.

    Returns:
        The same JSON, safe to print on a terminal.
    """
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def storable(value: str) -> bool:
    """Whether text can be stored as is by both backends: SQLite and
    PostgreSQL take UTF-8 only (no lone surrogates), PostgreSQL no NUL."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sanitised(value: str) -> str:
    """Text that cannot be stored as is (a lone surrogate, a NUL), made
    storable with the offending characters written as visible escapes."""
    if storable(value):
        return value
    return "".join(_escape(ch) if (ch == "\x00" or 0xD800 <= ord(ch) <= 0xDFFF) else ch for ch in value)


__all__ = ["BIDI", "is_safe", "safe", "safe_json", "sanitised", "storable", "unsafe"]


class SafeFormatter(logging.Formatter):
    """One event, one line. Log lines carry run ids, errors and reasons read
    from the store or raised by a workflow: the whole message is made safe
    (`safetext.safe`), its newlines too, so a phase error holding
    "\n2026-12-02 06:00:00,000 phasegate.worker INFO run x: completed"
    cannot print a line the log did not write.

    A logged exception is its type and message on the event's line; its
    traceback only with `--debug`, and then each of its lines follows the
    event indented under `  | `, so none of them reads as an event either."""

    def __init__(self, fmt: str, *, tracebacks: bool = False) -> None:
        """
        Args:
            fmt: The `logging` format of a line.
            tracebacks: Show a logged exception's traceback under its line (`--debug`).
        """
        super().__init__(fmt)
        self.tracebacks = tracebacks
        """Whether a logged exception's traceback follows its line."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one safe line (and, with `tracebacks`, its indented traceback).

        Args:
            record: The log record.

        Returns:
            The text to write.
        """
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        line = self.formatMessage(record)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line += f": {type(exc).__name__}: {exc}"
        out = safe(line)
        if self.tracebacks and (record.exc_info or record.stack_info):
            extra = self.formatException(record.exc_info) if record.exc_info else ""
            if record.stack_info:
                extra += "\n" + self.formatStack(record.stack_info)
            out += "".join(f"\n  | {safe(ln)}" for ln in extra.strip("\n").split("\n"))
        return out
