"""phasegate: resumable workflows of phases, checkpointed to a store.

The public API is two modules. This one is for workflow authors and the
scripts that run and oversee their runs: `Workflow`, `PhaseContext`,
`Engine`, and the outcomes, views, decisions, states and errors those return
or raise. `phasegate.ops` is for tools built on the engine (the console, a
web front end): the default store, the change feed, safe display of stored
text, who is acting. Everything else is internal, whatever its name, and may
change without notice.

Internally the engine is layers, lowest first; a module imports only from its
own layer or those below (tests/unit/test_layers.py):

- base modules (`errors`, `states`, `outcome`, `safetext`, ...): shapes and
  rules that know no store;
- `history`: the verified record of a run (hash chain, seals, archive, prune);
- `store`: the tables, migrations and backends (SQLite, PostgreSQL);
- `authoring`: what an author writes (the `Workflow`) and how it is loaded;
- `run`: running a workflow, phase by phase, checkpointed;
- `views`: the run as an operator sees it, read from the store alone;
- `oversight`: who is acting, claims, and the store's policy;
- `decide`: an operator's decision, from fit to record;
- `engine`: the `Engine` facade over all of them;
- `alerts`: `phasegate watch` and its hooks;
- `cli`: the `phasegate` command and the worker.

Names are loaded on first use (PEP 562), so `import phasegate` stays cheap:
a command that only registers itself, or `phasegate --help`, does not pay
for the store's driver and ORM. A name that moved to `phasegate.ops` still
loads from here, with a DeprecationWarning.
"""

from __future__ import annotations

import importlib
import logging as _logging
import warnings as _warnings
from typing import TYPE_CHECKING, Any

# As lazy as this module, so loading it costs nothing: `phasegate.ops` works
# after `import phasegate`, and its `__all__` is the list of names that warn here.
from . import ops

# A library leaves its output to the application: without a handler of the
# application's, Python's last resort would print warnings to stderr.
_logging.getLogger("phasegate").addHandler(_logging.NullHandler())

if TYPE_CHECKING:
    from .authoring.reconcile import Reconciled
    from .authoring.sources import CodeDiff
    from .authoring.workflow import Workflow
    from .decide.batch import GroupRefused
    from .decide.causes import Cause, CauseKind
    from .decide.fit import NO_RESULT, NO_VALUE, Decision
    from .decide.preview import Preview
    from .engine import Engine
    from .errors import (
        AlreadyDecided,
        CauseNotFound,
        ClaimedByOther,
        DecisionError,
        ExitCode,
        HolderStalled,
        LeaseLost,
        PhasegateError,
        RunCancelled,
        RunHeld,
        RunNotFound,
        RunPaused,
        SameOperator,
        StoreError,
        UsageError,
        WorkflowError,
    )
    from .history.chain import IntegrityFailure
    from .history.prune import PruneCandidate
    from .history.seals import EffectDamage
    from .outcome import BlockReason, Outcome
    from .oversight.policy import Policy
    from .run.asynccontext import AsyncPhaseContext
    from .run.frontier import Frontier
    from .run.phasecontext import PhaseContext
    from .run.stopping import Interrupted, StopRequest
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
        WaitKind,
        WaitKindName,
    )
    from .upkeep.reports import LostOutput, UnknownSchema, VerifyReport
    from .views.follow import (
        DecisionEvent,
        EffectEvent,
        FollowEvent,
        PhaseEvent,
        ProgressEvent,
        StatusEvent,
        StepEvent,
    )
    from .views.models import (
        ClaimEvent,
        ClaimView,
        DecisionView,
        EffectView,
        LeaseView,
        OutputView,
        PhaseView,
        QuestionView,
        RunSummary,
        RunView,
    )
    from .views.patches import PatchReport
    from .views.progress import ProgressView
    from .views.runspage import RunsPage
    from .views.workers import WorkerView
    from .waits import NoAnswer, RetryLater

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
            "WaitKind",
            "WaitKindName",
        ),
        ".states",
    ),
    "RetryLater": ".waits",
    "NoAnswer": ".waits",
    "QuestionView": ".views.models",
    "NO_VALUE": ".decide.fit",
    "PhaseContext": ".run.phasecontext",
    "AsyncPhaseContext": ".run.asynccontext",
    "StopRequest": ".run.stopping",
    "Interrupted": ".run.stopping",
    "Cause": ".decide.causes",
    "CauseKind": ".decide.causes",
    "GroupRefused": ".decide.batch",
    "Preview": ".decide.preview",
    "Decision": ".decide.fit",
    "NO_RESULT": ".decide.fit",
    "Engine": ".engine",
    **dict.fromkeys(
        (
            "AlreadyDecided",
            "CauseNotFound",
            "ClaimedByOther",
            "DecisionError",
            "ExitCode",
            "HolderStalled",
            "LeaseLost",
            "PhasegateError",
            "RunHeld",
            "RunNotFound",
            "RunPaused",
            "RunCancelled",
            "SameOperator",
            "StoreError",
            "UsageError",
            "WorkflowError",
        ),
        ".errors",
    ),
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
        ".views.models",
    ),
    "CodeDiff": ".authoring.sources",
    "RunView": ".views.models",
    "PatchReport": ".views.patches",
    "ProgressView": ".views.progress",
    **dict.fromkeys(
        (
            "FollowEvent",
            "StatusEvent",
            "StepEvent",
            "EffectEvent",
            "PhaseEvent",
            "ProgressEvent",
            "DecisionEvent",
        ),
        ".views.follow",
    ),
    "RunsPage": ".views.runspage",
    "Frontier": ".run.frontier",
    "WorkerView": ".views.workers",
    "Workflow": ".authoring.workflow",
    "IntegrityFailure": ".history.chain",
    "EffectDamage": ".history.seals",
    **dict.fromkeys(("LostOutput", "UnknownSchema", "VerifyReport"), ".upkeep.reports"),
}

__all__ = [
    "Action",
    "DecisionEvent",
    "EffectEvent",
    "FollowEvent",
    "PhaseEvent",
    "ProgressEvent",
    "ProgressView",
    "StatusEvent",
    "StepEvent",
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
    "EffectDamage",
    "EffectState",
    "EffectStateName",
    "AsyncPhaseContext",
    "EffectView",
    "Engine",
    "ExitCode",
    "Frontier",
    "GroupRefused",
    "HolderStalled",
    "IntegrityFailure",
    "Interrupted",
    "LeaseLost",
    "LeaseView",
    "LostOutput",
    "NO_RESULT",
    "NO_VALUE",
    "NoAnswer",
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
    "QuestionView",
    "Reconciled",
    "RetryLater",
    "RunCancelled",
    "RunHeld",
    "RunNotFound",
    "RunPaused",
    "RunStatus",
    "RunStatusName",
    "RunSummary",
    "RunView",
    "PatchReport",
    "RunsPage",
    "SameOperator",
    "StopRequest",
    "StoreError",
    "UnknownSchema",
    "UsageError",
    "VerifyReport",
    "WaitKind",
    "WaitKindName",
    "WorkerView",
    "Workflow",
    "WorkflowError",
]
assert set(__all__) == set(_WHERE)  # one list for tools, one map for loading


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        if name in ops.__all__:
            # Not cached in globals(), so that every use warns (and stays out
            # of dir()); `from phasegate import X` comes through here too.
            _warnings.warn(
                f"phasegate.{name} is deprecated; import it from phasegate.ops", DeprecationWarning, stacklevel=2
            )
            return getattr(ops, name)
        raise AttributeError(f"module 'phasegate' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
