"""What a run id may be: the one check, before a run id reaches the store,
a terminal or a log line."""

from __future__ import annotations

from typing import Any

from .errors import UsageError
from .safetext import is_safe, safe


def validate_run_id(run_id: Any) -> str:
    """Check a run id as given by a person or a program.

    Args:
        run_id: The value offered as a run id.

    Returns:
        The run id, unchanged.

    Raises:
        UsageError: It is not a non-empty string of at most 200 printable
            characters.
    """
    if not isinstance(run_id, str) or not run_id.strip():
        raise UsageError("a run id must be a non-empty string")
    if len(run_id) > 200:
        raise UsageError("a run id must be at most 200 characters")
    if not is_safe(run_id) or not run_id.isprintable():
        # A run id is typed, compared and shown by people: control characters
        # (C0, C1), bidi overrides and invisible ones would let one id pass
        # for another, or act on the terminal that shows it.
        bad = next(c for c in run_id if not is_safe(c) or not c.isprintable())
        raise UsageError(f"a run id must not contain control, format or invisible characters (found {safe(bad)})")
    return run_id


#: Kinds of name whose saved key could be mistaken for phasegate's own
#: durable records ("@ask:NAME", "@sleep:NAME": run/parking.py).
_RESERVED_AT = frozenset({"step", "map", "topic"})


def validate_name(kind: str, name: Any, error: type[UsageError] = UsageError) -> str:
    """Check a name a workflow declares: of the workflow, a phase, a probe,
    an effect or a durable step.

    Names are read by people as run ids are (in `status`, the console, an
    alert, a log line) and compared as keys, so the same rule holds: no
    control character (a newline would forge a log line, ESC or CSI drive
    the terminal), no bidi override and nothing invisible.

    Args:
        kind: What is named (`workflow`, `phase`, ...), for the message.
        name: The name declared.
        error: The error to raise (`WorkflowError` at declaration).

    Returns:
        The name, unchanged.

    Raises:
        UsageError: (or `error`) It is not a non-empty string of at most 200
            printable characters.
    """
    if isinstance(name, str) and name.isascii() and name.isprintable() and 0 < len(name) <= 200 and name.strip():
        if name[0] == "@" and kind in _RESERVED_AT:
            raise error(f"a {kind} name must not begin with '@' ({name!r}): those keys are phasegate's own records")
        return name  # the common case, checked without a look at each character
    if not isinstance(name, str) or not name.strip():
        raise error(f"a {kind} name must be a non-empty string")
    if len(name) > 200:
        raise error(f"a {kind} name must be at most 200 characters ({safe(name[:40])}...)")
    if not is_safe(name) or not name.isprintable():
        bad = next(c for c in name if not is_safe(c) or not c.isprintable())
        raise error(
            f"{kind} name {safe(name)!r} must not contain control, format or invisible characters (found {safe(bad)})"
        )
    if name[0] == "@" and kind in _RESERVED_AT:
        raise error(f"a {kind} name must not begin with '@': those keys are phasegate's own records")
    return name
