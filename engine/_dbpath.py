"""Which store a command opens when it is not told (no `--db`)."""

from __future__ import annotations

import os

DEFAULT_DB = "phasegate.db"


def default_db() -> str:
    return os.environ.get("PHASEGATE_DB") or DEFAULT_DB
