"""The questions a run asked (`ctx.ask`) and their answers, as the views show them.

A question is a durable step of its phase ("@ask:NAME", run/parking.py); its
answer an operator's `answer` decision naming the question and when it was
asked; a timeout a step "@noanswer:NAME". All of it is read from the run's
own rows, as stored: a question record that does not match its hash is not
shown (the start sequence stops the run on it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _json
from .._stop import damaged
from ..run.parking import ASK, NO_ANSWER, Parking
from .models import QuestionView


def questions_of(steps: Iterable[Any], decisions: Iterable[Any]) -> tuple[QuestionView, ...]:
    """Every question among a run's durable steps, oldest first, each with its answer."""
    asked: list[tuple[str, dict[str, Any]]] = []
    lapsed: set[tuple[str, str]] = set()
    for st in steps:
        key = str(st.step_key)
        if getattr(st, "discarded", False) or damaged(st.result_json, st.result_hash):
            continue
        if key.startswith(NO_ANSWER):
            lapsed.add((str(st.phase), key[len(NO_ANSWER) :]))
        elif key.startswith(ASK):
            try:
                q = _json.loads(st.result_json)
            except ValueError:
                continue
            if isinstance(q, dict) and _time(q.get("asked_at")) is not None:
                asked.append((str(st.phase), q))
    answers = Parking.answers_of(decisions)
    out: list[QuestionView] = []
    for phase, q in sorted(asked, key=lambda pq: float(pq[1]["asked_at"])):
        name = str(q.get("name"))
        got = answers.get((phase, name, float(q["asked_at"])))
        state = "timed_out" if (phase, name) in lapsed else ("answered" if got is not None else "open")
        deadline = _time(q.get("deadline"))
        schema = q.get("schema")
        out.append(
            QuestionView(
                name=name,
                phase=phase,
                prompt=str(q.get("prompt") or ""),
                schema=schema if isinstance(schema, dict) else None,
                payload=q.get("payload"),
                asked_at=float(q["asked_at"]),
                deadline=deadline,
                state=state,  # type: ignore[arg-type]
                answer=got.value if got is not None else None,
                answered_by=got.operator if got is not None else None,
                decision=got.decision if got is not None else None,
            )
        )
    return tuple(out)


def _time(value: Any) -> float | None:
    """A stored time as a float, or None: not a number, or one no float holds (a record edited)."""
    if not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None
