"""What a screen needs from the console around it, and no more: the engine,
whether it may write, and the clock. Screens receive it when they are built,
so they never reach up into the app (the app imports the screens, never the
other way round)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from phasegate import Engine, RunView


class ConsoleContext(Protocol):
    """The console's shared parts, as a screen sees them (the app is one)."""

    @property
    def engine(self) -> Engine:
        """The store, reached only through the engine's public API."""

    @property
    def read_only(self) -> bool:
        """True when the console offers no action at all."""

    @property
    def clock(self) -> Callable[[], float]:
        """Now, in seconds; injectable so ages are stable in snapshots."""

    def seen(self, view: RunView) -> None:
        """A screen read this run: the console follows up a notice it gave
        about it (a decision a worker was to carry out, now carried out)."""
