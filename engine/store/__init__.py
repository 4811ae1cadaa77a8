"""The store: its tables (`schema`), migrations, the per-table reads and
writes, the hot path of raw SQL, and each backend's specifics (SQLite,
PostgreSQL).

Layer: above `history` (migrations verify what they carry over); below
every part that reads or writes a run.
"""
