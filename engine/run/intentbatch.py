"""An async phase's effect intents, committed together when they are ready together.

Twenty effects started by one `asyncio.gather` each asked for their intent
on the event loop, one commit (one fsync) after another, before any of their
functions could run. Here each asks, and the commit waits for the loop's
current round of ready tasks to ask too (`loop.call_soon`: it runs after
every callback already scheduled, so after every task the gather woke): one
transaction then carries every intent that was asked for
(`EffectLedger.try_begin_many`). Each effect's function still runs only after
its own intent is durable: a task learns its `Pending` only once the commit
that holds it has returned.

A task cancelled before the commit is left out of it (its effect is not
begun); one cancelled after it withdraws its intent (`EffectLedger.retract`),
as a thread's begin is withdrawn: its function will never be called.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .ledger import Intent, Pending, Saved

if TYPE_CHECKING:
    from .ledger import EffectLedger

_Waiting = tuple[Intent, "asyncio.Future[Pending | Saved | None]"]


class IntentBatch:
    """The intents an async phase's tasks asked for in this round of the loop.

    Args:
        ledger: The run's effect ledger.
    """

    def __init__(self, ledger: EffectLedger) -> None:
        self._ledger = ledger
        self._waiting: list[_Waiting] = []
        """Asked for, not yet committed, in the order asked."""

    async def begin(self, intent: Intent) -> Pending | Saved | None:
        """What `EffectLedger.begin` returns for `intent`, committed with the
        intents the other ready tasks ask for; None while another thread holds
        the ledger (the caller then begins in a thread, as before).

        Args:
            intent: The effect to begin.

        Returns:
            `Saved`, `Pending` once its intent is durable, or None.

        Raises:
            Stop: the effect is in doubt and nothing can say whether it happened.
            StoreError: the commit failed (the lease lost, the database).
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Pending | Saved | None] = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._commit)
        self._waiting.append((intent, fut))
        try:
            return await fut
        except asyncio.CancelledError:
            # Committed, then cancelled before this task could call its
            # function: the function will never run, so nobody is asked about it.
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                began = fut.result()
                if isinstance(began, Pending):
                    self._ledger.retract(began)
            raise

    def _commit(self) -> None:
        """(a loop callback) Every intent still wanted, in one commit; each task told its own outcome."""
        waiting, self._waiting = self._waiting, []
        wanted = [(intent, fut) for intent, fut in waiting if not fut.cancelled()]
        if not wanted:
            return
        try:
            got = self._ledger.try_begin_many([intent for intent, _ in wanted])
        except BaseException as exc:  # noqa: BLE001 - every task waiting hears of it, none hangs
            for _, fut in wanted:
                if not fut.done():
                    fut.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for i, (_, fut) in enumerate(wanted):
            if fut.done():
                continue  # cancelled meanwhile: never (cancelled before the commit ran)
            outcome = None if got is None else got[i]
            if isinstance(outcome, BaseException):
                fut.set_exception(outcome)
            else:
                fut.set_result(outcome)
