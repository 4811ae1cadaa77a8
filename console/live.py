"""The console's change feed: the engine's, shared with `phasegate watch`
(see `phasegate.ops.watch_store`). Kept under this name for the console's code
and its tests."""

from __future__ import annotations

from phasegate.ops import store_files, watch_store

__all__ = ["store_files", "watch_store"]
