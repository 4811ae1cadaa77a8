"""The hot path: checkpoints, effect records and durable steps written with
fixed SQL straight through the driver on the reused connection, for building
and compiling a Core statement per write costs more CPU than the write.

It owns no table of its own: its statements write `phasegate_checkpoints`,
`phasegate_effects`, `phasegate_steps`, the delivery columns of
`phasegate_messages` and the head, frontier, progress and effect history
columns of `phasegate_runs`, as those tables' repositories describe
them, and read the lease columns to fence each write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ._database import Database

#: The statements by name, in SQLite's parameter style; `:lease_now` is the
#: lease clock's now (`Database.lease_now`), written out per dialect.
_HOT_SQL: dict[str, str] = {
    "checkpoint": (
        "INSERT INTO phasegate_checkpoints (run_id, epoch, seq, kind, phase, envelope, payload_hash,"
        " prev_hash, output_json, output_state, output_bytes, archive_path, created_at, status, seal)"
        " VALUES (:run_id, :epoch, :seq, :kind, :phase, :envelope, :payload_hash, :prev_hash,"
        " :output_json, :output_state, :output_bytes, NULL, :created_at, 'live', :seal)"
    ),
    "advance": (
        "UPDATE phasegate_runs SET head_seq = :head_seq, head_hash = :head_hash,"
        " frontier_phase = :frontier_phase, frontier_index = :frontier_index, steps_done = :steps_done,"
        " last_checkpoint_at = :now, progress_json = NULL WHERE run_id = :run_id AND lease_owner = :owner"
        " AND lease_expires_at > :lease_now"
    ),
    # A phase's latest progress (run/progress.py), fenced by the lease and the
    # status: a value written late never lands on a run that stopped.
    "progress": (
        "UPDATE phasegate_runs SET progress_json = :progress_json WHERE run_id = :run_id"
        " AND lease_owner = :owner AND lease_expires_at > :lease_now AND status = 'running'"
    ),
    # Reads, not writes: a write to the run row would dirty its pages and
    # indexes in every effect and step commit. The dialect makes the read
    # hold until commit (SQLite: the BEGIN IMMEDIATE lock; PostgreSQL: FOR UPDATE).
    "fence": (
        "SELECT 1 FROM phasegate_runs WHERE run_id = :run_id AND lease_owner = :owner AND lease_expires_at > :lease_now"
    ),
    "held": (
        "SELECT 1 FROM phasegate_runs WHERE run_id = :run_id AND lease_owner = :owner AND lease_expires_at > :lease_now"
    ),
    "step": (
        "INSERT INTO phasegate_steps (run_id, phase, step_key, result_json, result_hash, created_at, discarded)"
        " VALUES (:run_id, :phase, :step_key, :result_json, :result_hash, :created_at, FALSE)"
    ),
    "intent": (
        "INSERT INTO phasegate_effects (run_id, phase, name, key, state, idempotent, atomic, attempt,"
        " retry_ok, intent_at, prev_key, seal, reconcilable, redo_on_rewind)"
        " VALUES (:run_id, :phase, :name, :key, 'intent', :idempotent, FALSE, 1, FALSE, :intent_at,"
        " :prev_key, :seal, :reconcilable, :redo_on_rewind)"
    ),
    # Where the run's effect history ends (seals.py): written with each new
    # intent, in its transaction, so a deleted last record is seen.
    "effects_head": (
        "UPDATE phasegate_runs SET effects_last = :key, effects_count = effects_count + 1"
        " WHERE run_id = :run_id AND lease_owner = :owner AND lease_expires_at > :lease_now"
    ),
    "reintent": (
        "UPDATE phasegate_effects SET attempt = :attempt, retry_ok = FALSE, intent_at = :intent_at,"
        " idempotent = :idempotent, reconcilable = :reconcilable, seal = :seal WHERE key = :key"
    ),
    # An intent whose function provably never ran (ledger.py `retract`): it
    # may simply be called again, and no operator is asked about it.
    "retract": "UPDATE phasegate_effects SET retry_ok = :retry_ok, seal = :seal WHERE key = :key",
    "effect_done": (
        "UPDATE phasegate_effects SET state = 'done', done_at = :done_at, result_json = :result_json,"
        " result_hash = :result_hash, seal = :seal WHERE key = :key"
    ),
    # A message a phase received (run/mailbox.py), in the transaction of the
    # step that records it: a queued one only, so it is never taken twice.
    "message_taken": (
        "UPDATE phasegate_messages SET state = 'delivered', taken_at = :at, phase = :phase, step_key = :step_key"
        " WHERE id = :id AND run_id = :run_id AND state = 'queued'"
    ),
    # A message the receiving phase's type refused: kept and shown, never handed on.
    "message_refused": (
        "UPDATE phasegate_messages SET state = 'refused', taken_at = :at, phase = :phase, refused = :why"
        " WHERE id = :id AND run_id = :run_id AND state = 'queued'"
    ),
}

# The head moved under the lease, and the entry inserted only when it
# did (0 rows: the lease is gone, nothing written). A data-modifying CTE:
# PostgreSQL only (SQLite's WITH takes no UPDATE, and needs no round trips).
_CHECKPOINT_ADVANCE = (
    "WITH moved AS (UPDATE phasegate_runs SET head_seq = :head_seq, head_hash = :head_hash,"
    " frontier_phase = :frontier_phase, frontier_index = :frontier_index, steps_done = :steps_done,"
    " last_checkpoint_at = :now, progress_json = NULL WHERE run_id = :run_id AND lease_owner = :owner"
    " AND lease_expires_at > :lease_now RETURNING run_id)"
    " INSERT INTO phasegate_checkpoints (run_id, epoch, seq, kind, phase, envelope, payload_hash,"
    " prev_hash, output_json, output_state, output_bytes, archive_path, created_at, status, seal)"
    " SELECT run_id, :epoch, :seq, :kind, :phase, :envelope, :payload_hash, :prev_hash,"
    " :output_json, :output_state, :output_bytes, NULL, :created_at, 'live', :seal FROM moved"
)


class HotPath:
    """The hot statements in the store's dialect, and one of them run as a
    transaction of its own. `Store.hot_tx` runs several in one."""

    def __init__(self, db: Database) -> None:
        self._db = db
        dialect = db.dialect
        sql = {k: dialect.hot_sql(v.replace(":lease_now", dialect.LEASE_NOW_SQL)) for k, v in _HOT_SQL.items()}
        sql["fence"] += dialect.FENCE_LOCK
        self.checkpoint_in_one: bool = dialect.CHECKPOINT_IN_ONE
        """Whether a checkpoint is one statement (`checkpoint_advance`): a
        round trip saved per boundary where statements cross a network."""
        if self.checkpoint_in_one:
            sql["checkpoint_advance"] = dialect.hot_sql(
                _CHECKPOINT_ADVANCE.replace(":lease_now", dialect.LEASE_NOW_SQL)
            )
        self.sql: dict[str, str] = sql
        """Each statement's SQL by name, with the dialect's parameter style."""

    def alone(self, name: str, params: dict[str, Any]) -> int:
        """One hot statement as a transaction of its own, committed as it
        ends (PostgreSQL: one round trip instead of BEGIN, it and COMMIT).

        Args:
            name: the statement (a key of `sql`).
            params: its parameters.

        Returns:
            Its row count: 0 from a fenced statement means the lease is gone.

        Raises:
            StoreError: the database failed.
        """
        with self._db.alone() as cur:
            cur.execute(self.sql[name], params)
            return int(cur.rowcount)


class HotScope:
    """`Store.hot_tx`'s transaction: the hot lock held from enter to exit."""

    __slots__ = ("_db", "_sql", "_first", "_raw", "_cur")

    def __init__(self, db: Database, sql: dict[str, str], first: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self._db = db
        self._sql = sql
        self._first = first

    def __enter__(self) -> HotTx:
        db = self._db
        db.hot_lock.acquire()
        try:
            raw = db.hot_connection().connection.dbapi_connection
            assert raw is not None
            cur = raw.cursor()
        except BaseException:
            db.hot_lock.release()
            raise
        self._raw, self._cur = raw, cur
        tx = HotTx(cur, self._sql)
        try:
            db.dialect.hot_begin(raw, cur)
            for name, params in self._first:
                tx.run(name, params)
        except BaseException as exc:
            self._abort(exc)
            raise
        return tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None:
            try:
                self._db.dialect.hot_commit(self._raw, self._cur)
            except BaseException as err:
                self._abort(err)
                raise
            self._end()
            return False
        self._abort(exc)
        return False  # the caller's exception goes on

    def _abort(self, exc: BaseException) -> None:
        """Roll back, let go of the connection and the lock; a driver error
        becomes the store's own (raised from here), anything else goes on as it was."""
        db = self._db
        try:
            try:
                db.dialect.hot_rollback(self._raw, self._cur)
            except Exception:  # noqa: BLE001 - no transaction left to roll back
                pass
            if isinstance(exc, db.dialect.DriverError):
                db.drop_hot(self._raw)
                raise db.explain(exc) from None
        finally:
            self._end()

    def _end(self) -> None:
        try:
            self._cur.close()
        finally:
            self._db.hot_lock.release()


class HotTx:
    """The statements a hot transaction may run, by name."""

    __slots__ = ("_cur", "_sql")

    def __init__(self, cur: Any, sql: dict[str, str]) -> None:
        self._cur = cur
        self._sql = sql

    def run(self, name: str, params: dict[str, Any]) -> int:
        """Returns the row count: 0 from a fenced update means the lease is gone."""
        self._cur.execute(self._sql[name], params)
        return int(self._cur.rowcount)

    def fenced(self, run_id: str, owner: str, now: float) -> bool:
        """Whether `owner` still holds the run's unexpired lease, held so until commit."""
        self._cur.execute(self._sql["fence"], {"run_id": run_id, "owner": owner, "now": now})
        return self._cur.fetchone() is not None
