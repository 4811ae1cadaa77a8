"""What a run's start will do, decided before it does anything.

`plan_start` is a pure function of what the start sequence has read: the
verified chain, the run's effects and saved steps, the operator's pending
decisions and the world as it is now. It answers with either the next
decision to carry out (the runner applies it, reads again and asks again,
so each decision is planned against the state the previous one left), or
the final word: why the run must stop, or which phases to run.

The order is the start sequence's: integrity, an operator's rewind, the
environment, effects in doubt, floors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..authoring.workflow import Phase, Workflow
from ..errors import UsageError
from ..history import chain, trail
from ..history.seals import EffectDamage
from ..outcome import BlockReason
from ..states import Action, BlockKind
from . import environment
from .ledger import in_doubt_reason, needs_answer


@dataclass(frozen=True)
class Pending:
    """An operator's decision recorded and not yet carried out."""

    id: int
    action: Action
    answers: BlockKind | None
    phase: str | None = None
    effect_key: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Any) -> Pending:
        return cls(
            id=int(row.id),
            action=Action(row.action),
            answers=BlockKind(row.answers) if row.answers else None,
            phase=row.phase,
            effect_key=row.effect_key,
            detail=_json.loads(row.detail_json or "{}"),
        )


# -- what the runner carries out ---------------------------------------------------


@dataclass(frozen=True)
class SetAside:
    """Stop trusting the chain from an integrity failure on: set the entries
    from `untrusted` aside and move the head back to the last trusted one."""

    untrusted: tuple[int, ...]
    trusted: tuple[chain.Entry, ...]
    decision: int | None
    """Settled with it (a degrade); None when a rewind answers the failure
    and is carried out next."""


@dataclass(frozen=True)
class Rewind:
    phase: str
    index: int
    reopen: tuple[str, ...]
    decision: int


@dataclass(frozen=True)
class Approve:
    probes: tuple[str, ...]
    codes: Mapping[str, Any]
    """Phase -> the code fingerprint now accepted for it."""
    decision: int


@dataclass(frozen=True)
class AcceptReplay:
    """An approval of a replay that diverged under changed code (replay.py):
    the phase goes on under the new code, the saved steps from the divergence
    on dropped."""

    phase: str
    drop: tuple[str, ...]
    """The step keys the old code saved from the divergence on."""
    code: str
    """The phase's code fingerprint now, which its kept records are accepted under."""
    decision: int


@dataclass(frozen=True)
class Degrade:
    skip: tuple[str, ...]
    decision: int


@dataclass(frozen=True)
class AnswerEffect:
    key: str
    action: Action
    """CONFIRM_EFFECT or RETRY_EFFECT."""
    result: Any
    decision: int
    reopen: Rewind | None = None
    """For a correction of a confirmed result: the phases that read the old
    result, re-opened with it (a rewind from the effect's phase)."""
    repair: bool = False
    """The answer also settles damage to the effect's record (seals.py)."""
    supersedes: tuple[int, ...] = ()
    """For a repair: the pending answers of the same effect decided before its
    record was damaged, settled void (the repair is the newer word on it)."""


@dataclass(frozen=True)
class Void:
    """A pending decision that no longer fits: settled void, with a note."""

    decision: int
    note: str


@dataclass(frozen=True)
class Refresh:
    """Probes that changed where no kept work read them: their new values
    are recorded in the chain (an env marker, no decision), so later starts
    compare against what the work from here on runs with."""

    rows: tuple[Mapping[str, Any], ...]
    decision: None = None


Application = SetAside | Rewind | Approve | AcceptReplay | Degrade | AnswerEffect | Void | Refresh


