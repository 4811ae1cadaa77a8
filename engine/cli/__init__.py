"""The `phasegate` command: its parser, its commands, how it prints, and the
worker daemon (`phasegate worker`).

Top of the engine's layers: it may import every other subpackage; nothing in
the engine imports it. `main` is the console script's entry point.

- `main`: the entry point (logging, the UTF-8 check on arguments, errors).
- `parser`: `build_parser`, the argument types, the external commands.
- `commands_runs`, `commands_decide`, `commands_upkeep`,
  `commands_background`: the commands, by what they do.
- `args`: the engine on `--db`, JSON arguments; `render`: how runs, views
  and previews are printed.
- `daemon`: the worker.
"""

from __future__ import annotations

from .main import main
from .parser import build_parser

__all__ = ["build_parser", "main"]
