"""A bordered panel of the run detail (outputs, environment, effects...)."""

from __future__ import annotations

from rich.console import RenderableType
from textual.widgets import Static


class InfoPanel(Static):
    """A titled panel. Its content is built from store data as Rich Text or
    tables, so nothing read from the store is parsed as markup."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = title
        """The panel's title, on its border."""

    def show(self, renderable: RenderableType, *, empty: bool = False) -> None:
        """Show `renderable` (Rich text or a table, never markup); `empty` dims the panel."""
        self.set_class(empty, "-empty")
        self.update(renderable)
