"""The runs list and the claims in force read straight through the sqlite3
driver, with no SQLAlchemy: what `phasegate status` lists (views/quickstatus.py)
in about the time a command takes to start.

Only the reading is here; what the rows mean (the order, the checks, a
claim's view) is the views'. Importing this module loads `sqlite3` and
nothing of the store's SQLAlchemy side.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

from .version import SCHEMA_VERSION

#: The claims in force, oldest first: the newest per run wins (`Store.claims.current`).
_CLAIMS = "SELECT * FROM phasegate_claims WHERE released_at IS NULL AND expires_at > ? ORDER BY id"

_LIST = (
    "SELECT r.*, EXISTS (SELECT 1 FROM phasegate_decisions d WHERE d.run_id = r.run_id AND d.state = 'pending')"
    " AS pending_decision FROM phasegate_runs r ORDER BY r.attention_rank, r.updated_at DESC, r.run_id"
)


class QuickRows(NamedTuple):
    """The rows `phasegate status` lists, as column mappings."""

    runs: list[dict[str, Any]]
    """Every run row with its `pending_decision` (0 or 1), in the stored attention order."""
    claims: list[dict[str, Any]]
    """The claim rows in force at the time asked, oldest first."""


def read(path: Path, now: float) -> QuickRows | None:
    """Both lists from the SQLite store at `path`; None when the file is not
    a store at this engine's format, or the driver failed (the engine then
    answers, with its own checks and errors).

    Args:
        path: An existing SQLite file.
        now: The time claims are in force at.

    Returns:
        The rows, or None.
    """
    try:
        # mode=rw: never create a file; the engine says what is wrong with a missing one.
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("PRAGMA busy_timeout=10000")
        version = conn.execute("SELECT value FROM phasegate_meta WHERE key = 'schema_version'").fetchone()
        if version is None or version[0] != str(SCHEMA_VERSION):
            return None  # the engine upgrades an older store, and refuses a newer one
        cur = conn.execute(_LIST)
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, values, strict=True)) for values in cur]
        cur = conn.execute(_CLAIMS, (now,))
        names = [d[0] for d in cur.description]
        claims = [dict(zip(names, values, strict=True)) for values in cur]
    except (sqlite3.Error, UnicodeDecodeError, ValueError):
        return None
    finally:
        conn.close()
    return QuickRows(rows, claims)
