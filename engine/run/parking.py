"""Where a run waits without holding a process: questions, timers, rate limits.

A phase that must wait (for a person's answer, `ctx.ask`; for a time,
`ctx.sleep`; for the time a rate limit names, `RetryLater`) records what it
waits for as a durable step of its phase, then raises `Park`. The runner
catches it and ends the execution `waiting`: its lease released, no process
held, with what it waits for and when a worker should wake it on the run's
row (`waiting_json`, `wake_at`). A resume re-runs the phase from its start, as
every resume does; its durable steps come back from the store, and the wait
finds its own record: a timer its wake time (a kill never restarts it), a
question its answer (an operator's `answer` decision, read from the run's
verified decisions) or its recorded timeout.

A wait shorter than `park_seconds` (`PHASEGATE_PARK_SECONDS`, 30) is slept in
the process, holding the lease: parking costs a resume.

The records are durable steps whose keys begin with "@", which an author's
step names may not (ids.validate_name): "@ask:NAME", "@noanswer:NAME",
"@sleep:NAME".
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import _json
from ..authoring.retry import NO_RETRY, Attempt, RetryPolicy, describe
from ..errors import UsageError
from ..ids import validate_name
from ..safetext import safe
from ..states import RunStatus, WaitKind
from ..timefmt import iso
from ..waits import NoAnswer, RetryLater, seconds_arg
from .stepcalls import StepCalls
from .steplog import StepLog

if TYPE_CHECKING:  # the store loads SQLAlchemy; this is a type only
    from ..store._runs import RunChange

#: The default of `PHASEGATE_PARK_SECONDS`.
DEFAULT_PARK_SECONDS = 30.0

ASK, NO_ANSWER, SLEEP = "@ask:", "@noanswer:", "@sleep:"


class Park(BaseException):
    """Raised inside a phase when the run is to wait without its process.

    A BaseException, as `Interrupted` is: a phase's `except Exception` must
    not swallow it and carry on as if the wait were over."""

    def __init__(self, waiting: dict[str, Any], until: float | None) -> None:
        super().__init__(waiting.get("kind"))
        self.waiting = waiting
        """What the run waits for, as `RunView.waiting` shows it."""
        self.until = until
        """When a worker wakes it (None: only an answer does)."""

    def columns(self, attempts: list[Attempt], line: str) -> RunChange:
        """What the run's row records of the wait (`line`: its attention line).
        A retry's attempts so far go with it: the execution that makes the
        next one shows them among the run's notes, as one execution would."""
        waiting = dict(self.waiting)
        if waiting.get("kind") == WaitKind.RETRY_LATER.value:
            waiting["tried"] = [a.as_dict() for a in attempts]
        return {"waiting_json": _json.dumps(waiting), "wake_at": self.until, "attention": line[:300]}


def attention(waiting: Mapping[str, Any]) -> str:
    """The line that says what a waiting run waits for."""
    kind = waiting.get("kind")
    until = waiting.get("until")
    when = f"until {iso(until)}" if isinstance(until, int | float) else ""
    if kind == WaitKind.ANSWER:
        q = waiting.get("question") or {}
        tail = f" (no answer by {iso(q['deadline'])}: it goes on without one)" if q.get("deadline") else ""
        said = f"waiting for an answer to {q.get('name')!s}: {q.get('prompt')!s}{tail}"
        refused = waiting.get("refused")
        return f"{said}; {refused!s}" if refused else said
    if kind == WaitKind.MESSAGE:
        tail = f" (none by {iso(until)}: it goes on without one)" if isinstance(until, int | float) else ""
        return f"waiting for a message on topic {waiting.get('topic')!s}{tail}"
    if kind == WaitKind.RETRY_LATER:
        return f"waiting {when} (rate limited: {waiting.get('reason')!s})"
    return f"waiting {when} (timer {waiting.get('name')!s})"


@dataclass(frozen=True)
class Refused:
    """An answer its question's type refuses, and why (`typed_answer`)."""

    why: str
    """pydantic's first error, in one line."""


