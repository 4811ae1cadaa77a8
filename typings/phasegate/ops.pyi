# `phasegate.ops` is the engine folder's `ops`, its `__all__` only (see __init__.pyi).
from engine.ops import *  # noqa: F403
