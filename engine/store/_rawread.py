"""Rows of a table read straight through the sqlite3 driver, for a read over
a whole store (a verify reads every run, checkpoint and effect row).

The rows have the columns and values SQLAlchemy's rows have (its own result
processors convert them: booleans), with attribute and `_mapping` access,
without its work per statement and per row: for a verify that work cost more
than reading the rows (bench/RESULTS.md, verify-fast). Columns are named
from the table's definition, as SQLAlchemy names them, so a store without one
fails the same way.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite

from . import _sqlite
from .schema import checkpoints

_DIALECT = SQLiteDialect_pysqlite()


def _row_type(name: str, fields: Sequence[str]) -> Any:
    """A named tuple with SQLAlchemy's row's `_mapping`."""
    base: Any = namedtuple(name, fields)  # type: ignore[misc]  # fields known only at run time
    return type(name, (base,), {"__slots__": (), "_mapping": property(lambda self: self._asdict())})


class Reader:
    """One table's rows: `rows(raw, where, params)` runs `SELECT <columns>
    FROM <table> WHERE <where>` on a sqlite3 connection. `as_sql` replaces a
    column's expression (keeping its name); `extra` adds named expressions."""

    def __init__(
        self, table: Any, *, as_sql: Mapping[str, str] | None = None, extra: Sequence[tuple[str, str]] = ()
    ) -> None:
        as_sql = as_sql or {}
        names = [c.name for c in table.columns]
        exprs = [as_sql.get(n, n) for n in names] + [f"{sql} AS {n}" for n, sql in extra]
        self.table = table
        self.sql = f"SELECT {', '.join(exprs)} FROM {table.name}"
        self.row = _row_type(f"{table.name}_row", names + [n for n, _ in extra])
        self._convert = [
            (i, p) for i, c in enumerate(table.columns) if (p := c.type.result_processor(_DIALECT, None)) is not None
        ]

    def rows(self, raw: Any, where: str, params: Sequence[Any]) -> Iterator[Any]:
        cursor: Iterable[Any] = raw.execute(f"{self.sql} WHERE {where}", tuple(params))
        make = self.row._make
        if not self._convert:
            return map(make, cursor)
        return (make(self._converted(values)) for values in cursor)

    def _converted(self, values: Sequence[Any]) -> list[Any]:
        out = list(values)
        for i, convert in self._convert:
            out[i] = convert(out[i])
        return out


#: Checkpoint columns a verify reads as their stored bytes (hashed as stored).
STORED_BYTES = frozenset({"envelope", "output_json"})

#: A checkpoint row as a verify reads it: `envelope` and `output_json` as
#: bytes (`_sqlite.stored_text`). Its checks are `_rowcheck.check_all`'s with
#: `as_bytes=STORED_BYTES`. (The same checks made by SQLite in the query, so
#: that Python checked only the rows it flagged, cost more than they saved:
#: 0.7 ms against 0.5 ms a verify of the bench store.)
LIVE_CHECKPOINTS = Reader(checkpoints, as_sql={c: _sqlite.stored_text(c) for c in STORED_BYTES})
