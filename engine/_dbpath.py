"""Which store a command opens when it is not told (no `--db`)."""

from __future__ import annotations

import os

DEFAULT_DB = "phasegate.db"


def default_db() -> str:
    """The store opened when none is named.

    Returns:
        `$PHASEGATE_DB` when it is set and not empty, else `phasegate.db` (in
        the current folder).
    """
    return os.environ.get("PHASEGATE_DB") or DEFAULT_DB
