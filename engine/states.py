"""The words the engine uses for states, kinds and actions.

Each is a `StrEnum` (so it compares equal to its plain string and serialises as
one) with a `Literal` alias for signatures that external code types against.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    BLOCKED = "blocked"
    RESET = "reset"
    #: Stored `running`, its holder alive on this host but past its lease
    #: (frozen, starved or stuck on a lock): not dead, not to be taken over lightly.
    STALLED = "stalled"


RunStatusName = Literal["running", "completed", "failed", "interrupted", "blocked", "reset", "stalled"]


class OutcomeStatus(StrEnum):
    COMPLETED = "completed"
    BLOCKED = "blocked"
    FAILED = "failed"
    #: Only when asked to stop between phases (a worker's shutdown): resumable.
    INTERRUPTED = "interrupted"


class PhaseState(StrEnum):
    DONE = "done"
    PARTIAL = "partial"
    OPEN = "open"
    FAILED = "failed"
    DEGRADED = "degraded"


PhaseStateName = Literal["done", "partial", "open", "failed", "degraded"]


class EffectState(StrEnum):
    INTENT = "intent"
    DONE = "done"
    IN_DOUBT = "in_doubt"


EffectStateName = Literal["intent", "done", "in_doubt"]


class BlockKind(StrEnum):
    INTEGRITY = "integrity"
    ENV_MISMATCH = "env_mismatch"
    IN_DOUBT_EFFECT = "in_doubt_effect"
    BELOW_FLOOR = "below_floor"


BlockKindName = Literal["integrity", "env_mismatch", "in_doubt_effect", "below_floor"]


class Action(StrEnum):
    APPROVE = "approve"
    DEGRADE = "degrade"
    REWIND = "rewind"
    RESET = "reset"
    CONFIRM_EFFECT = "confirm_effect"
    RETRY_EFFECT = "retry_effect"


ActionName = Literal["approve", "degrade", "rewind", "reset", "confirm_effect", "retry_effect"]

#: Which decisions answer which reason for a block. `rewind` and `reset` answer
#: any block; they are the operator's heavier tools.
ANSWERS: dict[BlockKind, frozenset[Action]] = {
    BlockKind.INTEGRITY: frozenset({Action.DEGRADE, Action.REWIND, Action.RESET}),
    BlockKind.ENV_MISMATCH: frozenset({Action.APPROVE, Action.REWIND, Action.RESET}),
    BlockKind.IN_DOUBT_EFFECT: frozenset({Action.CONFIRM_EFFECT, Action.RETRY_EFFECT, Action.RESET}),
    BlockKind.BELOW_FLOOR: frozenset({Action.DEGRADE, Action.REWIND, Action.RESET}),
}
