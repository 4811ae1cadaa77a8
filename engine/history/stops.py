"""One stop of one run, named: the key a watch's alert row is stored under
(alerts/watch.py), and what `prune` compares an alert row with to know that
its stop is over (upkeep/pruning.py)."""

from __future__ import annotations

import hashlib
from typing import Any

from .. import _json


def stop_key(row: Any) -> str:
    """One stop of one run. The attempt that ended in it is told apart by its
    last heartbeat (every start takes a new one; an operator's decision or a
    prune does not touch it), and the status and block kinds say which stop:
    a run that stops again after a resume is a new stop, a decision recorded
    on a stopped run is not."""
    kinds = sorted(str(b.get("kind")) for b in _json.loads(row.blocked_json or "[]"))
    ident = [row.run_id, row.status, int(row.epoch), row.heartbeat_at or row.created_at, kinds]
    return hashlib.sha256(_json.dumps(ident).encode()).hexdigest()[:32]
