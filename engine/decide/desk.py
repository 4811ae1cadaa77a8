"""Where a decision, a proposal and a message are taken in: one write
transaction each, on one run.

`Engine.decide`, `Engine.propose` and `Engine.send` are this module's front
door. Each locks the run's row, builds its view as it is inside that
transaction, fits what was asked to it (fit.py, through `batch.Options`) and
records it (recording.py, proposing.py, sending.py), so a decision is never
taken on a judgement made before the run moved. Applying it is the run's
next start's work (applying.py), but for a reset, applied at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..ids import validate_run_id
from ..oversight.identity import assistant_who, whoami
from ..store.store import Store
from ..views.models import RunView
from . import fit as _fit
from . import preview as _previews
from . import proposing as _proposing
from . import sending as _sending
from .batch import Options
from .gate import Oversight, ViewOf
from .recording import record


class Desk:
    """Takes in what people and assistants ask of one run.

    Args:
        store: The store.
        clock: The time, in UNIX seconds.
        view_of: Builds a run's view from its rows (`viewing.Viewer`).
        oversight: Claims, the policy and seconds (gate.py).
    """

    def __init__(self, store: Store, clock: Callable[[], float], view_of: ViewOf, oversight: Oversight) -> None:
        self._store = store
        self._clock = clock
        self._view = view_of
        self._oversight = oversight

    def decide(
        self, run_id: str, action: str, *, reason: str, operator: str | None, options: Options, override_claim: bool
    ) -> _fit.Decision:
        """`Engine.decide`: fitted, admitted by the policy and claims, recorded.

        Args:
            run_id: The run.
            action: The action's name.
            reason: Why, in the operator's words.
            operator: Who decides (None: `$PHASEGATE_OPERATOR`, else the login name).
            options: What the action needs; its `now` is set here.
            override_claim: Decide on a run someone else claimed.

        Returns:
            The decision as recorded.
        """
        validate_run_id(run_id)
        act = _fit.parse_action(action)
        _fit.check_reason(reason)
        who = whoami(operator)
        now = self._clock()
        opts = replace(options, now=now)
        with self._store.write() as conn:
            run = self._store.runs.need(conn, run_id, lock=True)
            view = self._view(conn, run, now, with_candidates=False)
            chosen = opts.fit(view, act)
            state, expires = self._oversight.admit(conn, view, act, chosen, who, now, override_claim=override_claim)
            (done,) = record(
                self._store,
                conn,
                [(run, view, chosen)],
                reason=str(reason),
                who=who,
                phase=options.phase,
                now=now,
                state=state,
                expires_at=expires,
            )
            return done

    def propose(self, run_id: str, action: str, *, reason: str, assistant: str, options: Options) -> _fit.Decision:
        """`Engine.propose`: fitted as `decide` fits it, recorded "proposed"
        under the assistant's identity whatever the policy says.

        Args:
            run_id: The run.
            action: The action's name.
            reason: Why, in the assistant's words.
            assistant: The assistant's operator name ("mcp:claude-ai").
            options: What the action needs (no force, no expected env).

        Returns:
            The decision as recorded, in state "proposed".
        """
        validate_run_id(run_id)
        act = _fit.parse_action(action)
        _fit.check_reason(reason)
        who = assistant_who(assistant)
        now = self._clock()
        opts = replace(options, force=False, expect_env=None, now=now)
        with self._store.write() as conn:
            run = self._store.runs.need(conn, run_id, lock=True)
            view = self._view(conn, run, now, with_candidates=False)
            return _proposing.propose(
                self._store,
                conn,
                run,
                view,
                opts.fit(view, act),
                who=who,
                reason=str(reason),
                phase=options.phase,
                now=now,
                one_at_a_time=self._oversight.one_proposal,
            )

    def preview(self, run: RunView | str, action: str, *, reason: str | None, options: Options) -> _previews.Preview:
        """`Engine.preview`: what a decision would do, refused as `decide` would refuse it.

        Args:
            run: The run's id, or its view already read.
            action: The action's name.
            reason: When given, checked as `decide` checks it.
            options: What the action needs; its `now` is set here.

        Returns:
            What the decision would do.
        """
        if isinstance(run, str):
            validate_run_id(run)
        act = _fit.parse_action(action)
        if reason is not None:
            _fit.check_reason(reason)
        now = self._clock()
        if isinstance(run, RunView):
            view = run
        else:
            with self._store.read() as conn:
                view = self._view(conn, self._store.runs.need(conn, run), now)
        return replace(options, now=now).preview(view, act, require_result=False)

    def send(self, run_id: str, topic: str, value: Any, *, reason: str, operator: str | None) -> _sending.Sent:
        """`Engine.send`: a message recorded for the run's `ctx.recv`.

        Args:
            run_id: The run.
            topic: The topic a phase receives it on.
            value: The message, JSON.
            reason: Why, in the sender's words.
            operator: Who sends it (None: `$PHASEGATE_OPERATOR`, else the login name).

        Returns:
            The message as recorded.
        """
        validate_run_id(run_id)
        if not isinstance(reason, str) or not reason.strip():
            raise UsageError("a message needs a reason: it is kept with it, as a decision's is")
        who = whoami(operator)
        now = self._clock()
        with self._store.write() as conn:
            run = self._store.runs.need(conn, run_id, lock=True)
            return _sending.send(self._store, conn, run, topic, value, reason=str(reason), who=who, now=now)
