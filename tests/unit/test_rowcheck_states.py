"""A state column holding a value no code writes is damage, read as nothing
else (found by the soak: output_state 'present' flipped to 'pres,nt' was read
as a lost output, and the done phase was run again)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, insert, select

from phasegate import StoreError
from phasegate.store import _rowcheck
from phasegate.store.schema import checkpoints, metadata


def _rows(state: str):
    eng = create_engine("sqlite://")
    metadata.create_all(eng)
    with eng.begin() as conn:
        conn.execute(
            insert(checkpoints).values(
                run_id="r", epoch=0, seq=0, kind="phase", phase="p", envelope="{}", payload_hash="h",
                prev_hash="g", output_state=state, output_bytes=0, created_at=1.0, status="live",
            )
        )  # fmt: skip
        return conn.execute(select(checkpoints))


@pytest.mark.parametrize("state", ["present", "pruned", "archived", "none"])
def test_every_state_phasegate_writes_reads(state: str) -> None:
    assert len(_rowcheck.check_all(checkpoints, _rows(state))) == 1


def test_an_unknown_state_is_damage() -> None:
    with pytest.raises(StoreError, match="output_state 'pres,nt' is not one of"):
        _rowcheck.check_all(checkpoints, _rows("pres,nt"))
