"""Unit tests of the chain and the canonical JSON it hashes: any change to
any stored byte is found at the entry that holds it."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phasegate import UsageError, _json
from phasegate.history import chain

INPUTS = _json.sha256(_json.dumps({"day": "2026-11-30"}))


def _chain(n: int = 4) -> list[SimpleNamespace]:
    rows, prev = [], chain.GENESIS
    for seq in range(n):
        out = _json.dumps({"phase": seq, "rows": list(range(seq + 1)), "name": "Zürich"})
        text, digest = chain.envelope(
            run_id="r1",
            epoch=0,
            seq=seq,
            kind="phase",
            prev=prev,
            inputs_hash=INPUTS,
            env={"at": 1.0 + seq, "probes": {"tax": "v1"}},
            phase=f"p{seq}",
            phase_index=seq,
            output_hash=_json.sha256(out),
            output_bytes=len(out),
        )
        rows.append(
            SimpleNamespace(
                seq=seq,
                phase=f"p{seq}",
                kind="phase",
                envelope=text,
                payload_hash=digest,
                prev_hash=prev,
                output_json=out,
                output_state="present",
                created_at=1.0 + seq,
            )
        )
        prev = digest
    return rows


def _verify(rows):
    head = rows[-1] if rows else None
    return chain.verify(
        rows,
        run_id="r1",
        epoch=0,
        inputs_hash=INPUTS,
        head_seq=head.seq if head else -1,
        head_hash=head.payload_hash if head else "",
        key=None,
    )


def test_an_intact_chain_verifies_and_folds():
    rows = _chain()
    v = _verify(rows)
    assert v.failure is None and len(v.entries) == 4
    folded = chain.fold(v.entries)
    assert list(folded.done) == ["p0", "p1", "p2", "p3"]
    assert folded.last_hash == rows[-1].payload_hash and folded.probes == {"tax": "v1"}


FIELDS = {"envelope": "hash", "payload_hash": "hash", "prev_hash": "chain", "output_json": "output"}


@settings(max_examples=60, deadline=None)
@given(
    seq=st.integers(0, 3),
    field=st.sampled_from(sorted(FIELDS)),
    pos=st.integers(0, 10_000),
    byte=st.characters(min_codepoint=32, max_codepoint=0x2FF),
)
def test_any_changed_character_is_found_at_its_entry(seq, field, pos, byte):
    rows = _chain()
    old = getattr(rows[seq], field)
    i = pos % len(old)
    if old[i] == byte:
        return
    setattr(rows[seq], field, old[:i] + byte + old[i + 1 :])
    v = _verify(rows)
    assert v.failure is not None
    assert v.failure.seq == seq and v.failure.what == FIELDS[field]
    assert len(v.entries) == seq  # nothing from the damaged entry on is trusted


def test_missing_rows_are_found():
    rows = _chain()
    assert _verify(rows[:1] + rows[2:]).failure.what == "chain"
    head = rows[-1]
    v = chain.verify(
        rows[:-1], run_id="r1", epoch=0, inputs_hash=INPUTS, head_seq=head.seq, head_hash=head.payload_hash, key=None
    )
    assert v.failure.what == "head" and len(v.entries) == 3


def test_a_row_from_another_run_or_position_is_found():
    rows = _chain()
    v = chain.verify(
        rows, run_id="r2", epoch=0, inputs_hash=INPUTS, head_seq=3, head_hash=rows[-1].payload_hash, key=None
    )
    assert v.failure.what == "identity" and v.failure.seq == 0
    rows[1].seq = 7
    assert _verify(rows).failure.what == "identity"


def test_an_unknown_format_version_is_found():
    rows = _chain(1)
    env = json.loads(rows[0].envelope)
    env["v"] = chain.FORMAT_VERSION + 1
    rows[0].envelope = _json.dumps(env)
    rows[0].payload_hash = _json.sha256(rows[0].envelope)
    v = chain.verify(
        rows, run_id="r1", epoch=0, inputs_hash=INPUTS, head_seq=0, head_hash=rows[0].payload_hash, key=None
    )
    assert v.failure.what == "format"


def test_a_lost_output_is_not_an_integrity_failure():
    rows = _chain()
    rows[1].output_json = None
    v = _verify(rows)
    assert v.failure is None and v.entries[1].output_ok is False


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=80, deadline=None)
@given(json_values)
def test_canonical_json_is_one_string_per_value(value):
    text = _json.dumps(value)
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert _json.loads(text) == value
    assert _json.dumps(_json.loads(text)) == text


@pytest.mark.parametrize("bad", [math.nan, math.inf, object()])
def test_values_json_cannot_hold_are_refused(bad):
    with pytest.raises(UsageError):
        _json.dumps({"x": bad})


def test_an_unparseable_output_with_matching_hashes_is_found_only_when_parsing():
    rows = _chain(1)
    forged = '{"rows":['
    env = json.loads(rows[0].envelope)
    env["output_hash"] = _json.sha256(forged)
    rows[0].envelope = _json.dumps(env)
    rows[0].payload_hash = _json.sha256(rows[0].envelope)
    rows[0].output_json = forged
    args = dict(run_id="r1", epoch=0, inputs_hash=INPUTS, head_seq=0, head_hash=rows[0].payload_hash, key=None)
    fast = chain.verify(rows, **args, parse_outputs=False)
    assert fast.failure is None and fast.entries[0].output_ok is False  # no output handed on unparsed
    assert chain.verify(rows, **args).failure.what == "parse"
