"""What an older store held: a value it accepted then, written the way its
upgrade to schema 5 (and 7: the policy's head) would have left it (sealed as it stood), so that a test
of how today's code shows it is not a test of tamper detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def policy_as_an_older_store_had(db: str | Path, **columns: Any) -> None:
    """Set columns of every policy change, then seal each as the upgrade seals what exists."""
    from sqlalchemy import create_engine, text

    from phasegate.history import trail

    url = str(db) if "://" in str(db) else f"sqlite:///{db}"
    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            sets = ", ".join(f"{k} = :{k}" for k in columns)
            conn.execute(text(f"UPDATE phasegate_policy SET {sets}"), columns)
            for row in conn.execute(text("SELECT * FROM phasegate_policy")).mappings().all():
                conn.execute(
                    text("UPDATE phasegate_policy SET seal = :seal WHERE id = :id"),
                    {"seal": trail.policy_seal(dict(row), None), "id": row["id"]},
                )
            # And the policy's head, sealed as the upgrade to schema 7 seals it.
            got = dict(conn.execute(text("SELECT key, value FROM phasegate_meta")).all())
            last, count = int(got["policy_last"]), int(got["policy_count"])
            seal = conn.execute(text("SELECT seal FROM phasegate_policy WHERE id = :id"), {"id": last}).scalar()
            conn.execute(
                text("UPDATE phasegate_meta SET value = :v WHERE key = 'policy_head'"),
                {"v": trail.policy_head_seal(last, count, seal, None)},
            )
    finally:
        engine.dispose()
