"""seals.check over hand-built records: each kind of damage is named."""

from __future__ import annotations

from phasegate.ledger import EffectRecord
from phasegate.seals import check, seal, sealed, split_key


def _ledger(n: int = 3) -> list[EffectRecord]:
    out: list[EffectRecord] = []
    prev = None
    for i in range(n):
        rec = EffectRecord(
            id=i + 1, run_id="r", phase="p", name=f"e{i}", key=f"r/p/e{i}", state="done", idempotent=False,
            atomic=False, attempt=1, retry_ok=False, result_hash="h", confirmed_by=None, prev_key=prev,
            reconcilable=False, redo_on_rewind=False,
        )  # fmt: skip
        out.append(EffectRecord(sealed(rec)))
        prev = rec.key
    return out


def test_a_whole_ledger_is_clean() -> None:
    recs = _ledger()
    assert check(recs, "r/p/e2") == []
    assert check([], None) == []


def test_each_kind_of_damage_is_named() -> None:
    recs = _ledger()
    recs[0]["retry_ok"] = True
    assert [(d.key, d.problem) for d in check(recs, "r/p/e2")] == [("r/p/e0", "edited")]
    recs = _ledger()
    assert [(d.key, d.problem) for d in check([recs[0], recs[2]], "r/p/e2")] == [("r/p/e1", "missing")]
    assert [(d.key, d.problem) for d in check(recs[:2], "r/p/e2")] == [("r/p/e2", "missing")]
    assert [(d.key, d.problem) for d in check(recs, "r/p/e1")] == [("r/p/e2", "not_in_history")]
    recs[1]["seal"] = None
    assert ("r/p/e1", "unsealed") in [(d.key, d.problem) for d in check(recs, "r/p/e2")]


def test_a_seal_reads_booleans_and_numbers_as_any_backend_returns_them() -> None:
    rec = _ledger(1)[0]
    as_sqlite = EffectRecord(rec, idempotent=0, atomic=0, retry_ok=0, reconcilable=0, redo_on_rewind=0)
    assert seal(as_sqlite) == rec["seal"]


def test_split_key() -> None:
    assert split_key("r/1", "r/1/charge/send:a/b") == ("charge", "send:a/b")
    assert split_key("r", "x/charge/send") is None