def typed_answer(schema: Any, value: Any) -> Any:
    """An answer as its question's type takes it: an instance of `schema`
    (validators included), or `Refused`. Strict, from the answer's JSON: a
    float such as 1e308 is no integer, and text is no number.

    Args:
        schema: The type `ctx.ask` was given (a pydantic model or a type).
        value: The answer as recorded (JSON data).

    Returns:
        The value, rebuilt as `schema`; or `Refused` with the reason.
    """
    from pydantic import ValidationError

    try:
        return _json.adapter(schema).validate_json(_json.dumps(value), strict=True)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {"msg": str(exc), "loc": ()}
        where = ".".join(str(p) for p in first.get("loc", ())) or "the value itself"
        return Refused(safe(f"at {where}: {first.get('msg')}")[:300])
    except Exception as exc:  # noqa: BLE001 - a type pydantic cannot validate with: refused, never handed on raw
        return Refused(safe(f"{type(exc).__name__}: {exc}".splitlines()[0])[:300])


def json_schema(what: str, schema: Any) -> dict[str, Any] | None:
    """The JSON Schema of a question's `schema` (a pydantic model or a type), or None.

    Raises:
        UsageError: pydantic cannot describe it.
    """
    if schema is None:
        return None
    try:
        out: dict[str, Any] = _json.adapter(schema).json_schema()
    except Exception as exc:  # noqa: BLE001 - whatever pydantic says of a type it cannot describe
        raise UsageError(f"{what}: its schema {schema!r} has no JSON Schema ({type(exc).__name__}: {exc})") from None
    return out


def epoch_of(what: str, when: Any) -> float:
    """A wake time an author gave: an aware datetime or UNIX seconds.

    Raises:
        UsageError: a naive datetime, or not a time.
    """
    if isinstance(when, _dt.datetime):
        if when.tzinfo is None or when.utcoffset() is None:
            raise UsageError(f"{what}: a naive datetime names no moment; give it a timezone (or epoch seconds)")
        return when.timestamp()
    if isinstance(when, bool) or not isinstance(when, int | float) or not math.isfinite(when) or when < 0:
        raise UsageError(f"{what}: a wake time is an aware datetime or epoch seconds, not {when!r}")
    return float(when)


@dataclass(frozen=True)
class Answer:
    """An operator's answer to a question, as the run's verified decisions record it."""

    decision: int
    value: Any
    operator: str


