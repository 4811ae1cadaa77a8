"""Trust round 3 (#38), finding 1 / What to build 1: an answer keeps its
question's type. `decide answer` refuses what the stored schema refuses, an
integer strictly (1e308 is no int); at resume, an answer the question's own
pydantic type refuses (a validator the stored schema lost) never reaches the
phase: the run waits on the question again with the refusal as its reason,
and the next answer is taken. `ctx.ask` returns an instance of its type, in
a sync and an async phase."""

from __future__ import annotations

import json
from pathlib import Path

from engine_harness import Harness, one_line_error

WF = Path(__file__).resolve().parent / "workflows" / "typed_answers.py"
PARK = {"PHASEGATE_PARK_SECONDS": "0.5"}


def _answer(h: Harness, question: str, value: str, env: dict[str, str] | None = None):
    return h.decide("r1", "answer", "--question", question, "--value", value, env=env)


def test_a_type_refused_answer_never_reaches_the_phase(h: Harness) -> None:
    p = h.cli("run", f"{WF}:wf", "--run-id", "r1", env=PARK)
    assert p.returncode == 5, p
    # The stored schema cannot see the validator: the decision is recorded...
    assert _answer(h, "amount", "5000").returncode == 0
    # ...and the resume refuses it: back to waiting on the same question, saying why.
    r = h.resume("r1", env=PARK)
    assert r.returncode == 5, r
    assert h.trace() == []
    s = h.status("r1")
    assert s["status"] == "waiting" and s["waiting"]["question"]["name"] == "amount"
    assert "at most 1000" in s["waiting"]["refused"], s["waiting"]
    (d,) = [d for d in s["decisions"] if d["action"] == "answer"]
    assert d["state"] == "void"
    assert h.cli("verify").returncode == 0
    # A good answer is taken, as its type.
    assert _answer(h, "amount", "700").returncode == 0
    assert h.resume("r1", env=PARK).returncode == 5  # now waiting on `count`
    assert h.trace() == ["amount int 700"]


def test_an_int_question_refuses_1e308_and_a_model_question_gets_a_model(h: Harness) -> None:
    assert h.cli("run", f"{WF}:wf", "--run-id", "r1", env=PARK).returncode == 5
    assert _answer(h, "amount", "10").returncode == 0
    assert h.resume("r1", env=PARK).returncode == 5
    before = h.dump()
    line = one_line_error(_answer(h, "count", "1e308"))
    assert "refused" in line and "integer" in line, line
    assert h.dump() == before
    assert _answer(h, "count", "3").returncode == 0
    assert h.resume("r1", env=PARK).returncode == 5
    assert _answer(h, "refund", json.dumps({"approved": True, "amount": 12})).returncode == 0
    done = h.resume("r1", env=PARK)
    assert done.returncode == 0, done
    assert h.trace() == ["amount int 10", "count int 3", "refund Refund True 12"]
