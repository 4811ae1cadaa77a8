"""Runs that wait, for the console: the words for a waiting, paused or
cancelled run, and the answer to a run's question (one run, or every run of
a question cause), read and recorded through the engine's public API.
Blocking calls, run from worker threads; nothing here imports Textual."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from phasegate import Engine, RunStatus, RunSummary, RunView, UsageError
from phasegate.ops import safe, safe_json

from .answers import Form, form_of
from .runs_page import workers_alive

#: A time as the engine writes it in a line (`iso`): UTC, to the second or finer.
_ISO = re.compile(r"\b(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z\b")


def clock_time(epoch: float, now: float) -> str:
    """A wake time as an operator reads it: local `14:05` within a day of
    `now`, else with its date (`2026-05-30 14:05`)."""
    local = time.localtime(epoch)
    if abs(epoch - now) < 86400 and time.localtime(now).tm_yday == local.tm_yday:
        return time.strftime("%H:%M", local)
    return time.strftime("%Y-%m-%d %H:%M", local)


def local_times(text: str, now: float) -> str:
    """`text` with each UTC time the engine wrote in it said in local time
    (`waiting until 2026-05-28T21:26:40Z` -> `waiting until 21:26`)."""

    def one(m: re.Match[str]) -> str:
        try:
            epoch = datetime.fromisoformat(m.group(1) + "+00:00").timestamp()
        except ValueError:
            return m.group(0)
        return clock_time(epoch, now)

    return _ISO.sub(one, text)


def summary_reason(r: RunSummary, now: float) -> str:
    """The list's reason for a run that waits or is held, times in local
    time; a run waiting for an answer shows its question's prompt first
    (the column is narrow at 80 columns, and the prompt is what to read)."""
    if waits_for_answer(r) and r.prompt is not None:
        return f"answer needed: {r.prompt}"
    if r.status in (RunStatus.WAITING, RunStatus.PAUSED, RunStatus.CANCELLED):
        return local_times(r.reason, now)
    return r.reason


def waits_for_answer(r: RunSummary) -> bool:
    """A run waiting for a person's answer (it sorts with the runs that need one)."""
    return r.status is RunStatus.WAITING and r.waiting_for == "answer"


def wait_line(v: RunView, now: float) -> str:
    """What a waiting run waits for, or what holds a paused or cancelled
    run, in one line (stored text made safe): "waiting until 14:05 (rate
    limited: 429 from the model API)"; empty for any other run."""
    w, held = v.waiting or {}, v.held or {}
    until = w.get("until")
    when = f"until {clock_time(float(until), now)}" if isinstance(until, int | float) else ""
    if v.status is RunStatus.WAITING:
        kind = w.get("kind")
        if kind == "answer":
            q = w.get("question") or {}
            line = f"waiting for an answer to {safe(q.get('name'))}: {safe(q.get('prompt'))}"
            deadline = q.get("deadline")
            if isinstance(deadline, int | float):
                line += f" (no answer by {clock_time(float(deadline), now)}: it goes on without one)"
            return line
        if kind == "message":
            none_by = f" (none {when}: it goes on without one)" if when else ""
            return f"waiting for a message on {safe(w.get('topic'))}{none_by}"
        if kind == "retry_later":
            tried = f", attempt {safe(w.get('attempt'))} of {safe(w.get('of'))}" if w.get("attempt") else ""
            return f"waiting {when} (rate limited: {safe(w.get('reason'))}{tried})"
        return f"waiting {when} (timer {safe(w.get('name'))})"
    if held:
        verb = "paused" if held.get("action") == "pause" else "cancelled"
        at = held.get("at")
        said = f" at {clock_time(float(at), now)}" if isinstance(at, int | float) else ""
        if held.get("state") == "asked":
            return f"asked to {safe(held.get('action'))} by {safe(held.get('by'))}{said}: it stops at its next step"
        line = f"{verb} by {safe(held.get('by'))}{said}: {safe(held.get('reason'))}"
        if v.status is RunStatus.PAUSED and held.get("was"):
            line += f"; unpausing puts it back: {safe(held.get('was'))}"
        return line
    return ""


# -- answering ------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """One run's open question, as the answer form shows it."""

    run_id: str
    """The run asking."""
    name: str
    """The question's name."""
    prompt: str
    """The question as the workflow put it, made safe."""
    payload: str
    """Its payload as safe JSON (indented), "" when it has none."""
    payload_line: str
    """The same on one line (a cause's list of runs)."""


@dataclass(frozen=True)
class AnswerRequest:
    """Everything the answer form shows; built off the UI thread."""

    question: str
    """The question's name (`decide --question`)."""
    form: Form
    """The fields the answer is entered in, from the question's schema."""
    asked: tuple[Asked, ...]
    """The run asking it; for a cause, every run of it (each with its payload)."""
    cause: str | None = None
    """The cause answered (every run of it), or None for one run."""
    run_id: str = ""
    """The run answered (one run); empty for a cause."""
    proposal: bool = False
    """The store's policy lists answer: it is recorded as a proposal."""
    typed_why: str = ""
    """Non-empty: the operator types the run id to confirm (someone else claimed it)."""
    override_claim: bool = False
    """Someone else claimed the run: confirming (the run id typed) answers anyway."""
    deadline: str = ""
    """When the question stops waiting for an answer, as said ("no answer by 14:05: ...")."""

    @property
    def cli(self) -> str:
        """The command-line twin of this answer (`phasegate decide ... answer`), shown in the form."""
        target = f"--cause {self.cause}" if self.cause else "RUN"
        return f"phasegate decide {target} answer --question {self.question} --value JSON --reason ..."


