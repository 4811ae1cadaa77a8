# For mypy only (pyproject's [tool.mypy] mypy_path). mypy checks the engine as
# the folder `engine` and cannot follow the editable install's import hook from
# `phasegate` to it; this stub says `phasegate` is that folder's public API. A
# star import re-exports exactly the module's `__all__`, so the console is
# checked against the engine's own sources and against nothing else of them
# (a name that moved to `phasegate.ops` is an error here, not a warning).
from engine import *  # noqa: F403
