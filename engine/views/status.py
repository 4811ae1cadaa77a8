"""The effective-status rule: what a run's stored status means to an
operator now (a `running` row with no live holder is interrupted, or
stalled), which statuses need a person and the line that says why, how a
decision's state is shown (a lapsed proposal as "expired"), and how an
effect record is seen (done, in flight, or in doubt).

One rule, one function: the views, the causes, the engine's list and the
decision gate all ask these.
"""

from __future__ import annotations

from typing import Any

from ..run.lease import HolderState, holder_state
from ..run.ledger import needs_answer
from ..run.stopping import STOPPED_PREFIX
from ..shapes import EffectRow
from ..states import EffectState, RunStatus


def effective_status(row: Any, now: float) -> RunStatus:
    """Stored `running` with no live holder is what an operator calls
    interrupted; with a holder alive on this host past its lease, stalled."""
    status = RunStatus(row.status)
    if status is RunStatus.RUNNING:
        held = holder_state(row, now)
        if held is HolderState.STALLED:
            return RunStatus.STALLED
        if held is not HolderState.LIVE:
            return RunStatus.INTERRUPTED
    return status


NEEDS_ATTENTION = frozenset({RunStatus.BLOCKED, RunStatus.FAILED, RunStatus.INTERRUPTED, RunStatus.STALLED})

STALLED_TEXT = (
    "stalled: its process is alive on this host but past its lease (frozen or starved); wait for it, or resume --force"
)


def status_text(status: RunStatus, attention: str) -> str:
    """The one line that says why a run needs a person, by its effective status."""
    if status is RunStatus.INTERRUPTED:
        if attention.startswith(STOPPED_PREFIX):
            return f"interrupted: {attention}; resume it"
        return "interrupted: its process died; resume it"
    if status is RunStatus.STALLED:
        return STALLED_TEXT
    return attention


PROPOSED = "proposed"
"""The state of a decision that waits for a second operator (`phasegate policy`)."""
EXPIRED = "expired"
"""How a proposal nobody seconded in time is shown (it stays `proposed` in the store, inert)."""


def shown_state(decision: Any, now: float) -> str:
    """A decision's state as an operator sees it: a proposal past its expiry
    is "expired" (nothing seconds or applies it any more)."""
    expires = getattr(decision, "expires_at", None)
    if decision.state == PROPOSED and expires is not None and float(expires) <= now:
        return EXPIRED
    return str(decision.state)


def effect_state(effect: EffectRow, *, holder_alive: bool) -> EffectState:
    """How an operator sees an effect record: done; in flight while its
    holder lives (or when calling it again is safe); otherwise in doubt."""
    if effect.state == "done":
        return EffectState.DONE
    if holder_alive or not needs_answer(effect):
        return EffectState.INTENT
    return EffectState.IN_DOUBT
