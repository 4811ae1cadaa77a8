"""The `phasegate` command: its parser, its commands, how it prints, and the
worker daemon (`phasegate worker`).

Top of the engine's layers: it may import every other subpackage; nothing in
the engine imports it. `main` is the console script's entry point.
"""

from __future__ import annotations

from .main import build_parser, main

__all__ = ["build_parser", "main"]
