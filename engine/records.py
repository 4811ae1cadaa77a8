"""A run's own records of durable steps and effects.

Ordinary steps are not recorded. A durable step's result is committed when it
completes; an effect's intent is committed (fsync) before its function runs
and its completion after, so a resume can tell done from in doubt. Every write
is fenced by the run's lease.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from sqlmodel import Session

from . import _json
from ._runstate import RunState, _Stop
from ._states import BlockKind
from .errors import LeaseLost, StoreError
from .outcome import BlockReason


class RecordsMixin(RunState):
    """Durable steps and effects, called by `PhaseContext` while a phase runs."""

    def _damaged_records(self, open_phases: set[str]) -> list[BlockReason]:
        """Saved step and effect results an open phase will read back, checked
        before any phase starts (not half-way through one)."""
        with self.store.read() as conn:
            saved = [
                (f"durable step {s.step_key!r} of {s.phase}", s.result_json, s.result_hash)
                for s in self.store.steps_for(conn, self.run_id)
                if s.phase in open_phases
            ]
        saved += [
            (f"effect {e.name!r} of {e.phase}", e.result_json, e.result_hash)
            for e in self.effects.values()
            if e.state == "done" and e.phase in open_phases
        ]
        return [
            BlockReason(BlockKind.INTEGRITY, f"saved result of {what} does not match its hash", {"what": "record"})
            for what, text, digest in saved
            if text is None or _json.sha256(text) != digest
        ]

    def load_saved(self, text: str | None, digest: str | None, what: str) -> Any:
        if text is None or _json.sha256(text) != digest:
            raise _Stop(
                BlockReason(
                    BlockKind.INTEGRITY,
                    f"saved result of {what} does not match its hash (expected {digest}, actual {_json.sha256(text or '')})",
                    {"what": "record"},
                )
            )
        try:
            return _json.loads(text)
        except ValueError as exc:
            raise _Stop(
                BlockReason(BlockKind.INTEGRITY, f"saved result of {what} does not parse: {exc}", {"what": "record"})
            ) from None

    def _hot_fence(self, tx: Any, now: float) -> None:
        if not tx.fenced(self.run_id, self.owner):
            raise LeaseLost(f"run {self.run_id!r}: lease lost; nothing recorded")

    def save_step(self, phase: str, key: str, text: str) -> None:
        now = self.clock()
        with self.store.hot_tx() as tx:
            tx.run(
                "step",
                {
                    "run_id": self.run_id,
                    "phase": phase,
                    "step_key": key,
                    "result_json": text,
                    "result_hash": _json.sha256(text),
                    "created_at": now,
                },
            )
            self._hot_fence(tx, now)

    def do_effect(self, phase: str, name: str, fn: Callable[..., Any], *, idempotent: bool, atomic: bool) -> Any:
        key = f"{self.run_id}/{phase}/{name}"
        row = self.effects.get(key)
        if row is not None and row.state == "done":
            return self.load_saved(row.result_json, row.result_hash, f"effect {name!r}")
        now = self.clock()
        if row is not None and not (idempotent or atomic or row.retry_ok):
            raise _Stop(
                BlockReason(
                    BlockKind.IN_DOUBT_EFFECT,
                    f"effect {name} in phase {phase} (key {key}) was started and never recorded done: did it happen?",
                    {"effect": key, "name": name, "phase": phase},
                )
            )
        if not atomic:
            # The intent is durable (synchronous=FULL commit) before fn runs.
            try:
                with self.store.hot_tx() as tx:
                    if row is None:
                        tx.run(
                            "intent",
                            {
                                "run_id": self.run_id,
                                "phase": phase,
                                "name": name,
                                "key": key,
                                "idempotent": bool(idempotent),
                                "now": now,
                            },
                        )
                    else:
                        tx.run("reintent", {"key": key, "idempotent": bool(idempotent), "now": now})
                    self._hot_fence(tx, now)
            except StoreError:
                self._check_foreign_effect(row, key, name)
                raise
            result = _call(fn, key)
            text = _json.dumps(result)
            done = self.clock()
            with self.store.hot_tx() as tx:
                tx.run(
                    "effect_done",
                    {
                        "key": key,
                        "now": done,
                        "result_json": text,
                        "result_hash": _json.sha256(text),
                    },
                )
                self._hot_fence(tx, done)
        else:
            # An atomic effect and its record commit in one transaction, so it
            # can never be in doubt: no separate intent is needed.
            with self.store.hot() as conn:
                with Session(bind=conn) as session:
                    result = _call(fn, key, session)
                    session.flush()
                text = _json.dumps(result)
                values = {"state": "done", "done_at": now, "result_json": text, "result_hash": _json.sha256(text)}
                if row is None:
                    self.store.insert_effect(
                        conn,
                        {
                            "run_id": self.run_id,
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
                    self.store.update_effect(conn, key, values)
                self._fence(conn, now)
        return _json.loads(text)

    def _check_foreign_effect(self, row: Any, key: str, name: str) -> None:
        """An intent that cannot be recorded because a record with its key
        exists, yet not as this run's: the store was damaged. Stop; never redo."""
        if row is not None:
            return
        with self.store.read() as conn:
            other = self.store.effect_by_key(conn, key)
        if other is not None:
            raise _Stop(
                BlockReason(
                    BlockKind.INTEGRITY,
                    f"effect {name}: a record with its key {key} exists but is not this run's; the store was damaged",
                    {"what": "record"},
                )
            )


def _call(fn: Callable[..., Any], key: str, session: Any = None) -> Any:
    """Call an effect's function with what it asks for: the idempotency key
    (`fn(key)`), and for an atomic effect the session too (`fn(key, session)`,
    or `fn(session)` when it takes one argument); `fn()` when it takes none."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: give it everything
        params, varargs = [], True
    args: tuple[Any, ...] = (key,) if session is None else (key, session)
    if varargs or len(params) >= len(args):
        return fn(*args)
    if session is not None and len(params) == 1:
        return fn(session)
    return fn(*args[: len(params)])