@dataclass(frozen=True)
class StartPlan:
    apply: Application | None = None
    """The next decision to carry out; the plan is asked again afterwards."""
    blocks: tuple[BlockReason, ...] = ()
    """Why the run must stop (when there is nothing left to apply)."""
    state: chain.Folded | None = None
    to_run: tuple[Phase, ...] = ()
    rederive: tuple[str, ...] = ()
    """Done phases whose lost output is re-derived by running them again."""
    recode: tuple[str, ...] = ()
    """Open phases whose saved durable steps older code wrote (recomputed)."""
    void: tuple[int, ...] = ()
    """Pending decisions nothing needs any more (settled void when the run goes on)."""
    env_rows: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class StartFacts:
    """What the start sequence read, for `plan_start`."""

    wf: Workflow
    verified: chain.Verified
    rows: Sequence[Any]
    """The live chain's rows as read (to name what an integrity failure sets aside)."""
    pending: Sequence[Pending]
    effects: Sequence[Any]
    effect_damage: Sequence[EffectDamage]
    """How the effect records differ from their verified history (seals.check)."""
    probes: Mapping[str, Any]
    now: float
    last_codes: Mapping[str, str | None]
    """Each phase's code fingerprint as the run's last start recorded it."""
    damaged_records: Callable[[set[str]], list[str]]
    """Saved step and effect results of these phases that no longer verify."""
    retrievable: Callable[[chain.Folded, str], bool]
    """Whether a done phase's output can be had (stored, or archived and intact)."""
    stepped: Collection[str] = frozenset()
    """Phases with saved durable steps."""
    trail_damage: Sequence[trail.Damage] = ()
    """How the run's decisions (and the policy they were made under) differ
    from their verified history (trail.check_decisions, trail.check_policy)."""


def trail_reason(d: trail.Damage) -> BlockReason:
    """The integrity block a damaged decision or policy change puts on a run."""
    return BlockReason(BlockKind.INTEGRITY, d.detail, {"what": d.kind, **d.as_dict()})


