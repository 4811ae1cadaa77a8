"""The store's tables, declared once with sqlmodel.

The ORM is used for declaration and for cold paths only; the hot paths
(checkpoint, effect intent and completion, durable step) write through
SQLAlchemy Core on a reused connection, because the ORM's unit of work costs
more CPU per commit than the fsync it wraps (see bench/).

Times are UNIX seconds (float) so lease and retention arithmetic is exact on
every backend; they become ISO 8601 only when shown.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Text
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

#: The schema version this code writes. A store with a higher one was written
#: by a newer phasegate and is not trusted.
SCHEMA_VERSION = 3

# Our own registry keeps phasegate's tables out of `SQLModel.metadata`, which
# belongs to the application (an atomic effect's ledger table lives there).
_registry = registry()


class _Base(SQLModel, registry=_registry):
    pass


metadata = _registry.metadata


class Meta(_Base, table=True):
    __tablename__ = "phasegate_meta"
    key: str = Field(primary_key=True)
    value: str


class RunRow(_Base, table=True):
    """One row per run: its identity, inputs, and a summary an operator's
    list can page through without opening any checkpoint."""

    __tablename__ = "phasegate_runs"
    # Deliberately few indexes: each is rewritten when its columns change,
    # and the checkpoint path changes this row at every boundary.
    __table_args__ = (Index("ix_runs_status_updated", "status", "updated_at"),)

    run_id: str = Field(primary_key=True)
    workflow: str
    target: str | None = None
    inputs_json: str = Field(sa_column=Column(Text, nullable=False))
    inputs_hash: str
    shape_json: str = Field(sa_column=Column(Text, nullable=False))
    status: str
    epoch: int = 0
    head_seq: int = -1
    head_hash: str = ""
    frontier_phase: str | None = None
    frontier_index: int = 0
    phase_count: int = 0
    steps_done: int = 0
    created_at: float
    updated_at: float
    last_checkpoint_at: float | None = None
    blocked_json: str = Field(default="[]", sa_column=Column(Text, nullable=False, default="[]"))
    env_json: str = Field(default="[]", sa_column=Column(Text, nullable=False, default="[]"))
    notes_json: str = Field(default="[]", sa_column=Column(Text, nullable=False, default="[]"))
    error_json: str | None = Field(default=None, sa_column=Column(Text))
    attention: str = ""
    lease_owner: str | None = None
    lease_host: str | None = None
    lease_pid: int | None = None
    lease_expires_at: float | None = None
    heartbeat_at: float | None = None
    effects_last: str | None = None
    """The key of the run's last effect record: where its effect history ends (version 3)."""
    effects_count: int = 0
    """How many effect records the run has written (version 3): a deletion that
    took the names with it is still seen."""


