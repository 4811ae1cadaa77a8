"""phasegate: resumable workflows of phases, checkpointed to a store.

The public API is what this module exports; everything else is private.
Names are loaded on first use (PEP 562), so `import phasegate` stays cheap:
a command that only registers itself, or `phasegate --help`, does not pay
for the store's driver and ORM.
"""

from __future__ import annotations

import importlib
import logging as _logging
from typing import TYPE_CHECKING, Any

# A library leaves its output to the application: without a handler of the
# application's, Python's last resort would print warnings to stderr.
_logging.getLogger("phasegate").addHandler(_logging.NullHandler())

if TYPE_CHECKING:
    from ._dbpath import default_db
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
    from .batch import GroupRefused
    from .causes import Cause, CauseKind
    from .context import PhaseContext
    from .decisions import NO_RESULT, Decision, Preview, correctable_effects
    from .engine import Engine
    from .errors import (
        AlreadyDecided,
        CauseNotFound,
        ClaimedByOther,
        DecisionError,
        LeaseLost,
        PhasegateError,
        RunHeld,
        RunNotFound,
        SameOperator,
        StoreError,
        UsageError,
        WorkflowError,
    )
    from .feed import store_files, watch_store
    from .frontier import Frontier
    from .identity import WEB_USER_ENV, Who, whoami
    from .outcome import BlockReason, Outcome
    from .policy import Policy
    from .prune import PruneCandidate
    from .reconcile import Reconciled
    from .safetext import safe, safe_json
    from .sources import CodeDiff, printable
    from .views import (
        ClaimEvent,
        ClaimView,
        DecisionView,
        EffectView,
        LeaseView,
        OutputView,
        PhaseView,
        RunSummary,
        RunView,
    )
    from .workers import WorkerView
    from .workflow import Workflow

#: Public name -> the private module that defines it.
_WHERE: dict[str, str] = {
    **dict.fromkeys(
        (
            "Action",
            "ActionName",
            "BlockKind",
            "BlockKindName",
            "EffectState",
            "EffectStateName",
            "OutcomeStatus",
            "PhaseState",
            "PhaseStateName",
            "RunStatus",
            "RunStatusName",
        ),
        "._states",
    ),
    "PhaseContext": ".context",
    "Cause": ".causes",
    "CauseKind": ".causes",
    "GroupRefused": ".batch",
    "Preview": ".decisions",
    "Decision": ".decisions",
    "NO_RESULT": ".decisions",
    "correctable_effects": ".decisions",
    "store_files": ".feed",
    "watch_store": ".feed",
    "Engine": ".engine",
    "default_db": "._dbpath",
    **dict.fromkeys(
        (
            "AlreadyDecided",
            "CauseNotFound",
            "ClaimedByOther",
            "DecisionError",
            "LeaseLost",
            "PhasegateError",
            "RunHeld",
            "RunNotFound",
            "SameOperator",
            "StoreError",
            "UsageError",
            "WorkflowError",
        ),
        ".errors",
    ),
    "Who": ".identity",
    "WEB_USER_ENV": ".identity",
    "whoami": ".identity",
    "Policy": ".policy",
    "BlockReason": ".outcome",
    "Outcome": ".outcome",
    "PruneCandidate": ".prune",
    "Reconciled": ".reconcile",
    **dict.fromkeys(
        (
            "RunSummary",
            "ClaimEvent",
            "ClaimView",
            "DecisionView",
            "EffectView",
            "LeaseView",
            "OutputView",
            "PhaseView",
        ),
        ".views",
    ),
    "CodeDiff": ".sources",
    "printable": ".sources",
    "safe": ".safetext",
    "safe_json": ".safetext",
    "RunView": ".views",
    "Frontier": ".frontier",
    "WorkerView": ".workers",
    "Workflow": ".workflow",
}

__all__ = [
    "Action",
    "ActionName",
    "AlreadyDecided",
    "BlockKind",
    "BlockKindName",
    "BlockReason",
    "Cause",
    "CauseKind",
    "CauseNotFound",
    "ClaimEvent",
    "ClaimView",
    "ClaimedByOther",
    "Decision",
    "CodeDiff",
    "DecisionError",
    "DecisionView",
    "EffectState",
    "EffectStateName",
    "EffectView",
    "Engine",
    "Frontier",
    "GroupRefused",
    "LeaseLost",
    "LeaseView",
    "NO_RESULT",
    "Outcome",
    "OutcomeStatus",
    "OutputView",
    "PhaseContext",
    "PhaseState",
    "PhaseStateName",
    "PhaseView",
    "PhasegateError",
    "Policy",
    "Preview",
    "PruneCandidate",
    "Reconciled",
    "RunHeld",
    "RunNotFound",
    "RunStatus",
    "RunStatusName",
    "RunSummary",
    "RunView",
    "SameOperator",
    "StoreError",
    "UsageError",
    "WEB_USER_ENV",
    "Who",
    "WorkerView",
    "Workflow",
    "WorkflowError",
    "correctable_effects",
    "default_db",
    "printable",
    "safe",
    "safe_json",
    "store_files",
    "watch_store",
    "whoami",
]
assert set(__all__) == set(_WHERE)  # one list for tools, one map for loading


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'phasegate' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
