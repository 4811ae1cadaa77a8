"""The store's tables, declared once with SQLAlchemy Core.

Core tables, not ORM models: every path reads and writes through Core
statements, and declaring the tables as models cost each command line start
the ORM's and sqlmodel's imports (a third of `phasegate status`'s start, see
bench/). The column types, defaults and indexes are the ones the sqlmodel
models of schema 1 and 2 declared, so the DDL is byte for byte the same.

Times are UNIX seconds (float) so lease and retention arithmetic is exact on
every backend; they become ISO 8601 only when shown.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, Index, Integer, MetaData, String, Table, Text

from .version import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION"]  # declared in version.py, importable from here as always

# Our own metadata keeps phasegate's tables out of `SQLModel.metadata`, which
# belongs to the application (an atomic effect's ledger table lives there).
metadata = MetaData()

meta = Table(
    "phasegate_meta",
    metadata,
    Column("key", String, primary_key=True),
    Column("value", String, nullable=False),
)

#: Keys of `phasegate_meta` besides `schema_version` (version 5): where the
#: policy's history ends and how many changes it has (history/trail.py), and
#: the id of the key the store's seals are made under (history/keys.py; absent:
#: plain hashes).
POLICY_LAST = "policy_last"
POLICY_COUNT = "policy_count"
SEAL_KEY = "seal_key"
#: (version 7) The seal of the policy's head: its newest change's id and seal
#: and the count, sealed as one (keyed where the store is), so a deleted or
#: re-ordered tail with `policy_last`/`policy_count` moved back is found.
POLICY_HEAD = "policy_head"


# One row per run: its identity, inputs, and a summary an operator's list can
# page through without opening any checkpoint. Deliberately few indexes: each
# is rewritten when its columns change, and the checkpoint path changes this
# row at every boundary.
runs = Table(
    "phasegate_runs",
    metadata,
    Column("run_id", String, primary_key=True),
    Column("workflow", String, nullable=False),
    Column("target", String),
    Column("inputs_json", Text, nullable=False),
    Column("inputs_hash", String, nullable=False),
    Column("shape_json", Text, nullable=False),
    Column("status", String, nullable=False),
    Column("epoch", Integer, nullable=False, default=0),
    Column("head_seq", Integer, nullable=False, default=-1),
    Column("head_hash", String, nullable=False, default=""),
    Column("frontier_phase", String),
    Column("frontier_index", Integer, nullable=False, default=0),
    Column("phase_count", Integer, nullable=False, default=0),
    Column("steps_done", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("last_checkpoint_at", Float),
    Column("blocked_json", Text, nullable=False, default="[]"),
    Column("env_json", Text, nullable=False, default="[]"),
    Column("notes_json", Text, nullable=False, default="[]"),
    Column("error_json", Text),
    Column("attention", String, nullable=False, default=""),
    Column("lease_owner", String),
    Column("lease_host", String),
    Column("lease_pid", Integer),
    Column("lease_expires_at", Float),
    Column("heartbeat_at", Float),
    # Version 3 (seals.py): the key of the run's last effect record, and how
    # many it has written, so a deleted record is seen even when nothing
    # else names it.
    Column("effects_last", String),
    Column("effects_count", Integer, nullable=False, default=0),
    # Version 4 (store/_paging.py): the run's place in the attention order
    # as far as it does not depend on the time, kept where its status and
    # decisions change, so the console's default order reads an index.
    Column("attention_rank", Integer, nullable=False, default=3),
    # Version 5 (history/trail.py): the id of the run's last decision and how
    # many it has, so a deleted decision (a second) is seen even when nothing
    # else names it.
    Column("decisions_last", Integer),
    Column("decisions_count", Integer, nullable=False, default=0),
    # Version 6 (run/parking.py, run/holds.py): what a `waiting` run waits
    # for and when a worker wakes it; an operator's hold (a pause or cancel
    # asked of a running run, or in force on a paused or cancelled one).
    Column("wake_at", Float),
    Column("waiting_json", Text),
    Column("held_json", Text),
    # Version 6 (observe/tracing.py): the OpenTelemetry trace id of the run's
    # latest traced attempt, for `status --json` and the console's detail.
    Column("trace_id", String),
    # Version 8 (run/codeversion.py): the code version the run started under
    # and each of its latest attempts', so status, the console and alerts
    # say which code a run waited under and which code resumed it.
    Column("code_json", Text),
    # Version 8 (run/progress.py): the running phase's last-known progress
    # (`ctx.progress`), coalesced to a write every half second at most and
    # cleared by the phase's checkpoint. Kept across a kill: the last thing
    # an operator knew of a phase that stopped midway.
    Column("progress_json", Text),
    Index("ix_runs_status_updated", "status", "updated_at"),
)

#: Version 4: the runs list in attention order, read a page at a time by
#: keyset; and the running runs whose lease has lapsed (interrupted), found
#: without reading the live ones.
ix_runs_rank = Index("ix_runs_rank", runs.c.attention_rank, runs.c.updated_at.desc(), runs.c.run_id)
ix_runs_status_lease = Index("ix_runs_status_lease", runs.c.status, runs.c.lease_expires_at)
#: Version 6: the waiting runs that are due, found without reading the others.
ix_runs_status_wake = Index("ix_runs_status_wake", runs.c.status, runs.c.wake_at)


# One entry of a run's hash chain. `envelope` is the hashed record (position,
# environment, references); the phase output sits beside it in `output_json`,
# hashed inside the envelope, so it can be pruned or archived without breaking
# the chain. kind: phase | rewind | env | degrade; output_state: present |
# pruned | archived | none; status: live | discarded | archived.
checkpoints = Table(
    "phasegate_checkpoints",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", String, nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("kind", String, nullable=False),
    Column("phase", String),
    Column("envelope", Text, nullable=False),
    Column("payload_hash", String, nullable=False),
    Column("prev_hash", String, nullable=False),
    Column("output_json", Text),
    Column("output_state", String, nullable=False, default="none"),
    Column("output_bytes", Integer, nullable=False, default=0),
    Column("archive_path", String),
    Column("created_at", Float, nullable=False),
    Column("status", String, nullable=False, default="live"),
    # Version 5 (history/keys.py): with a seal key, an HMAC over the entry's
    # payload hash, so a chain recomputed by someone without the key is
    # found; NULL in a store sealed without a key (the hashes are the seal).
    Column("seal", String),
    Index("ux_ckpt_run_epoch_seq", "run_id", "epoch", "seq", unique=True),
)


# A durable step's saved result.
steps = Table(
    "phasegate_steps",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", String, nullable=False),
    Column("phase", String, nullable=False),
    Column("step_key", String, nullable=False),
    Column("result_json", Text, nullable=False),
    Column("result_hash", String, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("discarded", Boolean, nullable=False, default=False),
    Index("ix_steps_run_phase", "run_id", "phase", "step_key"),
)


# An effect's intent and, once it happened, its completion. Never deleted: it
# is the memory that an irreversible action already took place. state: intent | done.
effects = Table(
    "phasegate_effects",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", String, nullable=False),
    Column("phase", String, nullable=False),
    Column("name", String, nullable=False),
    Column("key", String, nullable=False),
    Column("state", String, nullable=False),
    Column("idempotent", Boolean, nullable=False, default=False),
    Column("atomic", Boolean, nullable=False, default=False),
    Column("attempt", Integer, nullable=False, default=1),
    Column("retry_ok", Boolean, nullable=False, default=False),
    Column("intent_at", Float, nullable=False),
    Column("done_at", Float),
    Column("result_json", Text),
    Column("result_hash", String),
    Column("confirmed_by", Integer),
    # Version 3: the record's place in the run's history and its seal
    # (seals.py); whether it has a reconcile hook and its last answer (shown,
    # not sealed); whether a rewind gives it a new key.
    Column("prev_key", String),
    Column("seal", String),
    Column("reconcilable", Boolean, nullable=False, default=False),
    Column("redo_on_rewind", Boolean, nullable=False, default=False),
    Column("reconcile_json", Text),
    Index("ix_effects_run", "run_id"),
    Index("ux_effects_key", "key", unique=True),
)


# An operator's decision: stored with who, when and why; never deleted.
# answers: the block kind this decision answers; state: pending | applied | void.
decisions = Table(
    "phasegate_decisions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", String, nullable=False),
    Column("action", String, nullable=False),
    Column("phase", String),
    Column("effect_key", String),
    Column("answers", String),
    Column("reason", Text, nullable=False),
    Column("operator", String, nullable=False),
    Column("at", Float, nullable=False),
    Column("state", String, nullable=False, default="pending"),
    Column("applied_at", Float),
    Column("detail_json", Text, nullable=False, default="{}"),
    # Version 4 (claims and seconds, engine/oversight/identity.py): the OS account that
    # recorded it (an `--operator` text proves nothing); for a proposal, when
    # it lapses unseconded; and the id of the "second" row that let it apply.
    Column("account", String),
    Column("expires_at", Float),
    Column("seconded_by", Integer),
    # Version 4: the decisions one command recorded for a group of runs
    # (`decide --cause`) share this id, so the audit shows them as one act.
    Column("batch_id", String),
    # Version 5 (history/trail.py): the row's place in the run's decision
    # history, its seal, and the policy change in force when it was made.
    Column("prev_id", Integer),
    Column("seal", String),
    Column("policy_id", Integer),
    Index("ix_decisions_run", "run_id", "id"),
    Index("ix_decisions_state", "state"),
)


# The text a phase's code fingerprint covers, once per fingerprint, so a drift
# can be shown as a diff by anyone, without the workflow's code. Added in
# schema version 2.
sources = Table(
    "phasegate_sources",
    metadata,
    Column("code_hash", String, primary_key=True),
    Column("source", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)


# One stop of a run (blocked or failed) that a watch announced, or is
# announcing: the primary key is the claim, so two watches never both send.
# Added in schema version 2. state: claimed | sent | failed.
alerts = Table(
    "phasegate_alerts",
    metadata,
    Column("stop_key", String, primary_key=True),
    Column("run_id", String, nullable=False),
    Column("status", String, nullable=False),
    Column("state", String, nullable=False, default="claimed"),
    Column("claimed_by", String, nullable=False),
    Column("claimed_at", Float, nullable=False),
    Column("sent_at", Float),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", Text),
    Column("event_json", Text, nullable=False),
    Index("ix_alerts_run", "run_id"),
)

# Who is looking at a run (`phasegate claim`). Rows are never deleted: a
# release or a takeover fills `released_*`, an expiry is `expires_at` passing
# with nothing released, so the table is also the claims' audit. Version 4.
claims = Table(
    "phasegate_claims",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", String, nullable=False),
    Column("operator", String, nullable=False),
    Column("account", String, nullable=False),
    Column("claimed_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("released_at", Float),
    Column("released_by", String),
    Column("released_account", String),
    Index("ix_claims_run", "run_id", "id"),
)


# The store-wide policy (`phasegate policy`), one row per change: the newest
# is in force, the rest are its audit. Kept in the store, not in anyone's
# environment, so no operator's settings can bypass it. Version 4.
policy = Table(
    "phasegate_policy",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("require_second_json", Text, nullable=False, default="[]"),
    Column("proposal_seconds", Float, nullable=False),
    Column("web_account", String),
    Column("operator", String, nullable=False),
    Column("account", String, nullable=False),
    Column("at", Float, nullable=False),
    Column("reason", Text, nullable=False),
    # Version 5 (history/trail.py): the change before this one, and its seal;
    # the store's meta names the last change (`policy_last`) and counts them.
    Column("prev_id", Integer),
    Column("seal", String),
)


# One `phasegate worker` process: its heartbeat, written at its start, every
# `every` seconds while it runs and at a clean exit (state stopped), so the
# console and `phasegate workers` can tell whether anything will carry out a
# decision. Added in schema version 4. Times are the lease clock's (the
# server's on PostgreSQL), so workers on several hosts compare. state:
# running | stopped.
workers = Table(
    "phasegate_workers",
    metadata,
    Column("worker_id", String, primary_key=True),
    Column("host", String, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("every", Float, nullable=False),
    Column("jobs", Integer, nullable=False, default=1),
    Column("busy_json", Text, nullable=False, default="[]"),
    Column("handled", Integer, nullable=False, default=0),
    Column("state", String, nullable=False, default="running"),
    Column("stopped_at", Float),
    Index("ix_workers_last_seen", "last_seen"),
)

# A message sent into a run (`phasegate send`, `Engine.send`): what a phase's
# `ctx.recv(topic)` takes, oldest first per topic, exactly once. Sealed and
# linked per run like a decision (history/trail.py); its delivery (state
# queued | delivered | refused, where it was received) is not sealed: the
# durable step that received it records it, hash-checked, in the same
# transaction. Version 8.
messages = Table(
    "phasegate_messages",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", String, nullable=False),
    Column("topic", String, nullable=False),
    Column("value_json", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("operator", String, nullable=False),
    Column("account", String, nullable=False),
    Column("at", Float, nullable=False),
    Column("prev_id", Integer),
    Column("seal", String),
    Column("state", String, nullable=False, default="queued"),
    Column("taken_at", Float),
    Column("phase", String),
    Column("step_key", String),
    Column("refused", Text),
    Index("ix_messages_run_topic", "run_id", "topic", "id"),
)

#: Tables added after version 1, by the version that added them: an older
#: store opened read-only has none of them, and readers answer "nothing stored".
ADDED_IN: dict[str, int] = {
    "phasegate_sources": 2,
    "phasegate_alerts": 2,
    "phasegate_workers": 4,
    "phasegate_claims": 4,
    "phasegate_policy": 4,
    "phasegate_messages": 8,
}

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
    ("phasegate_decisions", "account"): (4, "TEXT"),
    ("phasegate_decisions", "expires_at"): (4, "FLOAT"),
    ("phasegate_decisions", "seconded_by"): (4, "INTEGER"),
    ("phasegate_runs", "attention_rank"): (4, "INTEGER NOT NULL DEFAULT 3"),
    ("phasegate_decisions", "batch_id"): (4, "TEXT"),
    ("phasegate_runs", "decisions_last"): (5, "INTEGER"),
    ("phasegate_runs", "decisions_count"): (5, "INTEGER NOT NULL DEFAULT 0"),
    ("phasegate_checkpoints", "seal"): (5, "TEXT"),
    ("phasegate_decisions", "prev_id"): (5, "INTEGER"),
    ("phasegate_decisions", "seal"): (5, "TEXT"),
    ("phasegate_decisions", "policy_id"): (5, "INTEGER"),
    ("phasegate_policy", "prev_id"): (5, "INTEGER"),
    ("phasegate_policy", "seal"): (5, "TEXT"),
    ("phasegate_runs", "wake_at"): (6, "FLOAT"),
    ("phasegate_runs", "waiting_json"): (6, "TEXT"),
    ("phasegate_runs", "held_json"): (6, "TEXT"),
    ("phasegate_runs", "trace_id"): (6, "TEXT"),
    ("phasegate_runs", "code_json"): (8, "TEXT"),
    ("phasegate_runs", "progress_json"): (8, "TEXT"),
}

#: Indexes added to existing tables, by the version that added them.
ADDED_INDEXES: dict[str, tuple[int, Index]] = {
    "ix_runs_rank": (4, ix_runs_rank),
    "ix_runs_status_lease": (4, ix_runs_status_lease),
    "ix_runs_status_wake": (6, ix_runs_status_wake),
}

#: Keys of `phasegate_meta` a version added, and what an upgrade to it fills
#: (store/migrations.py): version 7 seals the policy's head.
ADDED_META: dict[str, int] = {
    POLICY_HEAD: 7,
}