def plan_start(f: StartFacts) -> StartPlan:
    pending = list(f.pending)

    # 0. decisions are history too: when one was edited, deleted, inserted,
    # or is in a state no recorded transition explains, none is carried out
    # (the one that looks pending may be the forgery). A person's new
    # decision answers it (decide/recording.py settles the damaged ones void).
    if f.trail_damage:
        return StartPlan(blocks=tuple(trail_reason(d) for d in f.trail_damage))

    # 1. integrity: nothing after the first failure is trusted.
    if f.verified.failure is not None:
        fail = f.verified.failure
        dec = _pick(pending, answers=BlockKind.INTEGRITY)
        if dec is None:
            return StartPlan(blocks=(BlockReason(BlockKind.INTEGRITY, fail.detail(), {"failure": fail.as_dict()}),))
        if fail.what == "head":
            untrusted: tuple[int, ...] = ()
            trusted = tuple(f.verified.entries)
        else:
            untrusted = tuple(int(r.seq) for r in f.rows if int(r.seq) >= fail.seq)
            trusted = tuple(e for e in f.verified.entries if int(e.row.seq) < fail.seq)
        # A rewind answering the failure is carried out after it, as a rewind.
        return StartPlan(apply=SetAside(untrusted, trusted, None if dec.action is Action.REWIND else dec.id))
    state = chain.fold(f.verified.entries)

    # 1b. effect records are history too: one that was deleted, edited or
    # inserted stops the run before any phase could repeat its action. Only a
    # person's answer for that effect (confirm with its result, or retry)
    # settles it.
    if f.effect_damage:
        harmed: list[BlockReason] = []
        for dec in pending:
            if dec.detail.get("repair") and dec.effect_key:
                stale = tuple(d.id for d in pending if d.effect_key == dec.effect_key and d.id != dec.id)
                return StartPlan(
                    apply=AnswerEffect(
                        dec.effect_key, dec.action, dec.detail.get("result"), dec.id, repair=True, supersedes=stale
                    )
                )
        for dmg in f.effect_damage:
            harmed.append(BlockReason(BlockKind.INTEGRITY, dmg.detail, {"what": "effect", **dmg.as_dict()}))
        return StartPlan(blocks=tuple(harmed))

    # 1c. a corrected confirmation: the new result replaces the old, and the
    # phases that read the old one run again. No effect is called again: a
    # done effect returns its (corrected) result from the ledger.
    for dec in pending:
        if dec.detail.get("correction"):
            return StartPlan(apply=_correction(f, dec))

    # 2. an operator's rewind re-opens a phase and everything after it.
    rewind = _pick(pending, action=Action.REWIND)
    if rewind is not None:
        try:
            target = f.wf.get(rewind.phase or "")
        except KeyError:
            raise UsageError(f"rewind names phase {rewind.phase!r}, which this workflow does not have") from None
        reopen = tuple(p.name for p in f.wf.phases if p.index >= target.index)
        return StartPlan(apply=Rewind(target.name, target.index, reopen, rewind.id))

    # 2b. an approval of a replay that diverged under new code (replay.py):
    # only ever fitted to that block, and only for a phase the run still has open.
    for dec in pending:
        replay = dec.detail.get("replay")
        if dec.action is Action.APPROVE and isinstance(replay, Mapping):
            return StartPlan(apply=_accept_replay(f, state, dec, replay))

    blocks: list[BlockReason] = []
    to_run = _open(f.wf, state)

    # 3. the world may have moved.
    cmp = environment.compare(f.wf, state, f.probes, f.now, f.last_codes, kept=_kept(f, state, to_run))
    if cmp.changed and to_run:
        dec = _pick(pending, action=Action.APPROVE)
        if dec is not None:
            if _approval_covers(dec, cmp.blocking):
                codes = {r["probe"][5:]: r["current"] for r in cmp.blocking if r["probe"].startswith("code:")}
                return StartPlan(apply=Approve(tuple(r["probe"] for r in cmp.blocking), codes, dec.id))
            note = f"decision {dec.id} (approve) did not cover what changed since; asked again"
            return StartPlan(apply=Void(dec.id, note))
        blocks.append(
            BlockReason(BlockKind.ENV_MISMATCH, environment.describe(cmp.blocking), {"changes": cmp.blocking})
        )
    elif cmp.unread and to_run:
        return StartPlan(apply=Refresh(tuple(cmp.unread)))

    # 4. effects whose outcome nobody knows. One with a reconcile hook is
    # asked when its phase reaches it; it stops the run only if the hook
    # cannot say (ledger.py), unless a person answered it already.
    open_phases = {p.name for p in to_run}
    blocks.extend(
        BlockReason(BlockKind.INTEGRITY, f"saved result of {what} does not match its hash", {"what": "record"})
        for what in f.damaged_records(open_phases)
    )
    for eff in f.effects:
        if eff.phase not in open_phases or not needs_answer(eff):
            continue
        dec = _pick(pending, effect_key=eff.key)
        if dec is not None:
            return StartPlan(apply=AnswerEffect(eff.key, dec.action, dec.detail.get("result"), dec.id))
        if not getattr(eff, "reconcilable", False):
            blocks.append(in_doubt_reason(eff.key, eff.name, eff.phase))

    # 5. floors: re-derive what can be, degrade what may be, stop otherwise.
    floor_blocks, rederive = _plan_floors(f, state, to_run)
    if floor_blocks:
        dec = _pick(pending, answers=BlockKind.BELOW_FLOOR)
        if dec is not None and dec.action is Action.DEGRADE:
            return StartPlan(apply=Degrade(_skips(f.wf, state, floor_blocks), dec.id))
        blocks.extend(floor_blocks)

    if blocks:
        return StartPlan(blocks=tuple(blocks), env_rows=tuple(cmp.rows), notes=tuple(cmp.notes))
    notes = list(cmp.notes)
    recode = tuple(p.name for p in to_run if f.last_codes.get(p.name) is not None and not p.runs(f.last_codes[p.name]))
    if rederive:
        notes += [f"output of {name} was lost; re-deriving it from its own inputs" for name in rederive]
        state = dataclasses.replace(state, done={k: v for k, v in state.done.items() if k not in rederive})
    return StartPlan(
        state=state,
        to_run=tuple(_open(f.wf, state)),
        rederive=tuple(rederive),
        recode=recode,
        void=tuple(d.id for d in pending),
        env_rows=tuple(cmp.rows),
        notes=tuple(notes),
    )


