"""Applying an operator's decisions at the start of a run.

Each application and the decision's `applied` state commit in one
transaction, so a kill can never leave a decision half carried out: a rewind,
an approval or a degrade appends a marker to the hash chain; an answer to an
in-doubt effect updates its record; a degrade after an integrity failure sets
the untrusted checkpoints aside.
"""

from __future__ import annotations

from typing import Any

from . import _json, chain, environment
from ._runstate import RunState, _Stop
from ._states import Action, BlockKind
from .errors import UsageError
from .outcome import BlockReason


class DecisionsMixin(RunState):
    """Carries out pending decisions during the start sequence."""

    def _settle(self, dec: Any, how: str) -> None:
        with self.store.write() as conn:
            self.store.settle_decision(conn, int(dec.id), how, self.clock())

    def _append_marker(
        self,
        kind: str,
        state: chain.Folded,
        extra: dict[str, Any],
        dec: Any,
        phase: str | None = None,
        index: int | None = None,
        discard_steps: list[str] | None = None,
    ) -> None:
        """Append a decision's marker to the chain and settle the decision in
        one transaction: a kill can never leave one without the other."""
        now = self.clock()
        seq = self.next_seq
        env_text, env_hash = chain.envelope(
            run_id=self.run_id,
            epoch=self.epoch,
            seq=seq,
            kind=kind,
            prev=state.last_hash,
            inputs_hash=self.inputs_hash,
            env=environment.fingerprint(
                self.wf, self.current_probes, None, now, with_shape=state.shape != self.wf.shape()
            ),
            phase=phase,
            phase_index=index,
            extra=extra,
        )
        with self.store.write() as conn:
            self.store.insert_checkpoint(
                conn,
                {
                    "run_id": self.run_id,
                    "epoch": self.epoch,
                    "seq": seq,
                    "kind": kind,
                    "phase": phase,
                    "envelope": env_text,
                    "payload_hash": env_hash,
                    "prev_hash": state.last_hash,
                    "output_state": "none",
                    "created_at": now,
                },
            )
            self._fence(conn, now)
            self.store.update_run(conn, self.run_id, {"head_seq": seq, "head_hash": env_hash})
            if discard_steps:
                self.store.discard_steps(conn, self.run_id, discard_steps)
            self.store.settle_decision(conn, int(dec.id), "applied", now)
        self.next_seq = seq + 1

    def _truncate(self, untrusted: list[int], trusted: list[chain.Entry], dec: Any) -> None:
        last = trusted[-1].row if trusted else None
        with self.store.write() as conn:
            if dec is not None:
                self.store.settle_decision(conn, int(dec.id), "applied", self.clock())
            self.store.set_checkpoint_status(conn, self.run_id, self.epoch, untrusted, "discarded")
            self.store.update_run(
                conn,
                self.run_id,
                {"head_seq": int(last.seq) if last else -1, "head_hash": last.payload_hash if last else ""},
                owner=self.owner,
            )

    def _rewind(self, state: chain.Folded, entries: list[chain.Entry], phase: str | None, dec: Any) -> chain.Folded:
        target = self.wf.get(phase) if phase else None
        if target is None:
            raise UsageError(f"rewind names phase {phase!r}, which this workflow does not have")
        reopened = [p.name for p in self.wf.phases if p.index >= target.index]
        self._append_marker(
            "rewind", state, {"reopen": reopened}, dec, phase=target.name, index=target.index, discard_steps=reopened
        )
        return self._refold()

    def _approve(self, state: chain.Folded, blocking: list[dict[str, Any]], dec: Any) -> chain.Folded:
        codes = {r["probe"][5:]: r["current"] for r in blocking if r["probe"].startswith("code:")}
        self._append_marker("env", state, {"approved": [r["probe"] for r in blocking], "approved_code": codes}, dec)
        return self._refold()

    def _degrade(self, state: chain.Folded, skip: list[str], dec: Any) -> chain.Folded:
        self._append_marker("degrade", state, {"skip": skip}, dec)
        return self._refold()

    def _refold(self) -> chain.Folded:
        with self.store.read() as conn:
            rows = self.store.chain(conn, self.run_id, self.epoch)
            head = self.store.get_run(conn, self.run_id)
        assert head is not None  # we hold its lease
        v = chain.verify(
            rows,
            run_id=self.run_id,
            epoch=self.epoch,
            inputs_hash=self.inputs_hash,
            head_seq=int(head.head_seq),
            head_hash=head.head_hash,
            check_type=self._check_type,
        )
        if v.failure is not None:
            raise _Stop(BlockReason(BlockKind.INTEGRITY, v.failure.detail(), {"failure": v.failure.as_dict()}))
        return chain.fold(v.entries)

    def _answer_effect(self, eff: Any, dec: Any) -> None:
        now = self.clock()
        with self.store.write() as conn:
            if dec.action == Action.CONFIRM_EFFECT.value:
                text = _json.dumps(_json.loads(dec.detail_json).get("result"))
                self.store.update_effect(
                    conn,
                    eff.key,
                    {
                        "state": "done",
                        "done_at": now,
                        "result_json": text,
                        "result_hash": _json.sha256(text),
                        "confirmed_by": int(dec.id),
                    },
                )
            else:
                self.store.update_effect(conn, eff.key, {"retry_ok": True})
            self._fence(conn, now)
            self.store.settle_decision(conn, int(dec.id), "applied", now)
            self.effects[eff.key] = self.store.effect_by_key(conn, eff.key)
