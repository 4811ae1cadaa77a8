"""What importing the adapter says when the SDK cannot be imported (it imports no SDK itself)."""

from __future__ import annotations

import importlib.util
import sys


def missing() -> str:
    """Why the SDK cannot be imported, in one line: not installed, or another `agents` in its place.

    Returns:
        The message for the `ImportError`: which extra to install, or what shadows the SDK.
    """
    found = sys.modules.get("agents")
    where = getattr(found, "__file__", None)
    if where is None:
        try:
            spec = importlib.util.find_spec("agents")
        except (ImportError, ValueError):
            spec = None
        where = spec.origin if spec is not None else None
    if where is not None and "site-packages" not in str(where) and "dist-packages" not in str(where):
        return (
            f"phasegate.integrations.openai_agents: the module 'agents' found at {where} is not the OpenAI "
            "Agents SDK; a file or folder named agents beside your workflow shadows it: rename it"
        )
    return "phasegate.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'phasegate[openai-agents]'"
