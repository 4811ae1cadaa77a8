"""Who may decide what: claims on runs, the store's policy, and seconds.

A decision that fits a run (decide/fit.py) must also pass what people agreed
on: a run someone else claimed is theirs to decide unless overridden, and an
action the store's policy lists is only *proposed* until an operator of
another account seconds it. `Oversight.admit` is that one check, for a single
decision and for each run of a group (triage.py); `Oversight.second` applies a
proposal. The engine composes one of these; it knows no screen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .. import _json
from ..errors import AlreadyDecided, DecisionError, PhasegateError, SameOperator, UsageError
from ..history import trail
from ..ids import validate_run_id
from ..oversight import claims
from ..oversight import policy as _policy
from ..oversight.identity import Who, different_operators, same_person, whoami
from ..oversight.identity import shown as shown_who
from ..states import Action
from ..store.store import NewDecision, OwnRows, Store
from ..timefmt import iso
from ..views.build import decision_view
from ..views.models import ClaimView, DecisionView, RunView
from ..views.status import PROPOSED, shown_state
from . import fit as _fit
from .recording import carry, takes_effect_now


class ViewOf(Protocol):
    """The engine's one way to build a run's view from its rows (`viewing.Viewer`)."""

    def __call__(
        self,
        conn: Any,
        run: Any,
        now: float,
        *,
        with_candidates: bool = True,
        with_diffs: bool = True,
        own: OwnRows | None = None,
    ) -> RunView: ...


class Oversight:
    """Claims, the policy and seconds over one store."""

    def __init__(self, store: Store, clock: Callable[[], float], view_of: ViewOf, claim_seconds: float) -> None:
        self.store = store
        self.clock = clock
        self._view = view_of
        self.claim_seconds = claim_seconds

    def admit(
        self,
        conn: Any,
        view: RunView,
        act: Action,
        chosen: _fit.Fit,
        who: Who,
        now: float,
        *,
        override_claim: bool,
        rules: _policy.Policy | None = None,
    ) -> tuple[str, float | None]:
        """What a decision that fits must pass besides (the same for one run
        and for each run of a group): someone else's claim needs
        `override_claim`; an action the store's policy lists is only proposed,
        one proposal at a time. Returns the state to record it in, and a
        proposal's expiry."""
        claims.check(view.claim, who, view.run_id, override=override_claim, what=f"decide {act.value}")
        if rules is None:
            _policy.check_whole(self.store, conn)
            rules = _policy.current(self.store, conn)
        if rules.needs_second(act):
            self.one_proposal(conn, view, act, chosen.effect_key, now)
            return PROPOSED, now + rules.proposal_seconds
        return ("applied" if takes_effect_now(act, view) else "pending"), None

    def one_proposal(self, conn: Any, view: RunView, act: Action, effect: str | None, now: float) -> None:
        """One proposal of an action (of an effect) at a time: a second is
        refused while the first would still fit; one the run has moved past
        (an approval of values since replaced) is voided by the new one."""
        rows = {int(r.id): r for r in self.store.decisions.of_run(conn, view.run_id)}
        for d in view.proposals:
            if d.action != act.value or (effect is not None and d.effect != effect):
                continue
            if _proposal_fits(view, rows[d.id]):
                raise AlreadyDecided(
                    f"run {view.run_id!r} already has this proposed: {d.action} by {d.operator}"
                    f" (decision {d.id}), waiting for a second operator until {d.expires_at}"
                )
            self.store.decisions.settle(conn, d.id, "void", now)

    def second(
        self,
        run_id: str,
        decision_id: int,
        *,
        reason: str,
        operator: str | None = None,
        override_claim: bool = False,
    ) -> _fit.Decision:
        """Second a proposed decision: another operator (another OS account,
        `identity.different_operators`) agrees, and it takes effect as if it
        had just been recorded. It is checked again against the run as it is
        now (`fit` (decide/fit.py)); a proposal past its expiry, already seconded,
        or the proposer's own is refused and nothing is recorded. The second
        is kept as its own decision row ("second"), naming the proposal."""
        validate_run_id(run_id)
        _fit.check_reason(reason)
        who = whoami(operator)
        now = self.clock()
        with self.store.write() as conn:
            run = self.store.runs.need(conn, run_id, lock=True)
            rows = {int(d.id): d for d in self.store.decisions.of_run(conn, run_id)}
            prop = rows.get(int(decision_id))
            if prop is None:
                raise UsageError(f"run {run_id!r} has no decision {decision_id}")
            shown = shown_state(prop, now)
            if shown != PROPOSED:
                why = {"expired": f"it expired unseconded at {iso(prop.expires_at)}; propose it again"}.get(
                    shown, f"it is {shown}, not waiting for a second operator"
                )
                raise DecisionError(f"decision {decision_id} of run {run_id!r} cannot be seconded: {why}")
            if not trail.decision_vouched(prop, self.store.seal_key) or prop.action not in {a.value for a in Action}:
                raise DecisionError(
                    f"decision {decision_id} of run {run_id!r} cannot be seconded: its record does not match its seal"
                    " (phasegate verify says how)"
                )
            _policy.check_whole(self.store, conn)
            rules = _policy.current(self.store, conn)
            # "Another operator" as the policy in force says it (its web
            # account); the second records that policy, and verify checks it so.
            web = rules.web_account
            proposer = Who(str(prop.operator), str(prop.account or ""))
            if not different_operators(proposer, who, web_account=web):
                if proposer.assistant is not None or who.assistant is not None:
                    raise SameOperator(
                        f"decision {decision_id} was proposed by {shown_who(proposer)}; an AI assistant's proposal"
                        f" is seconded by a person, under a name that is not an assistant's (this is {shown_who(who)})"
                    )
                raise SameOperator(
                    f"decision {decision_id} was proposed by {shown_who(proposer)}; a second must come from another"
                    f" operator's account or web identity (this is {shown_who(who)}), whatever operator name is given"
                )
            view = self._view(conn, run, now, with_candidates=False)
            if view.claim is not None and not same_person(Who(view.claim.operator, view.claim.account), proposer):
                claims.check(view.claim, who, run_id, override=override_claim, what="second it")
            act = Action(prop.action)
            # Validated again as the run is now: the proposal may be a day old.
            _refit(view, prop)
            second_id = self.store.decisions.record(
                conn,
                NewDecision(
                    run_id=run_id,
                    action="second",
                    reason=str(reason),
                    operator=who.operator,
                    account=who.account,
                    at=now,
                    state="applied",
                    applied_at=now,
                    detail_json=_json.dumps({"decision": int(decision_id)}),
                    policy_id=rules.id,
                ),
            )
            state = "applied" if takes_effect_now(act, view) else "pending"
            self.store.decisions.seconded(conn, int(decision_id), second_id, state, now)
            carry(
                self.store,
                conn,
                [(run, view, act, int(decision_id))],
                f"{prop.operator}, seconded by {who.operator}",
                now,
                reason=str(prop.reason),
            )
        return _fit.Decision(
            int(decision_id), run_id, act, str(prop.operator), str(prop.reason), prop.phase, prop.effect_key, state
        )

    def claim(
        self, run_id: str, *, operator: str | None = None, release: bool = False, force: bool = False
    ) -> ClaimView | None:
        """Claim the run for the operator (or renew their claim), or with
        `release` give it up. Someone else's claim is taken over (or
        released) only with `force`; either way the old one stays in the
        audit. Returns the claim in force afterwards."""
        validate_run_id(run_id)
        who = whoami(operator)
        now = self.clock()
        with self.store.write() as conn:
            self.store.runs.need(conn, run_id, lock=True)
            return claims.claim(
                self.store, conn, run_id, who, now, seconds=self.claim_seconds, release=release, force=force
            )

    def claims(self, run_ids: Sequence[str] | None) -> dict[str, ClaimView]:
        """The claims in force on these runs, in one query (a page of the
        runs list; `None`: on every run, for the whole list)."""
        now = self.clock()
        with self.store.read() as conn:
            rows = self.store.claims.current(conn, None if run_ids is None else list(run_ids), now)
        return {rid: ClaimView.from_row(r) for rid, r in rows.items()}

    def proposals(self, run_ids: Sequence[str]) -> dict[str, list[DecisionView]]:
        """Proposals waiting for a second operator on these runs, in one query (a page of the runs list)."""
        now = self.clock()
        with self.store.read() as conn:
            rows = self.store.decisions.open_proposals(conn, list(run_ids), now)
        out: dict[str, list[DecisionView]] = {}
        for r in rows:
            out.setdefault(str(r.run_id), []).append(decision_view(r, now))
        return out

    def overridden_claim(self, view: RunView, act: Action, who: Who, *, override_claim: bool) -> ClaimView | None:
        """For a preview: the claim rule as `admit` applies it (someone
        else's claim refuses the decision without `override_claim`), and the
        claim the decision would override with it (None: nobody else's)."""
        claims.check(view.claim, who, view.run_id, override=override_claim, what=f"decide {act.value}")
        held = view.claim
        return held if held is not None and not same_person(Who(held.operator, held.account), who) else None

    def claimed_by_other(self, view: RunView, operator: str | None = None) -> bool:
        """Whether someone other than this operator claimed the run (a
        decision then needs `override_claim`)."""
        held = view.claim
        return held is not None and not same_person(Who(held.operator, held.account), whoami(operator))

    def secondable(self, view: RunView, operator: str | None = None, *, conn: Any = None) -> list[DecisionView]:
        """The proposals on the run this operator may second: those proposed
        from another account (`identity.different_operators`, the one rule).
        `conn`: a transaction the caller holds, to read the policy on (a
        screen's one read, `Engine.runs_page`); None reads it in one of its own."""
        if not view.proposals:
            return []
        rules = _policy.current(self.store, conn) if conn is not None else self.policy()
        me, web = whoami(operator), rules.web_account
        return [d for d in view.proposals if different_operators(Who(d.operator, d.account or ""), me, web_account=web)]

    def policy(self) -> _policy.Policy:
        with self.store.read() as conn:
            return _policy.current(self.store, conn)

    def policy_history(self, limit: int | None = 20, *, before: int | None = None) -> list[_policy.Policy]:
        """The policy's changes, newest first: at most `limit` (None: all),
        older than change `before` (a keyset page)."""
        with self.store.read() as conn:
            return _policy.history(self.store, conn, limit, before)

    def set_policy(
        self,
        *,
        reason: str,
        operator: str | None = None,
        require_second: str | None = None,
        proposal_seconds: float | None = None,
        web_account: str | None = None,
    ) -> _policy.Policy:
        """Change the store-wide policy (audited: who, account, when, why).
        `require_second`: comma-separated actions; "" clears the list."""
        acts = _policy.parse_actions(require_second) if require_second is not None else None
        who = whoami(operator)
        with self.store.write() as conn:
            return _policy.change(
                self.store,
                conn,
                who,
                self.clock(),
                reason=reason,
                require_second=acts,
                proposal_seconds=proposal_seconds,
                web_account=web_account,
            )


def _refit(view: RunView, row: Any) -> _fit.Fit:
    """`fit` (decide/fit.py) of a recorded proposal against the run as it is now:
    the same action, phase, effect and result, and for an approval the same
    changed values (its env hash)."""
    act = Action(row.action)
    detail = _json.loads(row.detail_json or "{}")
    answer = act is Action.ANSWER
    return _fit.fit(
        view,
        act,
        phase=row.phase,
        effect=row.effect_key,
        result=detail.get("result", _fit.NO_RESULT),
        question=f"{detail.get('phase')}/{detail.get('question')}" if answer else None,
        value=detail.get("value") if answer else _fit.NO_VALUE,
        expect_env=detail.get("env_hash") if act is Action.APPROVE else None,
        force=True,  # a stalled holder was the proposer's to weigh; its lease is revoked when it applies
    )


def _proposal_fits(view: RunView, row: Any) -> bool:
    try:
        _refit(view, row)
    except (PhasegateError, ValueError):  # ValueError: a damaged row naming no action
        return False
    return True
