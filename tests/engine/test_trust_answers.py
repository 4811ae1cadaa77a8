"""Trust round 3 (#38), finding 1 / What to build 1: an answer keeps its
question's type. `decide answer` refuses what the stored schema refuses, an
integer strictly (1e308 is no int), and what the question's own pydantic type
refuses where the workflow's code can be imported (decide/answertype.py); at resume, an answer the question's own
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


def test_decide_refuses_what_the_questions_own_type_refuses(h: Harness) -> None:
    """The validator the stored schema lost is the question's type's: `decide`
    finds the type in the workflow's code and refuses, exit 2, nothing recorded."""
    p = h.cli("run", f"{WF}:wf", "--run-id", "r1", env=PARK)
    assert p.returncode == 5, p
    before = h.dump()
    refused = _answer(h, "amount", "5000")
    assert refused.returncode == 2, refused
    line = one_line_error(refused)
    assert "amount" in line and "at most 1000" in line, line
    assert h.dump() == before
    assert _answer(h, "amount", "700").returncode == 0
    assert h.resume("r1", env=PARK).returncode == 5  # now waiting on `count`
    assert h.trace() == ["amount int 700"]


def test_a_type_refused_answer_never_reaches_the_phase(h: Harness) -> None:
    """Where decide cannot see the type (the code does not load there), the
    resume still refuses: back to waiting on the question, saying why."""
    copy = h.tmp / "typed_answers.py"
    copy.write_text(WF.read_text())
    p = h.cli("run", f"{copy}:wf", "--run-id", "r1", env=PARK)
    assert p.returncode == 5, p
    # The code is away while the answer is given: decide checks the stored
    # schema only (which the validator is not in), and records it...
    copy.rename(h.tmp / "away")
    assert _answer(h, "amount", "5000").returncode == 0
    (h.tmp / "away").rename(copy)
    # ...and the resume refuses it.
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
