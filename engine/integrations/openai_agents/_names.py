"""The stored names of a run's steps, effects and questions: stable, pinned by
tests/integrations/test_openai_agents_names.py (stored runs are found by them)."""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Any

from ...errors import UsageError
from ...ids import validate_name
from ...run.asynccontext import AsyncPhaseContext

PREFIX = "openai-agents"
"""The first part of every step, effect and question name this adapter records."""


def _part(call_id: Any) -> str:
    """A call id as part of a name: itself when it is a fine name, else a digest of it."""
    text = call_id if isinstance(call_id, str) else json.dumps(call_id, default=str)
    try:
        validate_name("step", f"{PREFIX}.99:approve:{text}")
    except UsageError:
        return "sha256-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return text


_runs: weakref.WeakKeyDictionary[AsyncPhaseContext, int] = weakref.WeakKeyDictionary()
"""How many `PhasegateRunner.run` calls each execution of a phase has made."""


def run_prefix(ctx: AsyncPhaseContext) -> str:
    """The prefix of the next `PhasegateRunner.run` of this phase execution.

    Args:
        ctx: The running phase.

    Returns:
        `openai-agents` for the phase's first run, `openai-agents.2` for its second...
    """
    n = _runs.get(ctx, 0) + 1
    _runs[ctx] = n
    return PREFIX if n == 1 else f"{PREFIX}.{n}"