def _correction(f: StartFacts, dec: Pending) -> Application:
    eff = next((e for e in f.effects if e.key == dec.effect_key), None)
    confirm = dec.action is Action.CONFIRM_EFFECT
    if eff is None or eff.state != "done" or (confirm and "result" not in dec.detail):
        return Void(dec.id, f"decision {dec.id} corrects effect {dec.effect_key}, which is not a confirmed effect now")
    try:
        target = f.wf.get(eff.phase)
    except KeyError:
        return Void(dec.id, f"decision {dec.id} corrects an effect of phase {eff.phase!r}, which this workflow lacks")
    reopen = tuple(p.name for p in f.wf.phases if p.index >= target.index)
    rewind = Rewind(target.name, target.index, reopen, dec.id)
    return AnswerEffect(eff.key, dec.action, dec.detail.get("result"), dec.id, reopen=rewind)


def _kept(f: StartFacts, state: chain.Folded, to_run: list[Phase]) -> set[str]:
    """Phases whose work is kept: done, or open with saved durable steps or
    effect records (done, or in doubt) that a resume would not redo."""
    open_names = {p.name for p in to_run}
    kept = set(state.done)
    kept |= {n for n in f.stepped if n in open_names}
    kept |= {e.phase for e in f.effects if e.phase in open_names and (e.state == "done" or needs_answer(e))}
    return kept


def _open(wf: Workflow, state: chain.Folded) -> list[Phase]:
    return [p for p in wf.phases if p.name not in state.done and p.name not in state.skipped]


def _plan_floors(f: StartFacts, state: chain.Folded, to_run: list[Phase]) -> tuple[list[BlockReason], list[str]]:
    blocks: list[BlockReason] = []
    rederive: list[str] = []
    will_run = {p.name for p in to_run}

    def derivable(name: str, seen: frozenset[str]) -> bool:
        if name in will_run or name in rederive or f.retrievable(state, name):
            return True
        if name in seen or name not in state.done:
            return False
        ph = f.wf.get(name)
        if ph.rederivable and all(derivable(n, seen | {name}) for n in ph.floor):
            rederive.append(name)
            return True
        return False

    for p in to_run:
        for n in p.floor:
            if n in state.skipped or not derivable(n, frozenset()):
                why = (
                    "skipped by an earlier degrade"
                    if n in state.skipped
                    else "lost and cannot be re-derived from its own inputs"
                )
                blocks.append(
                    BlockReason(
                        BlockKind.BELOW_FLOOR,
                        f"phase {p.name} cannot start: its floor needs the output of {n}, which is {why}",
                        {"phase": p.name, "lost": n},
                    )
                )
    rederive.sort(key=lambda n: f.wf.get(n).index)
    return blocks, rederive


def _skips(wf: Workflow, state: chain.Folded, blocks: list[BlockReason]) -> tuple[str, ...]:
    skip = {str(b.data["phase"]) for b in blocks}
    for p in wf.phases:
        if any(n in skip for n in p.floor) and p.name not in state.done:
            skip.add(p.name)
    return tuple(sorted(skip, key=lambda n: wf.get(n).index))


def _pick(
    pending: list[Pending],
    *,
    answers: BlockKind | None = None,
    action: Action | None = None,
    effect_key: str | None = None,
) -> Pending | None:
    for d in pending:
        if answers is not None and d.answers is not answers:
            continue
        if action is not None and d.action is not action:
            continue
        if effect_key is not None and d.effect_key != effect_key:
            continue
        return d
    return None


def _approval_covers(dec: Pending, blocking: list[dict[str, Any]]) -> bool:
    """An approval accepts the values the operator saw, not whatever the world
    turns into later: each current value must be the one approved."""
    accepted = {r["probe"]: r.get("current") for r in dec.detail.get("accepted", [])}
    return all(r["probe"] in accepted and accepted[r["probe"]] == r["current"] for r in blocking if r["probe"] != "age")


def _accept_replay(f: StartFacts, state: chain.Folded, dec: Pending, replay: Mapping[str, Any]) -> Application:
    name = replay.get("phase")
    drop = replay.get("drop")
    phases = {p.name: p for p in f.wf.phases}
    if not isinstance(name, str) or name not in phases or name in state.done or not isinstance(drop, list):
        return Void(dec.id, f"decision {dec.id} (approve) names a replay of a phase that is not open; asked again")
    return AcceptReplay(name, tuple(str(k) for k in drop), phases[name].code_hash, dec.id)
