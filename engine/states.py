"""The words the engine uses for states, kinds and actions.

Each is a `StrEnum` (so it compares equal to its plain string and serialises as
one) with a `Literal` alias for signatures that external code types against.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class RunStatus(StrEnum):
    """A run's status as an operator sees it (`phasegate status`, the console).
    The store holds all but `interrupted` and `stalled`, which are how the
    views read a stored `running` whose holder is gone or stuck
    (`views.status.effective_status`)."""

    RUNNING = "running"
    """A process holds the run's lease and is working on it."""
    COMPLETED = "completed"
    """Every phase ran (or was skipped by a degrade: "completed (degraded)"); nothing is left to do."""
    FAILED = "failed"
    """A phase raised, after the retries its workflow declares; the error says
    where. Nothing retries it by itself: fix the cause, then resume it."""
    INTERRUPTED = "interrupted"
    """Stored `running`, but its process died or its lease lapsed: resume it
    (the worker does). An effect it left in doubt may be answered first."""
    BLOCKED = "blocked"
    """Stopped for an operator: each reason (`BlockKind`) waits for a decision that answers it."""
    RESET = "reset"
    """An operator reset it: its checkpoints are set aside and it waits to
    start over from its original inputs (the worker or a resume starts it)."""
    STALLED = "stalled"
    """Stored `running`, its holder alive on this host but past its lease
    (frozen, starved or stuck on a lock): not dead, not to be taken over
    lightly (`resume --force`)."""
    WAITING = "waiting"
    """Parked with no process held: for a person's answer (`ctx.ask`), a
    timer (`ctx.sleep`) or a rate limit (`RetryLater`). A worker resumes it
    by itself once it is answered or due (`RunView.waiting` says for what)."""
    PAUSED = "paused"
    """Paused by an operator (`phasegate pause`): nothing resumes it, and its
    timer does not fire, until an operator unpauses it (`RunView.paused`)."""
    CANCELLED = "cancelled"
    """Cancelled by an operator (`phasegate cancel`): final. Nothing runs it
    again; effects it left in doubt stay listed for a check outside."""


RunStatusName = Literal[
    "running", "completed", "failed", "interrupted", "blocked", "reset", "stalled", "waiting", "paused", "cancelled"
]
"""`RunStatus`'s values as plain strings: the type of a stored or `--json` run status."""


class OutcomeStatus(StrEnum):
    """How one `Engine.run` call ended (`Outcome.status`)."""

    COMPLETED = "completed"
    """The run finished; `Outcome.result` is its last phase's output."""
    BLOCKED = "blocked"
    """It stopped for an operator; `Outcome.blocked` says why."""
    FAILED = "failed"
    """A phase raised; `Outcome.error` says which and how."""
    INTERRUPTED = "interrupted"
    """Only when asked to stop (a signal, a worker's shutdown): it stopped at
    its next step, resumable; `Outcome.stopped` says where."""
    WAITING = "waiting"
    """It parked, holding no process, for an answer, a timer or a rate limit
    (`Outcome.waiting` says which); a worker resumes it when it is due."""
    PAUSED = "paused"
    """An operator paused it (at its next step, if it was running)."""
    CANCELLED = "cancelled"
    """An operator cancelled it: final."""


class WaitKind(StrEnum):
    """What a `waiting` run waits for (`RunView.waiting["kind"]`)."""

    ANSWER = "answer"
    """A person's answer to its question (`ctx.ask`): it needs a person."""
    TIMER = "timer"
    """A time (`ctx.sleep`, `ctx.sleep_until`)."""
    RETRY_LATER = "retry_later"
    """The time a rate limit named (`RetryLater`)."""
    MESSAGE = "message"
    """A message on a topic (`ctx.recv`), which `phasegate send` delivers."""


WaitKindName = Literal["answer", "timer", "retry_later", "message"]
"""`WaitKind`'s values as plain strings."""


class PhaseState(StrEnum):
    """Where one phase of a run stands (`PhaseView.state`)."""

    DONE = "done"
    """Its checkpoint is trusted: a resume does not run it again."""
    PARTIAL = "partial"
    """The frontier phase, started (durable steps or effects recorded) but
    not done: a resume continues it, keeping what it saved."""
    OPEN = "open"
    """Not started (or its work was set aside): it runs when the frontier reaches it."""
    FAILED = "failed"
    """The phase the run failed in."""
    DEGRADED = "degraded"
    """Done without some of its needs, or skipped by a degrade (`PhaseView.missing` says which)."""


PhaseStateName = Literal["done", "partial", "open", "failed", "degraded"]
"""`PhaseState`'s values as plain strings: the type of a stored or `--json` phase state."""


