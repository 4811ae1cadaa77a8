"""The store: its tables (`schema`), migrations, the per-table reads and
writes, the hot path of raw SQL, and each backend's specifics (SQLite,
PostgreSQL).

`store.Store` is what the rest of the engine holds: the open database
(`_database`) and one repository per table (`_runs`, `_lease`,
`_checkpoints`, `_steps`, `_effects`, `_decisions`, `_oversight`,
`_sources`, `_alerts`, `_workers`), with `_hotpath`, `_ownrows`, `_seals`
and `_changes` for what spans tables. Each write is a named method with
typed arguments; the backends share one interface (`_dialect.Dialect`).
`_quickread` reads `phasegate status`'s list without SQLAlchemy. No module
outside this package holds SQL or imports a driver
(tests/unit/test_raw_sql.py).

Layer: above `history` (migrations verify what they carry over); below
every part that reads or writes a run.
"""