class CheckpointRow(_Base, table=True):
    """One entry of a run's hash chain. `envelope` is the hashed record
    (position, environment, references); the phase output sits beside it in
    `output_json`, hashed inside the envelope, so it can be pruned or archived
    without breaking the chain."""

    __tablename__ = "phasegate_checkpoints"
    __table_args__ = (Index("ux_ckpt_run_epoch_seq", "run_id", "epoch", "seq", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str
    epoch: int
    seq: int
    kind: str  # phase | rewind | env | degrade
    phase: str | None = None
    envelope: str = Field(sa_column=Column(Text, nullable=False))
    payload_hash: str
    prev_hash: str
    output_json: str | None = Field(default=None, sa_column=Column(Text))
    output_state: str = "none"  # present | pruned | archived | none
    output_bytes: int = 0
    archive_path: str | None = None
    created_at: float
    status: str = "live"  # live | discarded | archived


class StepRow(_Base, table=True):
    """A durable step's saved result."""

    __tablename__ = "phasegate_steps"
    __table_args__ = (Index("ix_steps_run_phase", "run_id", "phase", "step_key"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str
    phase: str
    step_key: str
    result_json: str = Field(sa_column=Column(Text, nullable=False))
    result_hash: str
    created_at: float
    discarded: bool = False


class EffectRow(_Base, table=True):
    """An effect's intent and, once it happened, its completion. Never deleted:
    it is the memory that an irreversible action already took place."""

    __tablename__ = "phasegate_effects"
    __table_args__ = (
        Index("ux_effects_key", "key", unique=True),
        Index("ix_effects_run", "run_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: str
    phase: str
    name: str
    key: str
    state: str  # intent | done
    idempotent: bool = False
    atomic: bool = False
    attempt: int = 1
    retry_ok: bool = False
    intent_at: float
    done_at: float | None = None
    result_json: str | None = Field(default=None, sa_column=Column(Text))
    result_hash: str | None = None
    confirmed_by: int | None = None
    # Version 3: the record's place in the run's history and its seal (seals.py).
    prev_key: str | None = None
    seal: str | None = None
    reconcilable: bool = False
    """Declared with a reconcile hook: a resume may ask the outside system."""
    redo_on_rewind: bool = False
    reconcile_json: str | None = Field(default=None, sa_column=Column(Text))
    """The last answer of its reconcile hook, as shown to operators."""


class DecisionRow(_Base, table=True):
    """An operator's decision: stored with who, when and why; never deleted."""

    __tablename__ = "phasegate_decisions"
    __table_args__ = (Index("ix_decisions_run", "run_id", "id"), Index("ix_decisions_state", "state"))

    id: int | None = Field(default=None, primary_key=True)
    run_id: str
    action: str
    phase: str | None = None
    effect_key: str | None = None
    answers: str | None = None  # the block kind this decision answers
    reason: str = Field(sa_column=Column(Text, nullable=False))
    operator: str
    at: float
    state: str = "pending"  # pending | applied | void
    applied_at: float | None = None
    detail_json: str = Field(default="{}", sa_column=Column(Text, nullable=False, default="{}"))


class SourceRow(_Base, table=True):
    """The text a phase's code fingerprint covers, once per fingerprint, so a
    drift can be shown as a diff by anyone, without the workflow's code.
    Added in schema version 2."""

    __tablename__ = "phasegate_sources"

    code_hash: str = Field(primary_key=True)
    source: str = Field(sa_column=Column(Text, nullable=False))
    created_at: float


class AlertRow(_Base, table=True):
    """One stop of a run (blocked or failed) that a watch announced, or is
    announcing: the primary key is the claim, so two watches never both send.
    Added in schema version 2."""

    __tablename__ = "phasegate_alerts"
    __table_args__ = (Index("ix_alerts_run", "run_id"),)

    stop_key: str = Field(primary_key=True)
    run_id: str
    status: str
    state: str = "claimed"  # claimed | sent | failed
    claimed_by: str
    claimed_at: float
    sent_at: float | None = None
    attempts: int = 0
    error: str | None = Field(default=None, sa_column=Column(Text))
    event_json: str = Field(sa_column=Column(Text, nullable=False))


runs = RunRow.__table__  # type: ignore[attr-defined]
checkpoints = CheckpointRow.__table__  # type: ignore[attr-defined]
steps = StepRow.__table__  # type: ignore[attr-defined]
effects = EffectRow.__table__  # type: ignore[attr-defined]
decisions = DecisionRow.__table__  # type: ignore[attr-defined]
meta = Meta.__table__  # type: ignore[attr-defined]
sources = SourceRow.__table__  # type: ignore[attr-defined]
alerts = AlertRow.__table__  # type: ignore[attr-defined]

#: Tables added after version 1, by the version that added them: an older
#: store opened read-only has none of them, and readers answer "nothing stored".
ADDED_IN: dict[str, int] = {"phasegate_sources": 2, "phasegate_alerts": 2}

#: Columns added to existing tables, by (table, column): the version that
#: added them and the column's SQL type and default, as `ALTER TABLE` takes it.
ADDED_COLUMNS: dict[tuple[str, str], tuple[int, str]] = {
    ("phasegate_runs", "effects_last"): (3, "TEXT"),
    ("phasegate_runs", "effects_count"): (3, "INTEGER NOT NULL DEFAULT 0"),
    ("phasegate_effects", "prev_key"): (3, "TEXT"),
    ("phasegate_effects", "seal"): (3, "TEXT"),
    ("phasegate_effects", "reconcilable"): (3, "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("phasegate_effects", "redo_on_rewind"): (3, "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("phasegate_effects", "reconcile_json"): (3, "TEXT"),
}
