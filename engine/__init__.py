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
    from .authoring.reconcile import Reconciled
    from .authoring.sources import CodeDiff, printable
    from .authoring.workflow import Workflow
    from .decide.batch import GroupRefused
    from .decide.causes import Cause, CauseKind
    from .decide.fit import NO_RESULT, Decision, Preview, correctable_effects
    from .engine import Engine
    from .errors import (
        AlreadyDecided,
        CauseNotFound,
        ClaimedByOther,
        DecisionError,
        HolderStalled,
        LeaseLost,
        PhasegateError,
        RunHeld,
        RunNotFound,
        SameOperator,
        StoreError,
        UsageError,
        WorkflowError,
    )
    from .history.prune import PruneCandidate
    from .outcome import BlockReason, Outcome
    from .oversight.identity import WEB_USER_ENV, Who, whoami
    from .oversight.policy import Policy
    from .run.frontier import Frontier
    from .run.phasecontext import PhaseContext
    from .safetext import safe, safe_json
    from .states import (
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
    from .views.build import (
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
    from .views.feed import store_files, watch_store
    from .views.workers import WorkerView

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
        ".states",
    ),
    "PhaseContext": ".run.phasecontext",
    "Cause": ".decide.causes",
    "CauseKind": ".decide.causes",
    "GroupRefused": ".decide.batch",
    "Preview": ".decide.fit",
    "Decision": ".decide.fit",
    "NO_RESULT": ".decide.fit",
    "correctable_effects": ".decide.fit",
    "store_files": ".views.feed",
    "watch_store": ".views.feed",
    "Engine": ".engine",
    "default_db": "._dbpath",
    **dict.fromkeys(
        (
            "AlreadyDecided",
            "CauseNotFound",
            "ClaimedByOther",
            "DecisionError",
            "HolderStalled",
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
    "Who": ".oversight.identity",
    "WEB_USER_ENV": ".oversight.identity",
    "whoami": ".oversight.identity",
    "Policy": ".oversight.policy",
    "BlockReason": ".outcome",
    "Outcome": ".outcome",
    "PruneCandidate": ".history.prune",
    "Reconciled": ".authoring.reconcile",
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
        ".views.build",
    ),
    "CodeDiff": ".authoring.sources",
    "printable": ".authoring.sources",
    "safe": ".safetext",
    "safe_json": ".safetext",
    "RunView": ".views.build",
    "Frontier": ".run.frontier",
    "WorkerView": ".views.workers",
    "Workflow": ".authoring.workflow",
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
    "HolderStalled",
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