@dataclass
class Parking:
    """What one execution of a run knows about its waits (made by the runner)."""

    clock: Callable[[], float]
    park_seconds: float = DEFAULT_PARK_SECONDS
    answers: dict[tuple[str, str, float], Answer] = field(default_factory=dict)
    """(phase, question, asked at) -> its answer."""
    refused: dict[int, str] = field(default_factory=dict)
    """Answer decisions the question's type refused in this execution, and
    why: the runner settles them void as the run parks again."""
    resumed: dict[str, Any] | None = None
    """What the run waited for when this execution took it up (its `waiting_json`),
    until the retry it names is met (`retry_wait`)."""

    @staticmethod
    def answers_of(rows: Iterable[Any]) -> dict[tuple[str, str, float], Answer]:
        """The answers among a run's (verified) decision rows: recorded, not proposed or void."""
        out: dict[tuple[str, str, float], Answer] = {}
        for d in rows:
            if d.action != "answer" or d.state not in ("pending", "applied"):
                continue
            try:
                detail = _json.loads(d.detail_json or "{}")
                key = (str(detail["phase"]), str(detail["question"]), float(detail["asked_at"]))
            except (KeyError, TypeError, ValueError, OverflowError):
                continue  # not an answer this engine wrote: nothing to hand a phase
            out[key] = Answer(int(d.id), detail.get("value"), str(d.operator))
        return out

    def take_up(self, row: Any) -> list[Attempt]:
        """What a run row says the run waited for, as this execution takes it
        up; returns the attempts a parked retry made so far.

        A retry it parked for (`RetryLater`) is met by its next attempt; a
        wait is taken up again by its own record. A retry stays on the row
        until an attempt meets it (`retry_pending`): an execution that ends
        before (killed, stopped, blocked) must not let the next call early.
        """
        if not row.waiting_json or row.status not in (RunStatus.WAITING.value, RunStatus.RUNNING.value):
            return []
        try:
            resumed = _json.loads(row.waiting_json)
        except ValueError:
            return []
        if not isinstance(resumed, dict):
            return []
        if row.status != RunStatus.WAITING.value and resumed.get("kind") != WaitKind.RETRY_LATER.value:
            return []
        self.resumed = resumed
        return _tried(resumed)

    @property
    def retry_pending(self) -> bool:
        """Whether a retry the run parked for is not yet met by an attempt."""
        w = self.resumed
        return w is not None and w.get("kind") == WaitKind.RETRY_LATER.value

    # -- a timer --------------------------------------------------------------

    def timer(self, steps: StepLog, calls: StepCalls, name: str, until: Callable[[float], float]) -> float:
        """Where `ctx.sleep` stands: the seconds left to sleep in the process
        (0: the time has come). The wake time is recorded on the first call.

        Raises:
            Park: the time left is `park_seconds` or more.
        """
        calls.check_stop()
        validate_name("timer", name)
        key = calls.durable_key(SLEEP + name)
        found, saved = steps.read(calls.phase, key, home=calls.at_home())
        now = self.clock()
        if found and isinstance(saved, dict) and isinstance(saved.get("until"), int | float):
            wake = float(saved["until"])
        else:
            wake = until(now)
            steps.save(calls.phase, key, _json.dumps({"until": wake, "set_at": now}))
        left = wake - now
        if left <= 0:
            calls.done(key)
            return 0.0
        if left < self.park_seconds:
            return left
        raise Park({"kind": WaitKind.TIMER.value, "phase": calls.phase, "name": name, "until": wake}, wake)

    # -- a question -----------------------------------------------------------

    def ask(
        self,
        steps: StepLog,
        calls: StepCalls,
        name: str,
        prompt: str,
        schema: Any,
        payload: Any,
        timeout: float | None,
    ) -> Any:
        """`ctx.ask`: the answer, rebuilt as `schema`; the first call records the question and parks.

        Raises:
            Park: no answer yet.
            NoAnswer: its deadline passed with none (recorded: a replay raises it again).
            UsageError: a bad argument.
        """
        calls.check_stop()
        validate_name("question", name)
        if "/" in name:
            # An answer names its question NAME or PHASE/NAME (decide/answers.py).
            raise UsageError(f"question {name!r}: a question's name has no '/' (an answer names it PHASE/NAME)")
        if not isinstance(prompt, str) or not prompt.strip():
            raise UsageError(f"ask {name!r}: the prompt is the question a person reads; give it as text")
        if timeout is not None:
            timeout = seconds_arg(f"ask {name!r}: timeout", timeout)
        key = calls.durable_key(ASK + name)
        if key != ASK + name:
            raise UsageError(
                f"question {name!r} is asked twice in phase {calls.phase!r}: a question's name is how an "
                "operator answers it; give each its own (for example f'approve:{i}')"
            )
        found, question = steps.read(calls.phase, key, home=calls.at_home())
        if not found or not isinstance(question, dict):
            now = self.clock()
            question = {
                "name": name,
                "phase": calls.phase,
                "prompt": prompt,
                "schema": json_schema(f"ask {name!r}", schema),
                "payload": _payload(name, payload),
                "asked_at": now,
                "deadline": now + timeout if timeout is not None else None,
            }
            steps.save(calls.phase, key, _json.dumps(question))
        lapsed, _ = steps.read(calls.phase, NO_ANSWER + name)
        deadline = question.get("deadline")
        if lapsed:
            calls.done(key)
            raise NoAnswer(name, deadline)
        answer = self.answers.get((calls.phase, name, float(question.get("asked_at") or 0)))
        refused: str | None = None
        if answer is not None:
            if schema is None:
                calls.done(key)
                return answer.value
            # The answer as the question's own type takes it, validators
            # included (a stored JSON Schema loses them): one it refuses never
            # reaches the phase; the run waits on the question again (the
            # answer settled void by the runner), the refusal its reason.
            taken = typed_answer(schema, answer.value)
            if not isinstance(taken, Refused):
                calls.done(key)
                return taken
            refused = f"the answer {answer.operator} gave (decision {answer.decision}) was refused: {taken.why}"
            self.refused[answer.decision] = refused
            del self.answers[(calls.phase, name, float(question.get("asked_at") or 0))]
        if isinstance(deadline, int | float) and self.clock() >= deadline:
            # Recorded before it is raised: an answer that comes later cannot
            # change what a replay of this phase is told.
            steps.save(calls.phase, NO_ANSWER + name, _json.dumps({"deadline": deadline, "at": self.clock()}))
            calls.done(key)
            raise NoAnswer(name, float(deadline))
        waiting = {"kind": WaitKind.ANSWER.value, "phase": calls.phase, "question": question, "until": deadline}
        if refused is not None:
            waiting["refused"] = refused
        raise Park(waiting, float(deadline) if isinstance(deadline, int | float) else None)

    # -- a rate limit ---------------------------------------------------------

    def retry_later(self, phase: str, step: str | None, exc: RetryLater, attempt: int, of: int) -> float:
        """Seconds to wait in the process before attempt `attempt + 1`.

        Raises:
            Park: the wait is `park_seconds` or more: a worker makes that attempt when due.
        """
        if exc.seconds < self.park_seconds:
            return exc.seconds
        until = self.clock() + exc.seconds
        waiting = {
            "kind": WaitKind.RETRY_LATER.value,
            "phase": phase,
            "step": step,
            "reason": exc.reason,
            "attempt": attempt,
            "of": of,
            "until": until,
        }
        raise Park(waiting, until)

    def phase_retry(
        self, phase: str, declared: RetryPolicy, exc: RetryLater, attempt: int, attempts: list[Attempt]
    ) -> float | None:
        """A phase's attempt `attempt` raised `RetryLater`: counted by the
        phase's policy (`declared`), or `RetryLater.DEFAULT_ATTEMPTS` when it
        declares none and no step's policy counted it. Returns the seconds to
        wait before the next attempt, or None when the attempts are spent.

        Raises:
            Park: the wait is long enough to park for.
        """
        counted = bool(declared.retries) or exc.spent
        policy = declared if counted else RetryPolicy(RetryLater.DEFAULT_ATTEMPTS - 1)
        again = attempt <= policy.retries
        attempts.append(Attempt(phase, None, attempt, policy.attempts, describe(exc), again))
        return self.retry_later(phase, None, exc, attempt, policy.attempts) if again else None

    def resumed_retry(self, phase: str, step: str | None) -> tuple[int, float] | None:
        """The attempt a parked retry of this phase (`step` None) or step made,
        and the seconds left before the next (0 when due); taken once.

        Raises:
            Park: its time is still `park_seconds` or more away (an early resume parks again).
        """
        w = self.resumed
        if not w or w.get("kind") != WaitKind.RETRY_LATER or w.get("phase") != phase or w.get("step") != step:
            return None
        try:
            attempt, until = int(w["attempt"]), float(w["until"])
        except (KeyError, TypeError, ValueError, OverflowError):
            self.resumed = None
            return None
        left = until - self.clock()
        if left >= self.park_seconds and left > 0:
            raise Park(dict(w), until)
        self.resumed = None
        return attempt, max(0.0, left)


