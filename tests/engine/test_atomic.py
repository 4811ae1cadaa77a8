"""An atomic effect and its completion record commit together or not at all."""

from __future__ import annotations

import pytest
from engine_harness import HERE_WORKFLOWS

ATOMIC = f"{HERE_WORKFLOWS / 'atomic.py'}:wf"


def _ledger(h) -> list[tuple[str, int]]:
    tables = (
        h.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
        if h.backend == "postgres"
        else h.sql("SELECT name FROM sqlite_master WHERE type = 'table'")
    )
    if ("app_ledger",) not in [tuple(t) for t in tables]:
        return []  # the table is created inside the first effect
    return [tuple(r) for r in h.sql("SELECT key, amount FROM app_ledger ORDER BY key")]


@pytest.mark.parametrize("point", ["inside:book:0", "inside:book:1"])
def test_kill_inside_an_atomic_effect_commits_nothing_and_resume_does_it_once(h, point):
    p = h.cli("run", ATOMIC, "--run-id", "a1", "--input", "{}", env={"PHASEGATE_TEST_KILL_AT": point})
    assert p.killed, p
    done_before = 0 if point.endswith(":0") else 1
    assert len(_ledger(h)) == done_before  # the row written in the killed transaction is gone
    st = h.status("a1")
    effects = {e["name"]: e["state"] for e in st["effects"]}
    assert list(effects.values()) == ["done"] * done_before  # no intent record either: nothing in doubt

    p = h.resume("a1")
    assert p.returncode == 0, p
    assert _ledger(h) == [("a1/book/book:0", 300), ("a1/book/book:1", 301)]
    st = h.status("a1")
    assert {e["name"]: (e["state"], e["atomic"]) for e in st["effects"]} == {
        "book:0": ("done", True),
        "book:1": ("done", True),
    }


def test_kill_after_an_atomic_effect_committed_does_not_repeat_it(h):
    p = h.cli("run", ATOMIC, "--run-id", "a1", "--input", "{}", env={"PHASEGATE_TEST_KILL_AT": "after:book:0"})
    assert p.killed
    assert _ledger(h) == [("a1/book/book:0", 300)]
    assert h.resume("a1").returncode == 0
    assert _ledger(h) == [("a1/book/book:0", 300), ("a1/book/book:1", 301)]
