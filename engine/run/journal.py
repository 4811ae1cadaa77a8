"""Where a checkpoint is written: the run journal.

The journal is the only writer of a run's hash chain. It appends a phase's
checkpoint when the phase finishes (one transaction: the entry, and the run's
head and frontier moved to it, fenced by the lease) and the markers that
carry out an operator's decisions (rewind, approve, degrade). It knows the
run's epoch, the next sequence number and the head, and reads the chain back
verified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._pause import pause_point
from ..authoring.workflow import Phase, Workflow
from ..history import chain
from ..observe import hooks
from ..store.store import Store
from . import environment
from .completions import Completions
from .lease import Fence


@dataclass(frozen=True)
class Loaded:
    """A run's live chain as read at one moment, verified."""

    rows: Sequence[Any]
    verified: chain.Verified


class RunJournal:
    """The writer of one run's chain, for one execution of the run."""

    def __init__(
        self,
        store: Store,
        wf: Workflow,
        fence: Fence,
        clock: Callable[[], float],
        *,
        epoch: int,
        inputs_hash: str,
        completions: Completions | None = None,
    ) -> None:
        self._store = store
        self._completions = completions if completions is not None else Completions(store, fence)
        """Effect completions waiting for a transaction: a checkpoint carries them."""
        self._wf = wf
        self._fence = fence
        self._clock = clock
        self.epoch = epoch
        self.inputs_hash = inputs_hash
        self.next_seq = 0
        self.head = chain.GENESIS
        """Hash of the last trusted entry: what the next entry links to."""
        self.shape: list[dict[str, Any]] | None = None
        """The workflow shape last recorded in the chain (recorded again only when it changes)."""

    @property
    def run_id(self) -> str:
        return self._fence.run_id

    # -- reading --------------------------------------------------------------

    def load(self) -> Loaded:
        """Read and verify the run's live chain, and take its head as ours."""
        with self._store.read() as conn:
            rows = self._store.checkpoints.chain(conn, self.run_id, self.epoch)
            run = self._store.runs.get(conn, self.run_id)
            self.next_seq = self._store.checkpoints.next_seq(conn, self.run_id, self.epoch)
        assert run is not None  # we hold its lease
        verified = chain.verify(
            rows,
            run_id=self.run_id,
            epoch=self.epoch,
            inputs_hash=self.inputs_hash,
            head_seq=int(run.head_seq),
            head_hash=run.head_hash,
            check_type=self._wf.check_output,
            key=self._store.seal_key,
        )
        # A decision's marker, appended before the phases run, links to the
        # last entry that verified.
        self.follow(chain.fold(verified.entries))
        return Loaded(rows, verified)

    def follow(self, state: chain.Folded) -> None:
        """Continue from this trusted state: new entries link to its last one."""
        self.head = state.last_hash
        self.shape = state.shape

    # -- writing --------------------------------------------------------------

    def checkpoint(
        self,
        p: Phase,
        text: str,
        *,
        steps_done: int,
        missing: list[str],
        nxt: Phase | None,
        next_needs: dict[str, str],
        probes: dict[str, Any],
        out_hash: str | None = None,
    ) -> str:
        """Append phase `p`'s checkpoint and move the run's head and frontier
        to it, in one transaction. Returns the output's hash (`out_hash`, when
        the caller already has it: at 1 MB a second sha256 is a millisecond)."""
        now = self._clock()
        if out_hash is None:
            out_hash = _json.sha256(text)
        seq = self.next_seq
        shape = self._wf.shape()
        # An ASCII string's length is its UTF-8 size (isascii is a flag, not a scan).
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        env_text, env_hash = chain.envelope(
            run_id=self.run_id,
            epoch=self.epoch,
            seq=seq,
            kind="phase",
            prev=self.head,
            inputs_hash=self.inputs_hash,
            env=environment.fingerprint(self._wf, probes, p.code_hash, now, with_shape=self.shape != shape),
            phase=p.name,
            phase_index=p.index,
            steps_done=steps_done,
            output_hash=out_hash,
            output_bytes=size,
            extra={"missing": missing, "next": {"phase": nxt.name if nxt else None, "needs": next_needs}},
        )
        frontier = nxt if nxt is not None else p
        entry = {
            "run_id": self.run_id,
            "epoch": self.epoch,
            "seq": seq,
            "kind": "phase",
            "phase": p.name,
            "envelope": env_text,
            "payload_hash": env_hash,
            "prev_hash": self.head,
            "output_json": text,
            "output_state": "present",
            "output_bytes": size,
            "created_at": now,
            "seal": chain.entry_seal(env_hash, self._store.seal_key),
        }
        head = {
            "head_seq": seq,
            "head_hash": env_hash,
            "frontier_phase": frontier.name,
            "frontier_index": frontier.index + (0 if nxt is not None else 1),
            "steps_done": 0 if nxt is not None else steps_done,
            "now": now,
            "run_id": self.run_id,
            "owner": self._fence.owner,
        }
        began = self._fence.stamp()
        if self._store.hot_path.checkpoint_in_one and not self._completions:
            # One statement that is its own transaction (PostgreSQL): the
            # fenced head move, and the entry inserted only when it moved, in
            # one round trip. Nothing else rides with it: no completion waits
            # (the phase's effects returned before it did).
            pause_point("in-commit", p.name)
            if self._store.hot_path.alone("checkpoint_advance", {**entry, **head}) == 0:
                raise self._lost(p)
        else:
            # The phase's effects' completions still waiting commit with it.
            with self._completions.hot_tx() as tx:
                if self._store.hot_path.checkpoint_in_one:
                    n = tx.run("checkpoint_advance", {**entry, **head})
                else:
                    tx.run("checkpoint", entry)
                    n = tx.run("advance", head)
                if n == 0:
                    raise self._lost(p)
                pause_point("in-commit", p.name)
        self._fence.verified(began)
        hooks.OBSERVER.checkpoint(self.run_id, self._wf.name, p.name, began[0])
        self.next_seq = seq + 1
        self.head = env_hash
        self.shape = shape
        return out_hash

    def _lost(self, p: Phase) -> Exception:
        return self._fence.lost(f"run {self.run_id!r}: lease lost before checkpoint of {p.name}; nothing recorded")

    def marker(
        self,
        conn: Any,
        kind: str,
        extra: dict[str, Any],
        *,
        probes: dict[str, Any],
        phase: str | None = None,
        index: int | None = None,
    ) -> None:
        """Append a decision's marker (rewind, env, degrade) inside the
        caller's transaction, which settles the decision with it."""
        now = self._clock()
        seq = self.next_seq
        shape = self._wf.shape()
        env_text, env_hash = chain.envelope(
            run_id=self.run_id,
            epoch=self.epoch,
            seq=seq,
            kind=kind,
            prev=self.head,
            inputs_hash=self.inputs_hash,
            env=environment.fingerprint(self._wf, probes, None, now, with_shape=self.shape != shape),
            phase=phase,
            phase_index=index,
            extra=extra,
        )
        self._store.checkpoints.add_marker(
            conn,
            self.run_id,
            self.epoch,
            seq,
            kind,
            phase,
            env_text,
            env_hash,
            self.head,
            now,
            chain.entry_seal(env_hash, self._store.seal_key),
        )
        self._fence.check(conn, now)
        self._store.runs.set_head(conn, self.run_id, seq, env_hash)
        self.next_seq = seq + 1
        self.head = env_hash
        self.shape = shape

    def set_aside(self, conn: Any, untrusted: list[int], trusted: list[chain.Entry]) -> None:
        """Set aside the entries after an integrity failure (kept as evidence,
        no longer live) and move the head back to the last trusted one."""
        last = trusted[-1].row if trusted else None
        self._store.checkpoints.set_status(conn, self.run_id, self.epoch, untrusted, "discarded")
        self._store.runs.set_head(
            conn,
            self.run_id,
            int(last.seq) if last else -1,
            last.payload_hash if last else "",
            owner=self._fence.owner,
        )
