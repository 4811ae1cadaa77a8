"""What a phase is handed of an earlier phase's output is exactly what a
resume reads from the store (sorted keys, lists for tuples), and its own:
mutating it changes neither the stored output nor what another phase, a
later attempt, or a resume is handed. Real engine, real SQLite file and
PostgreSQL schema; each phase records `repr` of what it was handed, which
shows key order and tuple against list."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_schema import pg_schema

from phasegate import Engine, Workflow, _json


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
        return
    with pg_schema() as url:
        yield url


#: What phase a returns, by the way the encoder takes it: orjson's bytes as
#: they are; orjson's bytes parsed back to check a null (that copy is handed
#: on, once); the standard library's (a tuple beside a null).
SHAPES = {
    "orjson": lambda: {"z": [1, (2, 3)], "a": {"y": 0, "x": (3, 4)}, "m": "text"},
    "orjson+parsed": lambda: {"z": [1, [2, 3]], "a": {"y": None, "x": [3, 4]}, "m": "text"},
    "stdlib": lambda: {"z": [1, (2, 3)], "a": {"y": None, "x": (3, 4)}, "m": "text"},
}

#: What `json.loads` gives for the stored output, in `repr` (key order and
#: list against tuple show): the view a resume has.
STORED = {
    "orjson": "{'a': {'x': [3, 4], 'y': 0}, 'm': 'text', 'z': [1, [2, 3]]}",
    "orjson+parsed": "{'a': {'x': [3, 4], 'y': None}, 'm': 'text', 'z': [1, [2, 3]]}",
    "stdlib": "{'a': {'x': [3, 4], 'y': None}, 'm': 'text', 'z': [1, [2, 3]]}",
}


@pytest.fixture(params=list(SHAPES))
def shape(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Seen:
    def __init__(self) -> None:
        self.views: dict[str, list[str]] = {}
        self.fail_b: int = 0
        """How many more times phase b raises (after mutating what it was handed)."""

    def note(self, phase: str, value: Any) -> None:
        self.views.setdefault(phase, []).append(repr(value))


def _workflow(seen: Seen, shape: str, *, b_retries: int = 0) -> Workflow:
    wf = Workflow("handed")

    @wf.phase()
    def a(ctx: Any) -> Any:
        return SHAPES[shape]()

    @wf.phase(needs=["a"], retries=b_retries, backoff=0.0)
    def b(ctx: Any, a: Any) -> Any:
        seen.note("b", a)
        a["z"].append(99)
        a["a"]["x"][0] = -1
        a["added"] = True
        if seen.fail_b > 0:
            seen.fail_b -= 1
            raise RuntimeError("b fails after mutating its input")
        return {"b": 1}

    @wf.phase(needs=["a"])
    def d(ctx: Any, a: Any) -> Any:
        seen.note("d", a)
        return None

    @wf.phase(needs=["a", "b"])
    def c(ctx: Any, a: Any, b: Any) -> Any:
        seen.note("c", a)
        a["z"].clear()
        return a

    return wf


def test_a_later_phase_is_handed_what_a_resume_would_read(store: str, shape: str) -> None:
    seen = Seen()
    with Engine(store) as eng:
        out = eng.run(_workflow(seen, shape), "r1")
    assert out.status.value == "completed", out
    # Sorted keys at every level, tuples as lists: never the returned object.
    assert seen.views["b"] == [STORED[shape]]
    with Engine(store) as eng:
        again = eng.run(_workflow(seen, shape), "r1")  # completed: its result read back, nothing run
    assert again.phases_run == [] and repr(again.result) == repr(out.result)
    assert repr(json.loads(_json.dumps(SHAPES[shape]()))) == STORED[shape]


def test_mutating_a_handed_output_changes_no_other_view(store: str, shape: str) -> None:
    seen = Seen()
    seen.fail_b = 1
    with Engine(store) as eng:
        out = eng.run(_workflow(seen, shape, b_retries=1), "r1")
    assert out.status.value == "completed", out
    # The second attempt of b, c and d each got the output as stored, not
    # what b (or c) did to its own copy.
    assert seen.views["b"] == [STORED[shape], STORED[shape]]
    assert seen.views["c"] == [STORED[shape]]
    assert seen.views["d"] == [STORED[shape]]
    # The run's result is c's output: its own copy, emptied by c.
    assert repr(out.result) == STORED[shape].replace("'z': [1, [2, 3]]", "'z': []")


def test_after_a_resume_each_phase_gets_its_own_copy(store: str, shape: str) -> None:
    # The resumed run reads a's output from the verified chain: b's mutation
    # of it must not reach c or d (each once shared the one parsed object).
    seen = Seen()
    seen.fail_b = 1
    with Engine(store) as eng:
        first = eng.run(_workflow(seen, shape), "r1")
        assert first.status.value == "failed", first
        out = eng.run(_workflow(seen, shape), "r1")
    assert out.status.value == "completed", out
    assert seen.views["b"] == [STORED[shape], STORED[shape]]
    assert seen.views["c"] == [STORED[shape]]
    assert seen.views["d"] == [STORED[shape]]


def test_the_stored_output_is_the_canonical_bytes_the_hash_covers(store: str, shape: str) -> None:
    seen = Seen()
    with Engine(store) as eng:
        eng.run(_workflow(seen, shape), "r1")
        reports = eng.verify(deep=True)
    assert [r.ok for r in reports] == [True], reports
    value = SHAPES[shape]()
    enc = _json.encode(value)
    assert enc.data == _json.dumps_stdlib(value).encode("utf-8")
    assert enc.by_orjson is (shape != "stdlib")
    assert (enc.parsed is not _json.MISSING) is (shape == "orjson+parsed")
    if enc.parsed is not _json.MISSING:
        assert repr(enc.parsed) == STORED[shape]
