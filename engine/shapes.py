"""The JSON the engine stores and reads back, typed where it is read.

Why a run is blocked (`blocked_json`: `BlockedReason`), what its world was
compared with at its last start (`env_json`: `EnvCheck`), why a checkpoint
is not trusted (a view's `integrity`: `IntegrityReason`), how a run failed
(`error_json`: `RunError`), and an effect record as a store row reads
(`EffectRow`) with its reconcile hook's last answer (`reconcile_json`:
`ReconcileAnswer`).

Each says what the engine writes. It is a claim to the type checker, not a
check: stored data is untrusted (a disk, a hand edit, an older engine), so
`store._rowcheck` checks a row's columns as it leaves the store (a run's
`blocked_json` is a list of objects, each with a text `kind`), and a reader
still checks at run time each value it relies on beyond that.

Layer: base. It imports nothing of the engine's.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Protocol, TypedDict


class IntegrityReason(TypedDict):
    """Why a checkpoint cannot be trusted (`chain.IntegrityFailure.as_dict`):
    an entry of a view's `integrity`, and the `failure` of an integrity block."""

    seq: int
    """The checkpoint's sequence number; -1 for the run's stored inputs."""
    phase: str | None
    what: str
    """What failed: hash, parse, format, identity, chain, inputs, output, type, head or schema."""
    expected: str | None
    actual: str | None
    message: str
    meaning: NotRequired[str]
    """What it means for the run, in one plain sentence (not said of damaged inputs)."""


class EnvCheck(TypedDict):
    """One item a start compared with the world its checkpoints were written
    against (`environment.Comparison.rows`): an entry of `env_json`, and of
    an env_mismatch block's `changes`."""

    probe: str
    """A probe's name; `code:PHASE` for a done phase's code, `shape` for the
    workflow's shape before the frontier, or the checkpoint's age probe."""
    saved: Any
    """The value the checkpoints recorded (any JSON)."""
    current: Any
    """The value now (any JSON)."""
    changed: bool
    phases: list[str]
    """The phases that read it."""


class ReconcileAnswer(TypedDict):
    """A reconcile hook's answer (`Reconciled.as_dict`): an effect record's
    `reconcile_json` (with `at`), and an in_doubt_effect block's `reconcile`."""

    answer: str
    """done, not_done or unknown; a view says "unreadable" for a stored answer it cannot read."""
    why: str
    result: NotRequired[Any]
    """What the outside system returned, for `done`."""
    evidence: NotRequired[dict[str, Any]]
    at: NotRequired[float]
    """When the hook answered (UNIX seconds), in the effect record."""


class IntegrityBlock(TypedDict):
    """A checkpoint, a saved result or an effect record failed verification."""

    kind: Literal["integrity"]
    detail: str
    failure: NotRequired[IntegrityReason]
    """The checkpoint that failed, when one did."""
    what: NotRequired[str]
    """What failed when it is not a checkpoint: "record" (a saved result),
    "effect" (an effect record), "decision" or "policy" (history/trail.py) or
    "schema" (the store's format)."""
    effect: NotRequired[str]
    """The damaged effect record's key (`what` "effect")."""
    problem: NotRequired[str]
    """How that record is damaged: missing, edited, not_in_history or unsealed
    (a decision's also unexplained: a state no recorded transition leads to)."""
    decision: NotRequired[int | None]
    """The damaged decision's id (`what` "decision"; history/trail.py)."""
    policy: NotRequired[int | None]
    """The damaged policy change's id (`what` "policy")."""


class EnvMismatchBlock(TypedDict):
    """The world moved since work that is kept read it."""

    kind: Literal["env_mismatch"]
    detail: str
    changes: list[EnvCheck]
    """Only the changed items that block (`environment.Comparison.blocking`)."""
    what: NotRequired[Literal["replay_diverged"]]
    """Set when the code of an open phase changed under the run and its replay
    asked for something other than what the old code saved (run/replay.py),
    or met a `ctx.deprecated_patch` on the old path (run/patches.py)."""
    phase: NotRequired[str]
    """(replay_diverged) The phase."""
    step: NotRequired[str]
    """(replay_diverged) The key of the call where the replay diverged."""
    saved: NotRequired[dict[str, str]]
    """(replay_diverged) The call the old code made there: `kind` and `name`."""
    asked: NotRequired[dict[str, str]]
    """(replay_diverged) The call the new code asked for: `kind` and `name`."""
    drop: NotRequired[list[str]]
    """(replay_diverged) The saved steps an approval drops."""
    patch: NotRequired[str]
    """(replay_diverged, a deprecated patch) The patch whose old path the run took."""


class InDoubtBlock(TypedDict):
    """An effect was started and never recorded done, and may not simply be called again."""

    kind: Literal["in_doubt_effect"]
    detail: str
    effect: str
    """The effect's key."""
    name: str
    phase: str
    reconcile: NotRequired[ReconcileAnswer]
    """What its reconcile hook said, when it has one (it could not say)."""


class BelowFloorBlock(TypedDict):
    """A phase cannot start: an output its floor needs is lost for good, or skipped."""

    kind: Literal["below_floor"]
    detail: str
    phase: str
    """The phase that cannot start."""
    lost: str
    """The phase whose output it needs."""


BlockedReason = IntegrityBlock | EnvMismatchBlock | InDoubtBlock | BelowFloorBlock
"""One reason a run is blocked (`BlockReason.as_dict`), told apart by `kind`:
`b["kind"] == "integrity"` narrows `b` to an `IntegrityBlock`. A stored kind
this engine does not know (a newer writer, damage) can still be read back:
a reader compares the kind, and treats one it does not know as just that
(`CauseKind.OTHER`)."""


class RunError(TypedDict):
    """How a run failed (`error_json`)."""

    phase: str
    type: str
    """The exception's class name."""
    message: str
    traceback: str
    """Its last frames."""
    attempts: NotRequired[list[dict[str, Any]]]
    """The phase's failed attempts before this one (`retry.Attempt.as_dict`)."""


class EffectRow(Protocol):
    """An effect record as a store row reads (`phasegate_effects`, its
    columns checked by `_rowcheck.check_all`): what the views and the
    in-doubt rule read. `reconcile_json` and `redo_on_rewind` are read with
    a default, so they are not claimed here."""

    key: str
    name: str
    phase: str
    state: Literal["intent", "done"]
    """As stored: intent until it is recorded done (in doubt is how a view sees an intent)."""
    attempt: int
    idempotent: bool
    atomic: bool
    retry_ok: bool
    """An operator allowed calling it again (`retry_effect`)."""
    intent_at: float
    done_at: float | None
    confirmed_by: int | None
    """The decision that confirmed it by hand, if one did."""
