"""Refilling a keyed DataTable after a refresh without moving the operator:
the row under the cursor stays under it (found by its key), the scroll
stays, and rows that did not change are not rebuilt. Every list that a
refresh rebuilds asks this, so Enter never opens a run the operator did not
aim at."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable


def selected_key(table: DataTable[Text]) -> str | None:
    """The key of the row under the cursor, or None (an empty table)."""
    if not table.row_count:
        return None
    return str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)


def refill(table: DataTable[Text], rows: Sequence[tuple[str, Sequence[Text]]]) -> None:
    """Show `rows` ((key, cells) each) in this order, the cursor kept on the
    row it was on: by its key when it is still there, else at the same place
    (the next row moves up under it).

    Args:
        table: A table with row cursor and its columns added.
        rows: What to show, by row key.
    """
    keep, at, scroll_y = selected_key(table), table.cursor_row, table.scroll_y
    wanted: dict[str, list[Text]] = {}
    for key, cells in rows:
        wanted.setdefault(key, list(cells))  # one row a key
    shown = {str(r.key.value): [str(c) for c in table.get_row(r.key)] for r in table.ordered_rows}
    if list(shown.items()) == [(k, [c.plain for c in cs]) for k, cs in wanted.items()]:
        return  # nothing changed: no repaint, no cursor move
    table.clear()
    for key, cells in wanted.items():
        table.add_row(*cells, key=key)
    if not table.row_count:
        return
    keys = list(wanted)
    row = keys.index(keep) if keep in keys else min(at, table.row_count - 1)
    table.move_cursor(row=row, animate=False, scroll=False)
    table.scroll_to(y=scroll_y, animate=False, immediate=True)
    table.move_cursor(row=row, animate=False, scroll=True)