class EffectState(StrEnum):
    """An effect as an operator sees it (`EffectView.state`). The store holds
    `intent` and `done`; `in_doubt` is how the views read an intent nobody
    can finish (`views.status.effect_state`)."""

    INTENT = "intent"
    """Started and not yet recorded done, while its holder lives or calling
    it again is safe (idempotent, atomic, or its retry approved)."""
    DONE = "done"
    """Recorded done with its result: it is never called again, and later phases read that result."""
    IN_DOUBT = "in_doubt"
    """Started and never recorded done, its holder gone, and not safe to
    call again: check the outside system by its key, then `confirm_effect`
    if it happened or `retry_effect` if it did not."""


EffectStateName = Literal["intent", "done", "in_doubt"]
"""`EffectState`'s values as plain strings: the type of a stored or `--json` effect state."""


class BlockKind(StrEnum):
    """Why a run stopped for an operator (a block reason's `kind`)."""

    INTEGRITY = "integrity"
    """A checkpoint, a saved result or an effect record failed verification:
    nothing from there on is trusted (`degrade`, `rewind` or `reset`; an
    effect record: `confirm_effect` or `retry_effect`)."""
    ENV_MISMATCH = "env_mismatch"
    """The world moved since work that is kept read it: a probe's value, the
    code of a done phase, the shape before the frontier, or the checkpoint's
    age (`approve` it, or `rewind`/`reset`)."""
    IN_DOUBT_EFFECT = "in_doubt_effect"
    """An effect was started and never recorded done, against a target that
    does not deduplicate: nobody knows whether it happened."""
    BELOW_FLOOR = "below_floor"
    """A phase cannot start: an output in its floor is lost and cannot be
    re-derived, or was skipped by an earlier degrade (`degrade`, `rewind` or `reset`)."""


BlockKindName = Literal["integrity", "env_mismatch", "in_doubt_effect", "below_floor"]
"""`BlockKind`'s values as plain strings: the `kind` of a stored block reason."""


class Action(StrEnum):
    """An operator's decision on a stopped run (`phasegate decide RUN ACTION`),
    carried out at the run's next start (a reset at once). `ANSWERS` says which fit which block."""

    APPROVE = "approve"
    """Accept the changed values shown (exactly those) and go on from the frontier."""
    DEGRADE = "degrade"
    """Go on without what is lost: trust only the checkpoints before a damaged
    one, or skip the phases below their floor (the run completes degraded)."""
    REWIND = "rewind"
    """Re-run from a phase (`--phase`): it and the phases after it are
    re-opened (a marker in the run's chain) and run again. A done effect is
    not called again, unless it was declared `redo_on_rewind`."""
    RESET = "reset"
    """Start over from the original inputs: the run's checkpoints are archived
    when it is recorded. A done effect is not called again, unless it was
    declared `redo_on_rewind`."""
    CONFIRM_EFFECT = "confirm_effect"
    """An effect in doubt happened: record it done with the result the outside
    system returned (`--result JSON`); it is never called again. Given again,
    it corrects the result, and the phases that read it run again."""
    RETRY_EFFECT = "retry_effect"
    """An effect in doubt did not happen: the next start calls it again, with the same key."""
    ANSWER = "answer"
    """Answer the question a run asked (`ctx.ask`; `--question NAME --value
    JSON`): the value is checked against the question's schema, and the run
    is resumed with it."""
    PAUSE = "pause"
    """Pause the run: a running one stops at its next step, a stopped one at
    once; nothing resumes it until it is unpaused."""
    UNPAUSE = "unpause"
    """Put a paused run back where it was (a due timer fires then)."""
    CANCEL = "cancel"
    """Cancel the run, for good: a running one stops at its next step."""


ActionName = Literal[
    "approve",
    "degrade",
    "rewind",
    "reset",
    "confirm_effect",
    "retry_effect",
    "answer",
    "pause",
    "unpause",
    "cancel",
]
"""`Action`'s values as plain strings: a decision's stored `action`."""

#: Decisions that answer no block: a question's answer, and an operator's
#: hold on a run (pause, unpause, cancel), which may be taken while it runs.
HOLDS: frozenset[Action] = frozenset({Action.PAUSE, Action.UNPAUSE, Action.CANCEL})

#: Which decisions answer which reason for a block. `rewind` and `reset` answer
#: any block; they are the operator's heavier tools.
ANSWERS: dict[BlockKind, frozenset[Action]] = {
    BlockKind.INTEGRITY: frozenset({Action.DEGRADE, Action.REWIND, Action.RESET}),
    BlockKind.ENV_MISMATCH: frozenset({Action.APPROVE, Action.REWIND, Action.RESET}),
    BlockKind.IN_DOUBT_EFFECT: frozenset({Action.CONFIRM_EFFECT, Action.RETRY_EFFECT, Action.RESET}),
    BlockKind.BELOW_FLOOR: frozenset({Action.DEGRADE, Action.REWIND, Action.RESET}),
}
