"""Where an effect is recorded: the run's effect ledger.

An effect is an action on the outside world that must not happen twice. Its
intent is committed (fsync) before its function is called, fenced by the
run's lease, so a resume can tell done from in doubt. Its completion is
committed after the call, with the run's next transaction or on a short timer
(completions.py: one fsync per effect, and what that does to the in-doubt
window). An atomic effect and its record commit in one transaction instead
(atomiceffect.py); an in-doubt effect with a reconcile hook asks the outside
system before it asks an operator (reconciling.py).

`needs_answer` is the one rule for "is this effect in doubt": the start
sequence, `decide`, the views and the console all ask it. The record itself
(its key, columns and states) is effectrecord.py's; this module is the
protocol around it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .. import _json
from .._pause import pause_point
from .._stop import Stop, damaged, read_saved
from ..authoring.reconcile import Reconciled
from ..errors import StoreError
from ..history import seals
from ..observe import hooks
from ..outcome import BlockReason
from ..states import Action, BlockKind
from . import atomiceffect, reconciling
from . import effectrecord as record
from .completions import Completions
from .effectcall import call_effect
from .effectrecord import EffectRecord, effect_key
from .lease import Fence

if TYPE_CHECKING:  # the store's module loads SQLAlchemy: the views import this module without it
    from ..store.store import Store


def needs_answer(effect: Any) -> bool:
    """An effect that was started, never recorded done, and whose target
    cannot simply be called again: once its process is gone, only an operator
    (or the outside system) can say whether it happened."""
    return effect.state == "intent" and not (effect.idempotent or effect.atomic or effect.retry_ok)


def in_doubt_reason(key: str, name: str, phase: str, asked: Reconciled | None = None) -> BlockReason:
    data: dict[str, Any] = {"effect": key, "name": name, "phase": phase}
    said = ""
    if asked is not None:
        data["reconcile"] = asked.as_dict()
        said = f"; its reconcile hook could not say ({asked.why})"
    return BlockReason(
        BlockKind.IN_DOUBT_EFFECT,
        f"effect {name} in phase {phase} (key {key}) was started and never recorded done: did it happen?{said}",
        data,
    )


@dataclass(frozen=True, slots=True)
class Saved:
    """An effect that needs no call: done before (or said done by its reconcile hook)."""

    value: Any
    """Its result, as a resume reads it."""


@dataclass(frozen=True, slots=True)
class Intent:
    """An effect to begin without a reconcile hook (`EffectLedger.try_begin_many`)."""

    phase: str
    """The phase the effect belongs to."""
    name: str
    """The effect's name, unique in its phase."""
    idempotent: bool
    """The target deduplicates by key."""
    redo_on_rewind: bool = False
    """A rewind or reset gives the effect a new key."""


@dataclass(frozen=True, slots=True)
class Pending:
    """An effect whose intent is durable: its function is to be called now, with `key`."""

    key: str
    """The idempotency key the function is called with."""
    attempt: int
    """Which call of the effect this is (a retry allowed by an operator is the second)."""
    record: EffectRecord
    """The intent as written."""


