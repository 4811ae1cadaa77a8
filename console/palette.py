"""The command palette's source: the console's commands in the order the
app gives them (the operations on the run first), not Textual's A-Z."""

from __future__ import annotations

from textual.command import DiscoveryHit, Hits
from textual.system_commands import SystemCommandsProvider


class ConsoleCommands(SystemCommandsProvider):
    """`App.get_system_commands`, listed as given; searching is Textual's."""

    async def discover(self) -> Hits:
        """What the palette lists before anything is typed: the same commands, the operations first."""
        for name, help_text, callback, discover in self.app.get_system_commands(self.screen):
            if discover:
                yield DiscoveryHit(name, callback, help=help_text)
