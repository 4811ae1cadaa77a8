"""The checkpoints table (`phasegate_checkpoints`): each run's hash chain,
one entry per phase boundary or decision marker, by epoch and sequence
number, with the phase's output (or where it was archived). The entries of a
checkpoint on the hot path are `_hotpath.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection, Row

from ..errors import StoreError
from . import _rawread, _rowcheck
from ._database import Database, driver
from .schema import checkpoints


class Checkpoints:
    """Reads and writes of the checkpoints table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def chain(self, conn: Connection, run_id: str, epoch: int) -> list[Row[Any]]:
        """The live entries of the run's chain in `epoch`, in sequence order, checked.

        Raises:
            StoreError: a row is damaged (`_rowcheck`).
        """
        q = (
            select(checkpoints)
            .where(
                checkpoints.c.run_id == run_id,
                checkpoints.c.epoch == epoch,
                checkpoints.c.status == "live",
            )
            .order_by(checkpoints.c.seq)
        )
        return _rowcheck.check_all(checkpoints, conn.execute(q))

    def live_chains(self, conn: Connection, epochs: Mapping[str, int]) -> Iterator[tuple[str, list[Any]]]:
        """The live chain of each run's current epoch (`epochs`: run id to
        epoch), run after run in run-id order, from one streamed query: what
        `chain` gives for each, without a statement per run. Only one run's
        rows are held at a time.

        On SQLite the rows are read through the driver, in the transaction
        `conn` holds, with `envelope` and `output_json` as their stored bytes
        (`_sqlite.stored_text`): what a verify hashes, without SQLAlchemy's
        row handling, a decode and an encode back per value. Elsewhere they
        are `chain`'s rows."""
        if not epochs:
            return
        if self._db.is_sqlite:
            raw = driver(conn)
            # The page's runs are a run-id range: the rows stream out of the
            # (run_id, epoch, seq) index in its order. A join on the runs
            # table, or any other order, made SQLite copy every selected
            # output into a temporary sorter first.
            rows: Iterator[Any] = _rawread.LIVE_CHECKPOINTS.rows(
                raw,
                "run_id >= ? AND run_id <= ? AND status = 'live' ORDER BY run_id, epoch, seq",
                (min(epochs), max(epochs)),
            )
            as_bytes = _rawread.STORED_BYTES
        else:
            q = (
                select(checkpoints)
                .where(checkpoints.c.run_id.in_(sorted(epochs)), checkpoints.c.status == "live")
                .order_by(checkpoints.c.run_id, checkpoints.c.epoch, checkpoints.c.seq)
            )
            # Streamed: PostgreSQL's client-side cursor would otherwise hold every
            # output of the page in memory at once.
            rows = iter(conn.execution_options(yield_per=16).execute(q))
            as_bytes = frozenset()
        held: list[Any] = []
        for row in rows:
            if row.epoch != epochs.get(row.run_id):
                continue  # an earlier epoch's entry, kept live by nothing that reads it here, or another page's run
            if held and row.run_id != held[0].run_id:
                yield held[0].run_id, _rowcheck.check_all(checkpoints, held, as_bytes=as_bytes)
                held = []
            held.append(row)
        if held:
            yield held[0].run_id, _rowcheck.check_all(checkpoints, held, as_bytes=as_bytes)

    def next_seq(self, conn: Connection, run_id: str, epoch: int) -> int:
        """The sequence number the run's next entry in `epoch` takes.

        Raises:
            StoreError: the highest stored one is not a number.
        """
        q = select(func.max(checkpoints.c.seq)).where(checkpoints.c.run_id == run_id, checkpoints.c.epoch == epoch)
        top = conn.execute(q).scalar()
        if top is not None and not isinstance(top, int):
            raise StoreError(
                f"a checkpoint of run {run_id!r} is damaged (seq {str(top)[:40]!r}); nothing was changed",
                title="damaged record",
            )
        return 0 if top is None else int(top) + 1

    def add_marker(
        self,
        conn: Connection,
        run_id: str,
        epoch: int,
        seq: int,
        kind: str,
        phase: str | None,
        envelope: str,
        payload_hash: str,
        prev_hash: str,
        created_at: float,
        seal: str | None,
    ) -> None:
        """One entry with no output (a decision's marker; a phase's goes by the hot path)."""
        conn.execute(
            insert(checkpoints).values(
                run_id=run_id,
                epoch=epoch,
                seq=seq,
                kind=kind,
                phase=phase,
                envelope=envelope,
                payload_hash=payload_hash,
                prev_hash=prev_hash,
                output_state="none",
                created_at=created_at,
                seal=seal,
            )
        )

    def set_status(self, conn: Connection, run_id: str, epoch: int, seqs: Sequence[int], status: str) -> None:
        """Set these entries of the run's epoch to `status` (set aside: `discarded`)."""
        if seqs:
            conn.execute(
                update(checkpoints)
                .where(
                    checkpoints.c.run_id == run_id,
                    checkpoints.c.epoch == epoch,
                    checkpoints.c.seq.in_(list(seqs)),
                )
                .values(status=status)
            )

    def archive_epoch(self, conn: Connection, run_id: str, epoch: int) -> None:
        """Every entry of the run's epoch no longer live (a reset starts a new one)."""
        conn.execute(
            update(checkpoints)
            .where(checkpoints.c.run_id == run_id, checkpoints.c.epoch == epoch)
            .values(status="archived")
        )

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """Every entry of the run, every epoch and status, in chain order, checked."""
        q = select(checkpoints).where(checkpoints.c.run_id == run_id).order_by(checkpoints.c.epoch, checkpoints.c.seq)
        return _rowcheck.check_all(checkpoints, conn.execute(q))

    def set_output_state(self, conn: Connection, ckpt_id: int, state: str, archive_path: str | None) -> None:
        """The entry's output moved out (`archived` to `archive_path`) or `pruned`."""
        conn.execute(
            update(checkpoints)
            .where(checkpoints.c.id == ckpt_id)
            .values(output_state=state, output_json=None, archive_path=archive_path)
        )
