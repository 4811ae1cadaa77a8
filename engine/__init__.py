"""phasegate's engine: resumable workflows of phases, checkpointed to a store.

The public API is what this module exports; everything else is private.
"""

from ._states import (
    Action,
    ActionName,
    BlockKind,
    BlockKindName,
    EffectState,
    EffectStateName,
    OutcomeStatus,
    PhaseState,
    PhaseStateName,
    RunStatus,
    RunStatusName,
)
from .context import PhaseContext
from .decisions import Preview
from .engine import Engine, default_db
from .errors import (
    AlreadyDecided,
    DecisionError,
    LeaseLost,
    PhasegateError,
    RunHeld,
    RunNotFound,
    StoreError,
    UsageError,
    WorkflowError,
)
from .outcome import BlockReason, Outcome
from .prune import PruneCandidate
from .views import RunSummary, RunView
from .workflow import Workflow

__all__ = [
    "Action",
    "ActionName",
    "AlreadyDecided",
    "BlockKind",
    "BlockKindName",
    "BlockReason",
    "DecisionError",
    "EffectState",
    "EffectStateName",
    "Engine",
    "LeaseLost",
    "Outcome",
    "OutcomeStatus",
    "PhaseContext",
    "PhaseState",
    "PhaseStateName",
    "PhasegateError",
    "Preview",
    "PruneCandidate",
    "RunHeld",
    "RunNotFound",
    "RunStatus",
    "RunStatusName",
    "RunSummary",
    "RunView",
    "StoreError",
    "UsageError",
    "Workflow",
    "WorkflowError",
    "default_db",
]
