"""seals.check over hand-built records: each kind of damage is named."""

from __future__ import annotations

from phasegate.history.seals import check, seal, sealed, split_key
from phasegate.run.ledger import EffectRecord


def _ledger(n: int = 3) -> list[EffectRecord]:
    out: list[EffectRecord] = []
    prev = None
    for i in range(n):
        rec = EffectRecord(
            id=i + 1, run_id="r", phase="p", name=f"e{i}", key=f"r/p/e{i}", state="done", idempotent=False,
            atomic=False, attempt=1, retry_ok=False, result_hash="h", confirmed_by=None, prev_key=prev,
            reconcilable=False, redo_on_rewind=False,
        )  # fmt: skip
        out.append(EffectRecord(sealed(rec, None)))
        prev = rec.key
    return out


def test_a_whole_ledger_is_clean() -> None:
    recs = _ledger()
    assert check(recs, "r/p/e2", None, None) == []
    assert check([], None, None, None) == []


def test_each_kind_of_damage_is_named() -> None:
    recs = _ledger()
    recs[0]["retry_ok"] = True
    assert [(d.key, d.problem) for d in check(recs, "r/p/e2", None, None)] == [("r/p/e0", "edited")]
    recs = _ledger()
    assert [(d.key, d.problem) for d in check([recs[0], recs[2]], "r/p/e2", None, None)] == [("r/p/e1", "missing")]
    assert [(d.key, d.problem) for d in check(recs[:2], "r/p/e2", None, None)] == [("r/p/e2", "missing")]
    assert [(d.key, d.problem) for d in check(recs, "r/p/e1", None, None)] == [("r/p/e2", "not_in_history")]
    recs[1]["seal"] = None
    assert ("r/p/e1", "unsealed") in [(d.key, d.problem) for d in check(recs, "r/p/e2", None, None)]


def test_a_seal_reads_booleans_and_numbers_as_any_backend_returns_them() -> None:
    rec = _ledger(1)[0]
    as_sqlite = EffectRecord(rec, idempotent=0, atomic=0, retry_ok=0, reconcilable=0, redo_on_rewind=0)
    assert seal(as_sqlite, None) == rec["seal"]


def test_split_key() -> None:
    assert split_key("r/1", "r/1/charge/send:a/b") == ("charge", "send:a/b")
    assert split_key("r", "x/charge/send") is None


def _reference(rec: EffectRecord) -> str:
    """The seal as the canonical encoder alone writes it: what stores hold."""
    from phasegate import _json
    from phasegate.history.seals import SEALED, _field

    return _json.sha256(_json.dumps_stdlib([_field(rec, n) for n in SEALED]))


def test_the_fast_seal_is_the_canonical_one() -> None:
    # Names that look like numbers, exponents, nulls or escapes; every
    # control character; text past the BMP; integers at 64 bits and past.
    names = ["charge-1", "e-7", "x.00001", "null", 'q"uote\\', "\u2028\u2029\x7f", "é🙂", "".join(map(chr, range(32)))]
    for i, name in enumerate(names):
        for attempt in (1, 2**63 - 1, 2**63, 2**64 + 1, -(2**63) - 1):
            rec = EffectRecord(
                run_id="r/1", phase="p", name=name, key=f"r/1/p/{name}", state="done", idempotent=True,
                atomic=False, attempt=attempt, retry_ok=i % 2 == 0, result_hash=None, confirmed_by=i or None,
                prev_key=None if i == 0 else "k", reconcilable=False, redo_on_rewind=True,
            )  # fmt: skip
            assert seal(rec, None) == _reference(rec), (name, attempt)


def test_a_field_of_another_type_takes_the_canonical_path() -> None:
    # A damaged row may hold a float where text belongs: its seal is still
    # the canonical encoder's (orjson would spell 1e-07 as 1e-7).
    for odd in (1e-07, 0.1, 2.5e-05):
        rec = EffectRecord(
            run_id="r", phase=odd, name="n", key="r/p/n", state="intent", idempotent=False, atomic=False,
            attempt=1, retry_ok=False, result_hash=None, confirmed_by=None, prev_key=None, reconcilable=False,
            redo_on_rewind=False,
        )  # fmt: skip
        assert seal(rec, None) == _reference(rec)


def test_a_dict_and_a_row_of_the_same_record_seal_alike() -> None:
    # The effect path seals dicts; the start sequence seals rows read back.
    from types import SimpleNamespace

    rec = _ledger(2)[1]
    rec["attempt"] = "3"  # a driver may hand back text: sealed as the integer
    rec["retry_ok"] = 1
    partial = {"run_id": "r", "key": "r/p/x", "state": "intent"}  # absent fields seal as None / False
    for r in (rec, partial):
        row = SimpleNamespace(**{k: r.get(k) for k in ("run_id", "phase", "name", "key", "state", "idempotent",
            "atomic", "attempt", "retry_ok", "result_hash", "confirmed_by", "prev_key", "reconcilable",
            "redo_on_rewind")})  # fmt: skip
        assert seal(r, None) == seal(row, None) == _reference(r)
