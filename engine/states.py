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


RunStatusName = Literal["running", "completed", "failed", "interrupted", "blocked", "reset", "stalled"]
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


ActionName = Literal["approve", "degrade", "rewind", "reset", "confirm_effect", "retry_effect"]
"""`Action`'s values as plain strings: a decision's stored `action`."""

#: Which decisions answer which reason for a block. `rewind` and `reset` answer
#: any block; they are the operator's heavier tools.
ANSWERS: dict[BlockKind, frozenset[Action]] = {
    BlockKind.INTEGRITY: frozenset({Action.DEGRADE, Action.REWIND, Action.RESET}),
    BlockKind.ENV_MISMATCH: frozenset({Action.APPROVE, Action.REWIND, Action.RESET}),
    BlockKind.IN_DOUBT_EFFECT: frozenset({Action.CONFIRM_EFFECT, Action.RETRY_EFFECT, Action.RESET}),
    BlockKind.BELOW_FLOOR: frozenset({Action.DEGRADE, Action.REWIND, Action.RESET}),
}
