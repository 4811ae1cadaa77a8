"""`verify` over a large store: the chains read through the sqlite3 driver as
stored bytes, a page cut into run-id ranges verified side by side on two
connections. It must find exactly what one connection finds."""

from __future__ import annotations

import json
from contextlib import ExitStack

import pytest
from test_integrity import flip_output

from phasegate import Engine
from phasegate.upkeep import verify as verify_module
from phasegate.upkeep.verify import Verifier


def _store_with_damage(h) -> None:
    for i in range(5):
        assert h.run(f"g{i}").returncode == 0
    assert h.run("r1", kill="start:report").killed
    flip_output(h)  # r1's price output
    h.sql("UPDATE phasegate_checkpoints SET prev_hash='x' WHERE run_id='g3' AND phase='charge'")
    h.sql("UPDATE phasegate_effects SET attempt=attempt+1 WHERE run_id='g1'")


@pytest.mark.sqlite_only
def test_verify_in_lanes_finds_what_one_lane_finds(h, monkeypatch):
    _store_with_damage(h)
    with Engine(h.db) as eng:
        monkeypatch.setattr(verify_module, "_SPLIT_BYTES", 1 << 62)
        one = eng.verify(record=False)
        # A second lane from the first byte, three runs a page: pages and parts both cut the store.
        monkeypatch.setattr(verify_module, "_SPLIT_BYTES", 0)
        monkeypatch.setattr(verify_module, "_spare_cores", lambda: 2.0)  # as on an idle machine
        monkeypatch.setattr(verify_module, "_PAGE", 3)
        with ExitStack() as held:
            assert Verifier(eng.store, eng.clock)._lane(held, None) is not None
        split = eng.verify(record=False)
        deep = eng.verify(record=False, deep=True)
    assert split == one
    assert deep == one
    by_id = {r.run_id: r for r in split}
    assert sorted(by_id) == ["g0", "g1", "g2", "g3", "g4", "r1"]
    assert by_id["r1"].failure.what == "output"
    assert by_id["g3"].failure.what == "chain"
    assert by_id["g1"].ok is False and by_id["g1"].effects
    assert all(by_id[r].ok for r in ("g0", "g2", "g4"))


def test_verify_counts_the_stored_bytes(h):
    """`bytes` is what was read and hashed: UTF-8 bytes, not characters."""
    assert h.run("r1", kill="start:report").killed
    env = h.checkpoint("r1", "price")["envelope"]
    total = sum(
        len(str(e).encode()) + len(str(o or "").encode())
        for e, o in h.sql("SELECT envelope, output_json FROM phasegate_checkpoints WHERE status = 'live'")
    )
    assert env
    (r,) = json.loads(h.cli("verify", "--json").stdout)
    assert r["ok"] and r["bytes"] == total


@pytest.mark.sqlite_only
def test_an_envelope_stored_as_a_blob_is_a_damaged_record(h):
    """Same bytes, another SQLite type: a resume would read bytes, not text,
    so verify says the record is damaged rather than passing its hash."""
    assert h.run("r1", kill="start:report").killed
    h.sql("UPDATE phasegate_checkpoints SET envelope=CAST(envelope AS BLOB) WHERE run_id='r1' AND phase='price'")
    p = h.cli("verify")
    assert p.returncode == 2, p
    assert "damaged" in p.stderr and "envelope is stored as blob" in p.stderr
