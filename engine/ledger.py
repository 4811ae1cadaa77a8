"""Where an effect is recorded: the run's effect ledger.

An effect is an action on the outside world that must not happen twice. Its
intent is committed (fsync) before its function is called and its completion
after, each fenced by the run's lease, so a resume can tell done from in
doubt. An atomic effect and its record commit in one transaction instead.

`needs_answer` is the one rule for "is this effect in doubt": the start
sequence, `decide`, the views and the console all ask it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from . import _json
from ._pause import pause_point
from ._states import BlockKind
from ._stop import Stop, damaged, read_saved
from .errors import StoreError
from .lease import Fence, FenceToken
from .outcome import BlockReason
from .store.store import Store


def needs_answer(effect: Any) -> bool:
    """An effect that was started, never recorded done, and whose target
    cannot simply be called again: once its process is gone, only an operator
    (or the outside system) can say whether it happened."""
    return effect.state == "intent" and not (effect.idempotent or effect.atomic or effect.retry_ok)


def in_doubt_reason(key: str, name: str, phase: str) -> BlockReason:
    return BlockReason(
        BlockKind.IN_DOUBT_EFFECT,
        f"effect {name} in phase {phase} (key {key}) was started and never recorded done: did it happen?",
        {"effect": key, "name": name, "phase": phase},
    )


def effect_key(run_id: str, phase: str, name: str) -> str:
    return f"{run_id}/{phase}/{name}"


class EffectLedger:
    """A run's effects: read once per start, written as each one happens."""

    def __init__(self, store: Store, fence: Fence, clock: Callable[[], float]) -> None:
        self._store = store
        self._fence = fence
        self._clock = clock
        self.effects: dict[str, Any] = {}
        """The run's effect records by key, as last read or written."""

    def load(self) -> None:
        with self._store.read() as conn:
            self.effects = {e.key: e for e in self._store.effects_for(conn, self._fence.run_id)}

    def reload(self, key: str, conn: Any) -> None:
        self.effects[key] = self._store.effect_by_key(conn, key)

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

    def perform(self, phase: str, name: str, fn: Callable[..., Any], *, idempotent: bool, atomic: bool) -> Any:
        """Do the effect once: return its saved result when it is done, stop
        when it is in doubt, otherwise record the intent, call `fn`, record
        the completion."""
        run_id = self._fence.run_id
        key = effect_key(run_id, phase, name)
        row = self.effects.get(key)
        if row is not None and row.state == "done":
            return read_saved(row.result_json, row.result_hash, f"effect {name!r}")
        if row is not None and not (idempotent or atomic or row.retry_ok):
            raise Stop(in_doubt_reason(key, name, phase))
        if atomic:
            return self._perform_atomic(row, phase, name, key, fn, idempotent=idempotent)
        now = self._clock()
        # The intent is durable (synchronous=FULL commit) before fn runs.
        try:
            with self._store.hot_tx() as tx:
                if row is None:
                    tx.run(
                        "intent",
                        {
                            "run_id": run_id,
                            "phase": phase,
                            "name": name,
                            "key": key,
                            "idempotent": bool(idempotent),
                            "now": now,
                        },
                    )
                else:
                    tx.run("reintent", {"key": key, "idempotent": bool(idempotent), "now": now})
                self._fence.check_hot(tx)
        except StoreError:
            self._check_foreign(row, key, name)
            raise
        pause_point("after-intent", name)
        # A process frozen since its intent committed must not call fn now:
        # its lease may have lapsed, been revoked, or been taken over.
        self._fence.ensure()
        token = FenceToken(run_id, self._fence.epoch, 1 if row is None else int(row.attempt) + 1, key)
        result = _call(fn, key, token=token)
        text = _json.dumps(result)
        done = self._clock()
        with self._store.hot_tx() as tx:
            tx.run("effect_done", {"key": key, "now": done, "result_json": text, "result_hash": _json.sha256(text)})
            self._fence.check_hot(tx)
        return _json.loads(text)

    def _perform_atomic(
        self, row: Any, phase: str, name: str, key: str, fn: Callable[..., Any], *, idempotent: bool
    ) -> Any:
        """An atomic effect and its record commit in one transaction, so it
        can never be in doubt: no separate intent is needed."""
        # Imported here: only an atomic effect needs the ORM, and a command
        # line start should not pay for it.
        from sqlmodel import Session

        now = self._clock()
        with self._store.hot() as conn:
            with Session(bind=conn) as session:
                attempt = 1 if row is None else int(row.attempt)
                result = _call(fn, key, session, token=FenceToken(self._fence.run_id, self._fence.epoch, attempt, key))
                session.flush()
            text = _json.dumps(result)
            values = {"state": "done", "done_at": now, "result_json": text, "result_hash": _json.sha256(text)}
            if row is None:
                self._store.insert_effect(
                    conn,
                    {
                        "run_id": self._fence.run_id,
                        "phase": phase,
                        "name": name,
                        "key": key,
                        "idempotent": idempotent,
                        "atomic": True,
                        "intent_at": now,
                        **values,
                    },
                )
            else:
                self._store.update_effect(conn, key, values)
            self._fence.check(conn, now)
        return _json.loads(text)

    def _check_foreign(self, row: Any, key: str, name: str) -> None:
        """An intent that cannot be recorded because a record with its key
        exists, yet not as this run's: the store was damaged. Stop; never redo."""
        if row is not None:
            return
        with self._store.read() as conn:
            other = self._store.effect_by_key(conn, key)
        if other is not None:
            raise Stop(
                BlockReason(
                    BlockKind.INTEGRITY,
                    f"effect {name}: a record with its key {key} exists but is not this run's; the store was damaged",
                    {"what": "record"},
                )
            )

    # -- answers (called by applying.py, inside its transaction) ------------------

    def confirm(self, conn: Any, key: str, result: Any, decision_id: int, now: float) -> None:
        """Record an in-doubt effect as done with the result an operator gave."""
        text = _json.dumps(result)
        self._store.update_effect(
            conn,
            key,
            {
                "state": "done",
                "done_at": now,
                "result_json": text,
                "result_hash": _json.sha256(text),
                "confirmed_by": decision_id,
            },
        )

    def allow_retry(self, conn: Any, key: str) -> None:
        """Let an in-doubt effect be called again with its key."""
        self._store.update_effect(conn, key, {"retry_ok": True})


def _call(fn: Callable[..., Any], key: str, session: Any = None, *, token: FenceToken | None = None) -> Any:
    """Call an effect's function with what it asks for: the idempotency key
    (`fn(key)`), and for an atomic effect the session too (`fn(key, session)`,
    or `fn(session)` when it takes one argument); `fn()` when it takes none.
    A function with a parameter named `fence` gets the fencing token there."""
    try:
        sig = inspect.signature(fn).parameters
        params = [
            p
            for n, p in sig.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty and n != "fence"
        ]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.values())
        wants_fence = "fence" in sig and sig["fence"].kind is not inspect.Parameter.POSITIONAL_ONLY
    except (TypeError, ValueError):  # a builtin without a signature: give it everything
        params, varargs, wants_fence = [], True, False
    kw = {"fence": token} if wants_fence else {}
    args: tuple[Any, ...] = (key,) if session is None else (key, session)
    if varargs or len(params) >= len(args):
        return fn(*args, **kw)
    if session is not None and len(params) == 1:
        return fn(session, **kw)
    return fn(*args[: len(params)], **kw)
