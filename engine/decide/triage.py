"""Many runs at once: the causes that stopped them, and one decision for a group.

`causes.py` groups the runs that need a person by why they stopped;
`batch.py` checks and records one decision for many runs in one transaction.
This is the engine's part that ties them to the store, the run views and the
same claim and policy checks a single decision passes (`Oversight.admit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import CauseNotFound, UsageError
from ..ids import validate_run_id
from ..oversight import policy as _policy
from ..oversight.identity import whoami
from ..states import Action
from ..store.store import OwnRows, Store
from ..views.models import ClaimView, RunView
from . import batch as _batch
from . import causes as _causes
from . import fit as _fit
from .gate import Oversight, ViewOf


class Triage:
    """Causes and group decisions over one store."""

    def __init__(self, store: Store, clock: Callable[[], float], view_of: ViewOf, oversight: Oversight) -> None:
        self.store = store
        self.clock = clock
        self._view = view_of
        self._oversight = oversight

    def causes(self, *, with_actions: bool = True) -> list[_causes.Cause]:
        """The runs that need a person, grouped by why (causes.py), largest
        group first; each with the decisions that fit all of its runs (one
        view per run: `with_actions=False` skips them when only the runs matter)."""
        now = self.clock()
        with self.store.read() as conn:

            def view_of(run: Any, own: OwnRows | None) -> RunView:
                return self._view(conn, run, now, with_candidates=False, with_diffs=False, own=own)

            return _causes.collect(self.store, conn, now, view_of if with_actions else None)

    def cause(self, cause_id: str, *, with_actions: bool = False) -> _causes.Cause:
        """One cause by its id, as `causes` lists it now."""
        if not _causes.is_cause_id(cause_id):
            raise CauseNotFound(
                f"{cause_id!r} is not a cause id (c- and ten hex digits; `phasegate status --by-cause` lists them)"
            )
        for c in self.causes(with_actions=with_actions):
            if c.cause == cause_id:
                return c
        raise CauseNotFound(
            f"no cause {cause_id} among the runs that need attention now"
            " (decided already? `phasegate status --by-cause` lists the causes)"
        )

    def group(
        self, run_ids: Sequence[str], action: str, reason: str | None, cause: str | None
    ) -> tuple[Action, list[str]]:
        """A group decision's arguments checked as `decide` checks one run's,
        then its runs: those named (each must still have `cause`, if given),
        or without any named, every run of `cause` as it is now."""
        act = _fit.parse_action(action)
        if reason is not None:
            _fit.check_reason(reason)
        for rid in run_ids:
            validate_run_id(rid)
        if cause is not None and not run_ids:
            return act, list(self.cause(cause).runs)
        if cause is not None and not _causes.is_cause_id(cause):
            raise CauseNotFound(f"{cause!r} is not a cause id (c- and ten hex digits)")
        if not run_ids:
            raise UsageError("name the runs to decide, or a cause")
        return act, list(run_ids)

    def decide_many(
        self,
        run_ids: Sequence[str],
        action: str,
        *,
        reason: str,
        operator: str | None = None,
        cause: str | None = None,
        skip_unfit: bool = False,
        phase: str | None = None,
        effect: str | None = None,
        result: Any = _fit.NO_RESULT,
        force: bool = False,
        expect_env: str | None = None,
        override_claim: bool = False,
        question: str | None = None,
        value: Any = _fit.NO_VALUE,
    ) -> _batch.BatchResult:
        """One decision for many runs (`run_ids`, or every run of `cause`;
        both: those runs, each refused unless it still has that cause):
        each run checked as `decide` checks it, then all recorded in one
        transaction with one reason and a shared batch id. A run that does
        not fit refuses the whole group (`GroupRefused`, nothing recorded)
        unless `skip_unfit`; a run of `cause` that stopped again for another
        reason since does not fit, nor one someone else claimed (without
        `override_claim`). An action the policy lists is proposed for each run.
        An answer (`question`, `value`) is checked against each run's own question."""
        act, runs = self.group(run_ids, action, reason, cause)
        who = whoami(operator)
        now = self.clock()
        opts = _batch.Options(phase, effect, result, force, expect_env, question, value, now)

        def view_of(conn: Any, run: Any, own: OwnRows | None) -> RunView:
            return self._view(conn, run, now, with_candidates=False, own=own)

        rules: list[_policy.Policy] = []

        def admit(conn: Any, view: RunView, chosen: _fit.Fit) -> tuple[str, float | None]:
            # The policy is read once for the group, in its transaction: one rule for every run.
            if not rules:
                _policy.check_whole(self.store, conn)
                rules.append(_policy.current(self.store, conn))
            return self._oversight.admit(
                conn, view, act, chosen, who, now, override_claim=override_claim, rules=rules[0]
            )

        return _batch.decide(
            self.store,
            view_of,
            admit,
            runs,
            act,
            opts,
            reason=str(reason),
            who=who,
            now=now,
            skip_unfit=skip_unfit,
            cause=cause,
        )

    def preview_many(
        self,
        run_ids: Sequence[str],
        action: str,
        *,
        reason: str | None = None,
        cause: str | None = None,
        phase: str | None = None,
        effect: str | None = None,
        result: Any = _fit.NO_RESULT,
        force: bool = False,
        expect_env: str | None = None,
        operator: str | None = None,
        override_claim: bool = False,
        question: str | None = None,
        value: Any = _fit.NO_VALUE,
    ) -> list[_batch.PreviewLine]:
        """What `decide_many` would do to each run, or why it would refuse it
        (a run someone else claimed included)."""
        act, runs = self.group(run_ids, action, reason, cause)
        now = self.clock()
        who = whoami(operator)
        opts = _batch.Options(phase, effect, result, force, expect_env, question, value, now)

        def view_of(conn: Any, run: Any, own: OwnRows | None) -> RunView:
            return self._view(conn, run, now, with_candidates=False, own=own)

        def check(view: RunView) -> ClaimView | None:
            return self._oversight.overridden_claim(view, act, who, override_claim=override_claim)

        return _batch.preview(self.store, view_of, runs, act, opts, cause=cause, check=check)
