"""Which answer fits a question a run asked (`decide RUN answer`).

The question's JSON Schema was stored with it when the run asked
(run/parking.py); an answer is checked against it here, before anything is
recorded, so a wrong value is refused with the path of the field that is
wrong, and the run is only ever resumed with a value its phase can take.
"""

from __future__ import annotations

from typing import Any

from .. import _json
from ..errors import AlreadyDecided, DecisionError, UsageError
from ..safetext import safe
from ..states import RunStatus
from ..timefmt import iso
from ..views.models import QuestionView, RunView
from .answertype import check_typed

#: A value given for an answer, told apart from JSON `null` (which is a value).
NO_VALUE: Any = object()


def find(view: RunView, question: str) -> QuestionView:
    """The open question of the run that `question` names (its name, or `phase/name`).

    Raises:
        UsageError: the run asked no such question.
        AlreadyDecided: it is answered.
        DecisionError: it timed out.
    """
    phase, _, name = question.rpartition("/") if "/" in question else ("", "", question)
    named = [q for q in view.questions if q.name == name and (not phase or q.phase == phase)]
    if not named:
        asked = ", ".join(sorted({q.name for q in view.questions if q.state == "open"})) or "none is open"
        raise UsageError(f"run {view.run_id!r} asked no question {question!r} (open: {asked})")
    open_ = [q for q in named if q.state == "open"]
    if len(open_) > 1:
        raise UsageError(f"question {question!r} is open in several phases of run {view.run_id!r}: name it PHASE/NAME")
    if not open_:
        last = named[-1]
        if last.state == "answered":
            raise AlreadyDecided(
                f"question {last.name!r} of run {view.run_id!r} is already answered by {last.answered_by}"
                f" (decision {last.decision})"
            )
        raise DecisionError(f"question {last.name!r} of run {view.run_id!r} timed out; the run went on without it")
    return open_[0]


def check_value(q: QuestionView, value: Any) -> Any:
    """The value, as JSON, once it meets the question's schema.

    Raises:
        UsageError: it is not JSON, or does not meet the schema (the message
            names the failing field's path).
        DecisionError: the stored schema cannot check a value.
    """
    return meets_schema(f"answer to {q.name!r}", q.schema, value)


def meets_schema(what: str, schema: dict[str, Any] | None, value: Any) -> Any:
    """The value, as JSON, once it meets a stored JSON Schema: the one check
    of an answer against its question and of a message against its topic.

    Args:
        what: What is checked ("answer to 'ok'", "message on 'paid'"), for the message.
        schema: The JSON Schema the run recorded, or None for any JSON value.
        value: The value given.

    Returns:
        The value as plain JSON data.

    Raises:
        UsageError: it is not JSON, or does not meet the schema (the message
            names the failing field's path).
        DecisionError: the stored schema cannot check a value (it is untrusted).
    """
    try:
        plain = _json.loads(_json.dumps(value))
    except UsageError as exc:
        raise UsageError(f"{what} refused: {exc}") from None
    if schema is None:
        return plain
    import jsonschema  # type: ignore[import-untyped]  # only when an answer is checked: a start does not pay for it

    try:
        validator = _strict_validator(jsonschema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(plain))
    except Exception as exc:  # noqa: BLE001 - a stored schema is untrusted: an unknown type, a bad pattern, a $ref loop
        said = safe(f"{type(exc).__name__}: {exc}".splitlines()[0])[:200]
        raise DecisionError(f"{what}: the stored schema cannot check a value ({said})") from None
    if error is not None:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        raise UsageError(f"{what} refused: at {safe(where) or 'the value itself'}: {safe(error.message)[:300]}")
    return plain


_STRICT: list[Any] = []
"""The strict validator class, made once a process: making it (an attrs class) costs ~4 ms."""


def _strict_validator(jsonschema: Any) -> Any:
    """Draft 2020-12 with integers strict: JSON Schema counts a float with
    no fraction (1e308) as an integer, and the phase would receive a float;
    here only a JSON integer is one (a question typed `int` refuses 1e308)."""
    if not _STRICT:
        base = jsonschema.Draft202012Validator
        checker = base.TYPE_CHECKER.redefine(
            "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)
        )
        _STRICT.append(jsonschema.validators.extend(base, type_checker=checker))
    return _STRICT[0]


def fit_answer(view: RunView, question: str | None, value: Any, now: float) -> tuple[QuestionView, dict[str, Any]]:
    """The question an answer names and what the decision records with it.

    Raises:
        UsageError: no question or value (its `options` say which), no such open question, or a
            value its schema or its own type (validators included, `answertype.check_typed`) refuses.
        DecisionError: the run cannot be answered now (it is over), or the question timed out.
    """
    if not question:
        # The one question the run waits on needs no naming (a group answer by cause).
        open_ = [q for q in view.questions if q.state == "open"]
        if len(open_) != 1:
            raise UsageError("answer needs the question the run asked", options=("question",))
        question = f"{open_[0].phase}/{open_[0].name}"
    if value is NO_VALUE:
        raise UsageError("answer needs the answer's value, as JSON (JSON null is one)", options=("value",))
    if view.status in (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.RESET):
        raise DecisionError(f"run {view.run_id!r} is {view.status.value}: it waits for no answer")
    q = find(view, question)
    if q.deadline is not None and now >= q.deadline:
        raise DecisionError(
            f"question {q.name!r} of run {view.run_id!r} timed out at {iso(q.deadline)}; the run goes on without it"
        )
    plain = check_value(q, value)
    # The question's own type, validators included, where the workflow's code
    # can be imported: what the resume would refuse is refused here, unrecorded.
    check_typed(view.target, q, plain)
    # A pending answer shows the question answered (`find` refuses a second);
    # a proposed one is the gate's: one proposal of an action at a time.
    return q, {"question": q.name, "phase": q.phase, "asked_at": q.asked_at, "value": plain}
