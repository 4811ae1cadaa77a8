"""Where a run's code chooses between an old path and a patched one:
`ctx.patched(ID)` and `ctx.deprecated_patch(ID)`.

A deploy lands under runs that wait in the middle of a phase. Their phase is
re-run from its start when they resume, its saved steps handed back by name;
a fix that changes what the phase does before the point where a run waits
would hand those results to code that never asked for them. A patch lets
both paths live side by side:

    if ctx.patched("charge-once"):
        ctx.effect("charge", charge_once)      # the new code
    else:
        ctx.effect("charge-v1", charge_legacy)  # what old runs did

The answer is decided the first time a run reaches the call, and recorded in
the run's step log as a durable step `@patch:ID` (phasegate's own key: an
author's names may not begin with "@"), so it never changes for that run:

- True when the run reaches the point for the first time under code that has
  the patch: every saved step and effect of the phase has been handed back to
  this execution already (the run is at its frontier, doing new work);
- False when the run's saved records show it went past that point under code
  without it: a saved step or effect of the phase that this execution has not
  reached yet was recorded after the point, by the old code.

A run's answer therefore depends only on what it had saved, which a replay
reads back unchanged: decided again after a kill, before the record commits,
it comes out the same.

`ctx.deprecated_patch(ID)` replaces the `if` once every run that took the old
path has ended (`phasegate status --patch ID` lists those still live): a run
that took the old path, or went past the point without the patch, is stopped
there for an operator (`env_mismatch`, `replay_diverged`) instead of being
handed results the new code never made. A run that comes this way for the
first time records the new path, as `patched` would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _json
from .._stop import Stop
from ..errors import UsageError
from ..ids import validate_name
from ..outcome import BlockReason
from ..states import BlockKind
from .replay import REPLAY_DIVERGED
from .stepcalls import StepCalls

if TYPE_CHECKING:
    from .steplog import StepLog

#: The step-log key a patch's answer is recorded under.
PATCH = "@patch:"


def patched(steps: StepLog, calls: StepCalls, patch_id: str) -> bool:
    """`ctx.patched`: whether this run takes the patched path (see the module's note).

    Args:
        steps: The run's durable-step log.
        calls: This phase execution's steps so far.
        patch_id: The patch's name.

    Returns:
        True for the new path, False for the old one; the same for a run every time.

    Raises:
        UsageError: a bad patch id, or a call from another thread or task.
        Interrupted: a stop was requested.
    """
    key = _key(calls, patch_id)
    found, value = steps.read(calls.phase, key)
    if found:
        if not isinstance(value, bool):
            raise _damaged(calls.phase, patch_id, value)
        calls.done(key)
        return value
    taken = not went_past(steps, calls, key)
    steps.save(calls.phase, key, _json.dumps(taken))
    calls.done(key)
    return taken


def deprecated_patch(steps: StepLog, calls: StepCalls, patch_id: str) -> None:
    """`ctx.deprecated_patch`: the patched path is now the only one.

    Args:
        steps: The run's durable-step log.
        calls: This phase execution's steps so far.
        patch_id: The patch's name, as `patched` was called with.

    Raises:
        Stop: this run took the old path (recorded, or shown by its saved records).
        UsageError: a bad patch id, or a call from another thread or task.
        Interrupted: a stop was requested.
    """
    key = _key(calls, patch_id)
    found, value = steps.read(calls.phase, key)
    if found and not isinstance(value, bool):
        raise _damaged(calls.phase, patch_id, value)
    if (found and value is False) or (not found and went_past(steps, calls, key)):
        raise Stop(
            BlockReason(
                BlockKind.ENV_MISMATCH,
                f"phase {calls.phase} took the old path of patch {patch_id!r}, which the code no longer has "
                "(ctx.deprecated_patch): rewind the phase to do it again under the new code, or reset the run",
                {"what": REPLAY_DIVERGED, "phase": calls.phase, "patch": patch_id, "changes": []},
            )
        )
    if not found:
        # Recorded as `patched` would: a replay of this run, once it saved what
        # follows, must still know it came this way.
        steps.save(calls.phase, key, _json.dumps(True))
    calls.done(key)


def went_past(steps: StepLog, calls: StepCalls, key: str) -> bool:
    """Whether the phase saved something this execution has not reached yet:
    a durable step (a question, a timer, another patch's answer) or an effect,
    recorded by an earlier execution after this point.

    Args:
        steps: The run's durable-step log.
        calls: This phase execution's steps so far.
        key: The patch's own key (not counted).

    Returns:
        True when the run was past this point before.
    """
    replayed = steps.replayed(calls.phase)
    if any(k != key and k not in replayed for k in steps.saved(calls.phase)):
        return True
    seen = calls.effects_seen()
    return any(e.name not in seen for e in steps.effects_of(calls.phase))


def _key(calls: StepCalls, patch_id: str) -> str:
    calls.check_stop()
    validate_name("patch", patch_id)
    if calls.here() != calls.home:
        # Which saved records this execution has reached is only known in the
        # phase's own order: from another thread or task the answer would
        # depend on the scheduler.
        raise UsageError(
            f"patch {patch_id!r}: call ctx.patched from the phase's own thread or task, not from concurrent work"
        )
    return PATCH + patch_id


def _damaged(phase: str, patch_id: str, value: object) -> Stop:
    return Stop(
        BlockReason(
            BlockKind.INTEGRITY,
            f"the saved answer of patch {patch_id!r} in phase {phase} is not true or false ({_json.dumps(value)[:80]})",
            {"what": "record"},
        )
    )
