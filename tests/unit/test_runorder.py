"""The runs list's order rules (engine/store/runorder.py): the ranks the store
keeps, an interrupted run's place, and keys compared in Python the way
SQLite compares them (the merge of interrupted runs into a page)."""

from __future__ import annotations

from typing import Any

from phasegate.store.runorder import (
    LIVE_RANK,
    NEEDS_PERSON,
    PENDING_RANK,
    REST_RANK,
    Order,
    beyond,
    interrupted_rank,
    stored_rank,
)


class _Row:
    def __init__(self, **values: Any) -> None:
        self._mapping = values


def test_stored_ranks() -> None:
    assert stored_rank("blocked", False) == stored_rank("failed", False) == NEEDS_PERSON
    assert stored_rank("blocked", True) == stored_rank("reset", False) == PENDING_RANK
    assert stored_rank("running", True) == LIVE_RANK  # live until its holder is gone
    assert stored_rank("completed", False) == REST_RANK
    assert stored_rank("completed", True) == PENDING_RANK
    assert interrupted_rank(False) == NEEDS_PERSON and interrupted_rank(True) == PENDING_RANK


def test_attention_keys_sort_rank_up_newest_first_then_run_id() -> None:
    order = Order.parse("attention")
    rows = [
        _Row(attention_rank=3, updated_at=5.0, run_id="a"),
        _Row(attention_rank=0, updated_at=1.0, run_id="b"),
        _Row(attention_rank=0, updated_at=2.0, run_id="c"),
        _Row(attention_rank=0, updated_at=2.0, run_id="a"),
    ]
    keys = sorted((order.key_of(r) for r in rows), key=order.sort_tuple)
    assert [k[2] for k in keys] == ["a", "c", "b", "a"]
    reverse = Order.parse("-attention")
    assert sorted(keys, key=reverse.sort_tuple) == keys[::-1]


def test_a_damaged_value_sorts_as_sqlite_would_not_as_an_error() -> None:
    order = Order.parse("last_checkpoint_at")
    keys = [("text", "r1"), (3.5, "r2"), (-1.0, "r3"), (None, "r4")]
    assert [k[1] for k in sorted(keys, key=order.sort_tuple)] == ["r4", "r3", "r2", "r1"]


def test_unknown_orders_sort_by_run_id() -> None:
    assert Order.parse("-nonsense") == Order("run_id", True)
    assert Order.parse("frontier").key_of(_Row(frontier_index=2, run_id="x")) == (2, "x")


def test_beyond_takes_the_rows_past_a_key_in_either_direction() -> None:
    order = Order.parse("run_id")
    rows = [(None, (rid,)) for rid in ("a", "b", "c")]
    assert [k for _r, k in beyond(order, rows, ("b",), inclusive=False, backward=False)] == [("c",)]
    assert [k for _r, k in beyond(order, rows, ("b",), inclusive=True, backward=False)] == [("b",), ("c",)]
    assert [k for _r, k in beyond(order, rows, ("b",), inclusive=False, backward=True)] == [("a",)]
    assert beyond(order, rows, None, inclusive=False, backward=False) == rows
