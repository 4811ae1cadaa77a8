"""An AI assistant's proposal: the one thing `phasegate mcp` writes.

A decision an assistant asks for is recorded *proposed*, whatever the store's
policy lists: even an action the policy lets a person decide alone waits for
a person's second (`phasegate decide RUN second --decision N`, or the
console), and a second from the assistant's own identity is refused
(`identity.different_operators`). It is fitted to the run as a person's
decision is (`fit` (decide/fit.py)), one proposal of an action at a time
(`Oversight.admit`'s rule), and it changes nothing about the run until it is
seconded: not its lease, not its state (recording.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..oversight import policy as _policy
from ..oversight.identity import Who
from ..states import Action
from ..store.store import Store
from ..views.models import RunView
from ..views.status import PROPOSED
from .fit import Decision, Fit
from .recording import record


class OneAtATime(Protocol):
    """The gate's rule of one proposal of an action (of an effect) at a time (`Oversight`)."""

    def __call__(self, conn: Any, view: RunView, act: Action, effect: str | None, now: float) -> None: ...


def propose(
    store: Store,
    conn: Any,
    run: Any,
    view: RunView,
    chosen: Fit,
    *,
    who: Who,
    reason: str,
    phase: str | None,
    now: float,
    one_at_a_time: OneAtATime,
) -> Decision:
    """Record `chosen` as proposed by the assistant `who`, in the caller's write transaction.

    Args:
        store: The store.
        conn: The write transaction, holding the run's row locked.
        run: The run's row.
        view: Its view, read in this transaction.
        chosen: The decision `fit` accepted for it.
        who: The assistant (`identity.assistant_who`).
        reason: Why, in the assistant's words.
        phase: For a rewind: the phase to re-run from.
        now: The time it is recorded at (UNIX seconds).
        one_at_a_time: The gate's rule of one proposal at a time.

    Returns:
        The decision as recorded, in state "proposed".

    Raises:
        DecisionError: The policy's history is damaged.
        AlreadyDecided: The same action is proposed already and still fits.
    """
    _policy.check_whole(store, conn)
    rules = _policy.current(store, conn)
    one_at_a_time(conn, view, chosen.action, chosen.effect_key, now)
    (done,) = record(
        store,
        conn,
        [(run, view, chosen)],
        reason=reason,
        who=who,
        phase=phase,
        now=now,
        state=PROPOSED,
        expires_at=now + rules.proposal_seconds,
    )
    return done