def _payload(name: str, payload: Any) -> Any:
    try:
        return _json.loads(_json.dumps(payload))
    except UsageError as exc:
        raise UsageError(f"ask {name!r}: its payload is shown to a person as JSON: {exc}") from None


def made_by_a_run(parking: Parking | None) -> Parking:
    """A context's parking, which only a context made by a run has.

    Raises:
        UsageError: the context was made by hand (a test's), not by a run.
    """
    if parking is None:
        raise UsageError("this context cannot wait: it was not made by a run")
    return parking


def after_failure(
    parking: Parking | None,
    phase: str,
    name: str,
    policy: RetryPolicy,
    exc: Exception,
    attempt: int,
    attempts: list[Attempt],
) -> float | None:
    """A step's attempt `attempt` raised `exc`: the seconds to wait before
    the next attempt, or None to raise it (its retries are spent, or a
    `RetryLater` from a step with no retry policy of its own, which the
    phase's policy counts).

    Raises:
        Park: a `RetryLater` whose wait is long enough to park for.
    """
    if isinstance(exc, RetryLater) and parking is not None:
        if policy is NO_RETRY:
            return None
        again = attempt <= policy.retries
        attempts.append(Attempt(phase, name, attempt, policy.attempts, describe(exc), again))
        if not again:
            exc.spent = True  # the step's own policy counted it: RetryLater's default does not count it again
            return None
        return parking.retry_later(phase, name, exc, attempt, policy.attempts)
    again = policy.retryable(exc, attempt)
    if again or attempt > 1:
        attempts.append(Attempt(phase, name, attempt, policy.attempts, describe(exc), again))
    return float(policy.delay(attempt)) if again else None


def _tried(waiting: dict[str, Any]) -> list[Attempt]:
    """The attempts a parked retry recorded (the runner's `_park`), as
    stored: a value that is not one is left out (it only feeds the notes)."""
    out: list[Attempt] = []
    for a in waiting.get("tried") or ():
        try:
            out.append(
                Attempt(
                    str(a["phase"]),
                    None if a.get("step") is None else str(a["step"]),
                    int(a["attempt"]),
                    int(a["of"]),
                    str(a["error"]),
                    bool(a["retried"]),
                )
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
    return out