@dataclass(frozen=True)
class AnswerResult:
    """What the operator confirmed."""

    request: AnswerRequest
    """The form the answer was entered in."""
    value: Any
    """The answer, as a JSON value checked against the form."""
    reason: str
    """Why, in the operator's words."""


def _asked(v: RunView) -> Asked:
    q = v.asking
    if q is None:
        raise UsageError(f"run {v.run_id} is not waiting for an answer", title="answer")
    if q.payload is None:
        return Asked(v.run_id, q.name, q.prompt, "", "")
    pretty = safe_json(json.dumps(q.payload, ensure_ascii=False, indent=2, sort_keys=True))
    line = safe_json(json.dumps(q.payload, ensure_ascii=False, sort_keys=True))
    return Asked(v.run_id, q.name, q.prompt, pretty, line)


def _deadline(v: RunView, now: float) -> str:
    q = v.asking
    if q is None or q.deadline is None:
        return ""
    return f"no answer by {clock_time(q.deadline, now)}: the run goes on without one"


def build_answer(engine: Engine, run_id: str, now: float) -> AnswerRequest:
    """The answer form for the question `run_id` waits on, from a fresh read.

    Args:
        engine: The store.
        run_id: The run.
        now: The console's clock (for the deadline and a claim's age).

    Returns:
        What the form shows.

    Raises:
        UsageError: The run waits for no answer.
    """
    view = engine.status(run_id)
    asked = _asked(view)
    q = view.asking
    assert q is not None  # _asked checked it
    other = engine.oversight.claimed_by_other(view)
    why = view.claim.said(now) if other and view.claim is not None else ""
    return AnswerRequest(
        q.name,
        form_of(q.schema),
        (asked,),
        run_id=run_id,
        proposal=engine.oversight.policy().needs_second("answer"),
        typed_why=why,
        override_claim=other,
        deadline=_deadline(view, now),
    )


def build_group_answer(engine: Engine, cause: str, run_ids: tuple[str, ...]) -> AnswerRequest:
    """The answer form for every run of a question cause (one value for all,
    each run's payload shown). The form is the first run's question's; each
    run's answer is checked against its own question when previewed.

    Args:
        engine: The store.
        cause: The cause's id.
        run_ids: Its runs.

    Returns:
        What the form shows.

    Raises:
        UsageError: None of the runs waits for an answer now.
    """
    views = [engine.status(r) for r in run_ids]
    asking = [v for v in views if v.asking is not None]
    if not asking:
        raise UsageError(f"no run of cause {cause} waits for an answer now", title="answer")
    first = asking[0].asking
    assert first is not None
    return AnswerRequest(
        first.name,
        form_of(first.schema),
        tuple(_asked(v) for v in asking),
        cause=cause,
        proposal=engine.oversight.policy().needs_second("answer"),
    )


def check_answer(engine: Engine, request: AnswerRequest, value: Any) -> str:
    """What the answer would do (the engine's preview), checked against the
    schema as `decide` checks it; raises what `decide` would raise.

    Args:
        engine: The store.
        request: The form's request.
        value: The value built from the form.

    Returns:
        The preview's sentence (for a cause: how many runs it fits).

    Raises:
        UsageError: The value does not meet the schema (the failing field's path said).
    """
    if request.cause is None:
        return engine.preview(request.run_id, "answer", question=request.question, value=value).summary
    lines = engine.triage.preview_many(
        [a.run_id for a in request.asked], "answer", cause=request.cause, question=request.question, value=value
    )
    unfit = [ln for ln in lines if ln.unfit is not None]
    if unfit:
        raise UsageError(f"{unfit[0].run_id}: {unfit[0].unfit}", title="answer")
    return f"answers {len(lines)} run(s) with this value"


def apply_answer(engine: Engine, result: AnswerResult) -> str:
    """Record the answer; one line saying what landed.

    Args:
        engine: The store.
        result: What the operator confirmed.

    Returns:
        The console's notice.
    """
    req = result.request
    if req.cause is not None:
        res = engine.triage.decide_many(
            [a.run_id for a in req.asked],
            "answer",
            reason=result.reason,
            cause=req.cause,
            question=req.question,
            value=result.value,
        )
        first = res.decided[0]
        state = "proposed (a second operator makes it take effect)" if first.state == "proposed" else "recorded"
        return f"answer to {req.question} by {first.operator} {state}: {len(res.decided)} run(s), batch {res.batch_id}"
    d = engine.decide(
        req.run_id,
        "answer",
        question=req.question,
        value=result.value,
        reason=result.reason,
        override_claim=req.override_claim,
    )
    if d.state == "proposed":
        when = "proposed; it waits for a second operator (another account)"
    elif workers_alive(engine):
        when = "recorded; a worker is alive and resumes the run with it at its next look"
    else:
        when = "recorded; NO WORKER IS ALIVE, so it waits: press e to resume the run now (or start phasegate worker)"
    return f"answer to {req.question} on {req.run_id} by {d.operator} {when} (decision {d.id})"
