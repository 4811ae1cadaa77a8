"""One decision for a group of runs: every run checked first, all recorded
in one transaction or none.

Each run is asked the same question `decide` asks of one run
(`fit` (decide/fit.py), on its view as it is inside the recording transaction),
and each decision is written by the same `recording.record`. What a group
adds: a run that does not fit refuses the whole group (unless the operator
says to skip the unfit ones), and the decisions share one reason and one
batch id that the audit shows.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DecisionError, PhasegateError, RunNotFound, StoreError
from ..oversight.identity import Who
from ..states import Action
from ..store.store import OwnRows, Store
from ..views.models import ClaimView, RunView
from . import fit as _fit
from . import preview as _previews
from .causes import cause_id, reasons_of_view, signature, views
from .recording import Chosen, record


@dataclass(frozen=True)
class Unfit:
    """A run of the group the decision does not fit, and why (decide's own words)."""

    run_id: str
    """The run."""
    why: str
    """Why the decision does not fit it, in words."""
    options: tuple[str, ...] = ()
    """The options the refusal is about (`PhasegateError.options`)."""


@dataclass(frozen=True)
class Options:
    """What the operator gave beside the action: the same for every run."""

    phase: str | None = None
    effect: str | None = None
    result: Any = _fit.NO_RESULT
    force: bool = False
    expect_env: str | None = None
    question: str | None = None
    value: Any = _fit.NO_VALUE
    now: float | None = None
    """The time an answer's deadline is checked against (None: the clock's)."""

    def _given(self) -> dict[str, Any]:
        """The options as `fit.fit` and `preview.preview` take them."""
        return {
            "phase": self.phase,
            "effect": self.effect,
            "result": self.result,
            "force": self.force,
            "expect_env": self.expect_env,
            "question": self.question,
            "value": self.value,
            "now": self.now,
        }

    def fit(self, view: RunView, act: Action) -> _fit.Fit:
        chosen = _fit.fit(view, act, **self._given())
        _fit.require_result(act, self.result)
        return chosen

    def preview(self, view: RunView, act: Action, *, require_result: bool = True) -> _previews.Preview:
        """What the decision would do to this run (`require_result`: refuse a
        confirmation without its result, as recording it would)."""
        pv = _previews.preview(view, act, **self._given())
        if require_result:
            _fit.require_result(act, self.result)
        return pv


@dataclass(frozen=True)
class BatchResult:
    batch_id: str
    decided: tuple[_fit.Decision, ...]
    skipped: tuple[Unfit, ...]


@dataclass(frozen=True)
class PreviewLine:
    run_id: str
    preview: _previews.Preview | None
    unfit: str | None = None
    overrides: ClaimView | None = None
    """Someone else's claim the decision would override (`--force`)."""
    unfit_options: tuple[str, ...] = ()
    """The options the refusal (`unfit`) is about (`PhasegateError.options`)."""


class GroupRefused(DecisionError):
    """At least one run of the group does not fit: nothing was recorded."""

    title = "decision refused"

    def __init__(self, unfit: Sequence[Unfit], total: int, *, none_fit: bool = False) -> None:
        """The runs that do not fit, out of how many.

        Args:
            unfit: Each run the decision does not fit, and why.
            total: How many runs the group has.
            none_fit: The decision fits none of them (skipping those has nothing to record).
        """
        if none_fit:
            message = f"the decision fits none of the {total} run(s); nothing was recorded"
        else:
            message = f"{len(unfit)} of {total} run(s) do not fit; nothing was recorded"
        super().__init__(message, options=() if none_fit else ("skip_unfit",))
        self.unfit = tuple(unfit)
        """Each run the decision does not fit, and why (one line each on stderr)."""


ViewOf = Callable[[Any, Any, OwnRows | None], RunView]
"""A run's view from (connection, run row, its own rows or None to read them)."""


def _read(
    store: Store, conn: Any, run_ids: Sequence[str], view_of: ViewOf, *, lock: bool
) -> dict[str, tuple[Any, RunView] | PhasegateError]:
    """Each run's row (locked with `lock`) and view, read in bulk; a run that
    is absent or damaged gets the error `decide` would give it alone."""
    try:
        rows = store.runs.by_id(conn, run_ids, lock=lock)
    except StoreError:
        # A damaged row among them: read one by one, so the damage is its run's alone.
        rows = {}
        for rid in run_ids:
            try:
                one = store.runs.get(conn, rid, lock=lock)
            except StoreError:
                continue
            if one is not None:
                rows[rid] = one
    seen = views(store, conn, list(rows.values()), lambda run, own: view_of(conn, run, own))
    out: dict[str, tuple[Any, RunView] | PhasegateError] = {}
    for rid in run_ids:
        run = rows.get(rid)
        view = seen.get(rid)
        if run is None:
            out[rid] = RunNotFound(f"no run {rid!r}, or its record is damaged")
        elif isinstance(view, RunView):
            out[rid] = (run, view)
        else:
            out[rid] = view if view is not None else RunNotFound(f"no run {rid!r}")
    return out


def _check(view: RunView, act: Action, opts: Options, cause: str | None, ask: Callable[[RunView, Action], Any]) -> Any:
    """`ask` (fit or preview) of one run of the group, after checking it
    still has the group's cause: a run that stopped again for another
    reason since the operator looked is not decided blind."""
    if cause is not None and cause_id(signature(reasons_of_view(view))) != cause:
        raise DecisionError(f"run {view.run_id!r} no longer has cause {cause} (it stopped again, for another reason)")
    return ask(view, act)


Admit = Callable[[Any, RunView, _fit.Fit], tuple[str, "float | None"]]
"""The checks besides `fit` (a claim, the policy): the state to record a
decision in and a proposal's expiry, or the error that refuses it."""


def decide(
    store: Store,
    view_of: ViewOf,
    admit: Admit,
    run_ids: Sequence[str],
    act: Action,
    opts: Options,
    *,
    reason: str,
    who: Who,
    now: float,
    skip_unfit: bool = False,
    cause: str | None = None,
) -> BatchResult:
    """Check every run, then record every decision, in one write transaction.
    `cause`: the cause the runs were chosen by; a run whose cause changed is unfit."""
    fitting: list[Chosen] = []
    unfit: list[Unfit] = []
    states: set[tuple[str, float | None]] = set()
    ids = sorted(set(run_ids))  # two group decisions over the same runs lock them in one order
    with store.write() as conn:
        for rid, got in _read(store, conn, ids, view_of, lock=True).items():
            try:
                if isinstance(got, PhasegateError):
                    raise got
                run, view = got
                chosen = _check(view, act, opts, cause, opts.fit)
                states.add(admit(conn, view, chosen))
                fitting.append((run, view, chosen))
            except PhasegateError as exc:
                unfit.append(Unfit(rid, exc.message, exc.options))
        total = len(fitting) + len(unfit)
        if unfit and not skip_unfit:
            raise GroupRefused(unfit, total)
        if not fitting:
            raise GroupRefused(unfit, total, none_fit=True)
        # One action under one store-wide policy: every run gets the same state.
        ((state, expires),) = states
        batch_id = "b-" + secrets.token_hex(5)
        decided = record(
            store,
            conn,
            fitting,
            reason=reason,
            who=who,
            phase=opts.phase,
            now=now,
            state=state,
            expires_at=expires,
            batch_id=batch_id,
        )
    return BatchResult(batch_id, tuple(decided), tuple(unfit))


def preview(
    store: Store,
    view_of: ViewOf,
    run_ids: Sequence[str],
    act: Action,
    opts: Options,
    *,
    cause: str | None = None,
    check: Callable[[RunView], ClaimView | None] | None = None,
) -> list[PreviewLine]:
    """What the decision would do to each run (`preview.preview`), or why
    it would be refused (`check`: the claim rule, as `decide` applies it,
    returning the claim it would override); one read transaction, nothing
    recorded."""
    out: list[PreviewLine] = []
    with store.read() as conn:
        for rid, got in _read(store, conn, sorted(set(run_ids)), view_of, lock=False).items():
            try:
                if isinstance(got, PhasegateError):
                    raise got
                pv = _check(got[1], act, opts, cause, opts.preview)
                overrides = check(got[1]) if check is not None else None
                out.append(PreviewLine(rid, pv, overrides=overrides))
            except PhasegateError as exc:
                out.append(PreviewLine(rid, None, exc.message, unfit_options=exc.options))
    return out