class EffectLedger:
    """A run's effects: read once per start, written as each one happens.
    Every write re-seals the record (seals.py), and a new record is linked
    after the run's last one, so the start sequence can verify the ledger."""

    def __init__(
        self, store: Store, fence: Fence, clock: Callable[[], float], completions: Completions | None = None
    ) -> None:
        self.store = store
        """The store the records are written to."""
        self.fence = fence
        """The run's lease: every write checks it."""
        self.clock = clock
        """The time, in UNIX seconds."""
        self.completions = completions if completions is not None else Completions(store, fence)
        """Completions not yet committed; every hot transaction of the run carries them."""
        self.effects: dict[str, EffectRecord] = {}
        """The run's effect records by key, as last read or written."""
        self.head: str | None = None
        """The key of the run's last effect record (the run row's `effects_last`)."""
        self.count = 0
        """How many records the run has written (the run row's `effects_count`)."""
        self._lock = threading.RLock()
        """Held while a record is written: each links after the run's last one."""
        self.generations: dict[str, str] = {}
        """Phase -> the key epoch of its `redo_on_rewind` effects ("epoch.rewinds"),
        for phases re-opened by a rewind or a reset; set by the runner."""

    def load(self) -> None:
        # A completion still waiting would read back as an intent: in doubt.
        self.completions.flush()
        with self.store.read() as conn:
            self._read(conn)

    def _read(self, conn: Any) -> None:
        self.effects = {e.key: record.record_of(e) for e in self.store.effects.of_run(conn, self.fence.run_id)}
        run = self.store.runs.get(conn, self.fence.run_id)
        self.head = run.effects_last if run is not None else None
        self.count = int(run.effects_count or 0) if run is not None else 0

    def reload(self, key: str, conn: Any) -> None:
        row = self.store.effects.by_key(conn, key)
        if row is not None:
            self.effects[key] = record.record_of(row)

    def damage(self) -> list[seals.EffectDamage]:
        """How the run's effect records differ from their verified history."""
        return seals.check(self.effects.values(), self.head, self.count, self.store.seal_key)

    def unanswered(self, phases: Iterable[str]) -> list[Any]:
        """Effects of these phases that need an answer before the phase may run again."""
        wanted = set(phases)
        return [e for e in self.effects.values() if e.phase in wanted and needs_answer(e)]

    def damaged(self, phases: Iterable[str]) -> list[str]:
        """Completed effects of these phases whose saved result no longer matches its hash."""
        wanted = set(phases)
        return [
            f"effect {e.name!r} of {e.phase}"
            for e in self.effects.values()
            if e.state == "done" and e.phase in wanted and damaged(e.result_json, e.result_hash)
        ]

    # -- recording --------------------------------------------------------------

    def perform(
        self,
        phase: str,
        name: str,
        fn: Callable[..., Any],
        *,
        idempotent: bool,
        atomic: bool,
        reconcile: Callable[[str], Any] | None = None,
        reconcile_timeout: float = 30.0,
        redo_on_rewind: bool = False,
    ) -> Any:
        """Do the effect once: return its saved result when it is done; when
        it is in doubt, ask its reconcile hook or stop; otherwise record the
        intent, call `fn`, record the completion.

        Args:
            phase: the phase the effect belongs to.
            name: the effect's name, unique in its phase.
            fn: the action, called as `fn(key)` (see effectcall.py for the shapes it may take).
            idempotent: the target deduplicates by key.
            atomic: call `fn(key, session)` inside the transaction that records it.
            reconcile: asked whether an in-doubt effect happened.
            reconcile_timeout: seconds the reconcile hook may take.
            redo_on_rewind: a rewind or reset gives the effect a new key.

        Returns:
            The effect's result as a resume would read it back.

        Raises:
            Stop: the effect is in doubt and nothing can say whether it happened.
        """
        if atomic:
            return self._atomic(phase, name, fn, idempotent=idempotent)
        began = self.begin(
            phase,
            name,
            idempotent=idempotent,
            reconcile=reconcile,
            reconcile_timeout=reconcile_timeout,
            redo_on_rewind=redo_on_rewind,
        )
        if not isinstance(began, Pending):
            return began.value
        return self.finish(began, self.call(fn, began))

    def begin(
        self,
        phase: str,
        name: str,
        *,
        idempotent: bool,
        reconcile: Callable[[str], Any] | None = None,
        reconcile_timeout: float = 30.0,
        redo_on_rewind: bool = False,
    ) -> Pending | Saved:
        """The first half of an effect: what it returned already, or its intent committed.

        Serialised with the run's other records (`_lock`): each new record is
        linked after the run's last one, so concurrent effects (threads, or
        `asyncio.gather` in an async phase) still form one verified history.
        The function is then called outside the lock, by the caller.

        Args:
            phase: the phase the effect belongs to.
            name: the effect's name, unique in its phase.
            idempotent: the target deduplicates by key.
            reconcile: asked whether an in-doubt effect happened.
            reconcile_timeout: seconds the reconcile hook may take.
            redo_on_rewind: a rewind or reset gives the effect a new key.

        Returns:
            `Saved` with the result a done (or reconciled) effect returned, or
            `Pending` once the intent is durable and the fence checked again:
            the caller calls the function with `Pending.key`, then `finish`.

        Raises:
            Stop: the effect is in doubt and nothing can say whether it happened.
        """
        key = self._key(phase, name, redo_on_rewind)
        with self._lock:
            row = self.effects.get(key)
            saved = self._saved(row, name)
            if saved is not None:
                return saved
            in_doubt = row is not None and not (idempotent or row.atomic or row.retry_ok)
            if in_doubt and reconcile is None:
                raise Stop(in_doubt_reason(key, name, phase))
        if in_doubt:
            # Asked outside the lock: a hook may take its whole timeout, and
            # the run's other effects (its threads; the event loop recording a
            # completion) must not wait for it. Only this call touches this
            # key (an effect's name is used once in a phase).
            assert row is not None and reconcile is not None
            got = reconciling.reconcile(self, row, reconcile, reconcile_timeout)
            if got.answer == "done":
                return Saved(_json.loads(_json.dumps(got.result)))
            if got.answer == "unknown":
                raise Stop(in_doubt_reason(key, name, phase, got))
        with self._lock:
            if in_doubt:
                row = self.effects[key]  # not done: allowed to call again, below
            rec = self._record_intent(
                row, phase, name, key, idempotent=idempotent, reconcile=reconcile, redo_on_rewind=redo_on_rewind
            )
        pause_point("after-intent", name)
        # A process frozen since its intent committed must not call fn now:
        # its lease may have lapsed, been revoked, or been taken over (a read,
        # unless the intent's own fenced commit is that fresh: Fence.ensure).
        self.fence.ensure()
        return Pending(key, int(rec["attempt"]), rec)

    def try_begin(
        self,
        phase: str,
        name: str,
        *,
        idempotent: bool,
        reconcile: Callable[[str], Any] | None = None,
        reconcile_timeout: float = 30.0,
        redo_on_rewind: bool = False,
    ) -> Pending | Saved | None:
        """`begin`, for a caller that must not wait (an event loop's thread):
        None at once while another thread holds the ledger, whose reconcile
        hook or atomic effect may take seconds; the caller then begins in a
        thread of its own.

        Args:
            phase: as `begin`.
            name: as `begin`.
            idempotent: as `begin`.
            reconcile: as `begin`.
            reconcile_timeout: as `begin`.
            redo_on_rewind: as `begin`.

        Returns:
            What `begin` returns, or None while the ledger is busy.

        Raises:
            Stop: as `begin`.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self.begin(
                phase,
                name,
                idempotent=idempotent,
                reconcile=reconcile,
                reconcile_timeout=reconcile_timeout,
                redo_on_rewind=redo_on_rewind,
            )
        finally:
            self._lock.release()

    def try_begin_many(self, wanted: list[Intent]) -> list[Pending | Saved | BaseException] | None:
        """`begin` of several effects ready at once (an async phase's
        `asyncio.gather`), their intents in one commit: each effect's intent
        is durable before its function is called, as with `begin`, and the
        twenty intents of a fan-out cost one fsync instead of twenty. For a
        caller that must not wait (the event loop's thread), as `try_begin`.

        Args:
            wanted: The effects, in the order their calls were made (the order they are linked in).

        Returns:
            For each effect, what `begin` would return, or the `Stop` it would
            raise (an effect in doubt: the others go on); an error of the
            commit itself is every written effect's. None at once while
            another thread holds the ledger.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._begin_many(wanted)
        finally:
            self._lock.release()

    def _begin_many(self, wanted: list[Intent]) -> list[Pending | Saved | BaseException]:
        """(under `_lock`) `try_begin_many`."""
        out: list[Pending | Saved | BaseException | None] = []
        todo: list[tuple[int, EffectRecord | None, Intent, str]] = []
        for i, w in enumerate(wanted):
            key = self._key(w.phase, w.name, w.redo_on_rewind)
            row = self.effects.get(key)
            try:
                saved = self._saved(row, w.name)
            except Stop as exc:
                out.append(exc)
                continue
            if saved is not None:
                out.append(saved)
            elif row is not None and not (w.idempotent or row.atomic or row.retry_ok):
                out.append(Stop(in_doubt_reason(key, w.name, w.phase)))
            else:
                out.append(None)
                todo.append((i, row, w, key))
        if todo:
            try:
                recs = self._commit_intents(
                    [(row, w.phase, w.name, key, w.idempotent, False, w.redo_on_rewind) for _, row, w, key in todo]
                )
                for _, _, w, _ in todo:
                    pause_point("after-intent", w.name)
                # As `begin`: a process frozen since the commit must not call the functions now.
                self.fence.ensure()
            except (Exception, Stop) as exc:  # noqa: BLE001 - the commit's error is each written effect's own
                for i, _, _, _ in todo:
                    out[i] = exc
            else:
                for (i, _, _, key), rec in zip(todo, recs, strict=True):
                    out[i] = Pending(key, int(rec["attempt"]), rec)
        assert all(x is not None for x in out)  # every effect written, saved or refused above
        return cast("list[Pending | Saved | BaseException]", out)

    def _key(self, phase: str, name: str, redo_on_rewind: bool) -> str:
        """The effect's key: its run, phase and name, and the phase's key epoch for `redo_on_rewind`."""
        key = effect_key(self.fence.run_id, phase, name)
        if redo_on_rewind and self.generations.get(phase):
            key = f"{key}@{self.generations[phase]}"
        return key

    def _saved(self, row: EffectRecord | None, name: str) -> Saved | None:
        """(under `_lock`) What a done effect returned, or None when it is not done.

        Raises:
            Stop: its saved result is damaged.
        """
        if row is not None and row.state == "done":
            return Saved(read_saved(row.result_json, row.result_hash, f"effect {name!r}"))
        return None

    def _record_intent(
        self,
        row: EffectRecord | None,
        phase: str,
        name: str,
        key: str,
        *,
        idempotent: bool,
        reconcile: Callable[[str], Any] | None,
        redo_on_rewind: bool,
    ) -> EffectRecord:
        """(under `_lock`) Commit the intent, new or a re-intent of an allowed retry."""
        return self._commit_intents([(row, phase, name, key, idempotent, reconcile is not None, redo_on_rewind)])[0]

    def _commit_intents(
        self, wanted: list[tuple[EffectRecord | None, str, str, str, bool, bool, bool]]
    ) -> list[EffectRecord]:
        """(under `_lock`) Commit these intents in one transaction, each new
        one linked after the one before it (row, phase, name, key,
        idempotent, reconcilable, redo_on_rewind each; row None: a new
        record, else a re-intent of an allowed retry)."""
        now = self.clock()
        head, recs = self.head, []
        for row, phase, name, key, idempotent, reconcilable, redo_on_rewind in wanted:
            if row is None:
                rec = record.new_intent(
                    self.fence.run_id,
                    phase,
                    name,
                    key,
                    now,
                    head,
                    idempotent=bool(idempotent),
                    reconcilable=reconcilable,
                    redo_on_rewind=bool(redo_on_rewind),
                )
                head = key
            else:
                rec = EffectRecord(row)
                rec.update(
                    attempt=int(row.attempt) + 1,
                    retry_ok=False,
                    intent_at=now,
                    idempotent=bool(idempotent),
                    reconcilable=reconcilable,
                )
            seals.sealed(rec, self.store.seal_key)
            recs.append(rec)
        began = self.fence.stamp()
        # The intents are durable (synchronous=FULL commit) before any fn
        # runs; the completions of the effects before them, if still
        # waiting, commit with them.
        try:
            with self.completions.hot_tx() as tx:
                fenced = False
                for (row, *_), rec in zip(wanted, recs, strict=True):
                    if row is None:
                        tx.run("intent", record.intent_params(rec))
                        # Fenced: the run row's write is the lease check (no extra read).
                        n = tx.run(
                            "effects_head",
                            {"run_id": rec.run_id, "key": rec.key, "owner": self.fence.owner, "now": self.clock()},
                        )
                        self.fence.check_rows(n)
                        fenced = True
                    else:
                        tx.run("reintent", record.reintent_params(rec))
                if not fenced:
                    self.fence.check_hot(tx)
        except StoreError:
            for row, _, name, key, *_ in wanted:
                self._check_foreign(row, key, name)
            raise
        self.fence.verified(began)
        for (row, *_), rec in zip(wanted, recs, strict=True):
            self.remember(rec, new=row is None)
        return recs

    def call(self, fn: Callable[..., Any], pending: Pending) -> Any:
        """Call an effect's function for its intent, with what it asks for (effectcall.py).

        Args:
            fn: the effect's function.
            pending: what `begin` returned.

        Returns:
            What `fn` returned (a coroutine, for an `async def` function: the caller awaits it).
        """
        return hooks.OBSERVER.effect_call(
            self.fence.run_id,
            pending.record.phase,
            pending.key,
            lambda: call_effect(fn, pending.key, fence=self.fence, attempt=pending.attempt),
        )

    def finish(self, pending: Pending, result: Any) -> Any:
        """The second half of an effect: its completion, to commit with the run's next transaction.

        Args:
            pending: what `begin` returned.
            result: what the effect's function returned (JSON-serialisable).

        Returns:
            The result as a resume would read it back.

        Raises:
            UsageError: the result cannot be stored as JSON (the effect stays an
                intent: it did happen, and a resume will say so as in doubt).
        """
        encoded = _json.encode(result)
        done = EffectRecord(
            pending.record,
            state="done",
            done_at=self.clock(),
            result_json=encoded.text,
            result_hash=_json.sha256(encoded.data),
        )
        seals.sealed(done, self.store.seal_key)
        with self._lock:
            self.effects[pending.key] = done
        # Committed with the run's next transaction, or by the timer (completions.py).
        self.completions.add(done)
        hooks.OBSERVER.effect(done.run_id, done.phase, done.key, "done", done.intent_at)
        # The phase gets a copy as a resume would read it: the one parsed
        # while encoding, or a parse as encode wrote it (`_json.loads_canonical`).
        if encoded.parsed is not _json.MISSING:
            return encoded.parsed
        return _json.loads_canonical(encoded.data, encoded.by_orjson)

    def retract(self, pending: Pending) -> None:
        """An intent whose function provably did nothing (it returned an
        un-awaited coroutine): allowed to be called again, so that no
        operator is ever asked about an action that was never attempted."""
        with self._lock:
            if self.effects.get(pending.key) is not pending.record:
                return  # a later call of the effect wrote its own intent since: not this one's to withdraw
            rec = EffectRecord(self.effects[pending.key], retry_ok=True)
            seals.sealed(rec, self.store.seal_key)
            with self.completions.hot_tx() as tx:
                tx.run("retract", {"key": pending.key, "retry_ok": True, "seal": rec.seal})
                self.fence.check_hot(tx)
            self.effects[pending.key] = rec

    def _atomic(self, phase: str, name: str, fn: Callable[..., Any], *, idempotent: bool) -> Any:
        """An atomic effect and its record commit in one transaction, so it
        can never be in doubt: no separate intent is needed (atomiceffect.py)."""
        key = effect_key(self.fence.run_id, phase, name)
        with self._lock:
            row = self.effects.get(key)
            if row is not None and row.state == "done":
                return read_saved(row.result_json, row.result_hash, f"effect {name!r}")
            return atomiceffect.perform(self, row, phase, name, key, fn, idempotent=idempotent)

    def remember(self, rec: EffectRecord, *, new: bool) -> None:
        """(under `_lock`, after its commit) A record written; a `new` one is
        the run's last, linked after the one before."""
        self.effects[rec.key] = rec
        if new:
            self.head = rec.key
            self.count += 1

    def _check_foreign(self, row: Any, key: str, name: str) -> None:
        """An intent that cannot be recorded because a record with its key
        exists, yet not as this run's: the store was damaged. Stop; never redo."""
        if row is not None:
            return
        with self.store.read() as conn:
            other = self.store.effects.by_key(conn, key)
        if other is not None:
            raise Stop(
                BlockReason(
                    BlockKind.INTEGRITY,
                    f"effect {name}: a record with its key {key} exists but is not this run's; the store was damaged",
                    {"what": "record"},
                )
            )

    # -- answers (called by applying.py, inside its transaction) ------------------

    def answer(
        self,
        conn: Any,
        key: str,
        action: Action,
        result: Any,
        decision: int,
        now: float,
        *,
        repair: bool = False,
    ) -> None:
        """Carry out an answer to an effect: confirmed done with `result`, or
        allowed to be called again. With `repair`, the answer also settles
        damage to the effect's record: a deleted record is written anew, and
        the run's records are linked again in the order they were written."""
        old = self.effects.get(key)
        if old is None:
            where = seals.split_key(self.fence.run_id, key.split("@", 1)[0])
            phase, name = where if where is not None else ("?", key)
            rec = record.new_intent(self.fence.run_id, phase, name, key, now, self.head)
        else:
            rec = EffectRecord(old)
        if action is Action.CONFIRM_EFFECT:
            record.confirm_done(rec, _json.dumps(result), decision, now)
        else:
            record.allow_retry(rec)
        seals.sealed(rec, self.store.seal_key)
        if old is None:
            self.store.effects.add(conn, record.columns(rec))
            # a record written anew fills a hole the count knows of; one
            # beyond the count is a new record
            grown = len(self.effects) + 1 > self.count
            count = len(self.effects) + 1 if grown else None
            self.store.effects.set_history_end(conn, self.fence.run_id, key, count)
            self.head = key
            if count is not None:
                self.count = count
        else:
            self.store.effects.rewrite(conn, record.columns(rec))
        if repair:
            self._relink(conn)
        else:
            self.reload(key, conn)

    def _relink(self, conn: Any) -> None:
        """Link the run's records again in the order they were written,
        re-sealing only records whose content still matches their seal: a
        record damaged in some other way stays damaged, and is reported."""
        self._read(conn)
        prev: str | None = None
        for rec in sorted(self.effects.values(), key=lambda r: int(r.id)):
            if rec.prev_key != prev and seals.vouches(rec, self.store.seal_key):
                rec["prev_key"] = prev
                seals.sealed(rec, self.store.seal_key)
                self.store.effects.relink(conn, rec.key, prev, rec.seal)
            prev = rec.key
        if prev != self.head:
            self.store.effects.set_history_end(conn, self.fence.run_id, prev)
            self.head = prev
