"""Which recorded decisions an AI assistant made: the one rule, read by the
views (the status, the console, the alerts) and by the identities a second is
judged on (oversight/identity.py).

An assistant behind `phasegate mcp` runs under a person's OS account but is
not that person: what it records carries "/mcp:NAME" after the account, and
its operator name is in the assistants' namespace ("mcp:..."), unless the
server was given one (`--operator`).
"""

from __future__ import annotations

import re
import unicodedata

MARK = "/mcp:"
"""Joins an account and an assistant's name in the stored `account` text
("ada/mcp:claude-ai"); a passwd name holds no "/"."""

PREFIX = "mcp:"
"""The operator names of assistants ("mcp:claude-ai"): `phasegate mcp` names
its client so; a person whose name starts so counts as an assistant."""

_NAME = re.compile(r"[^A-Za-z0-9._-]+")
#: An assistant's name is cut to this many characters.
NAME_WIDTH = 64


def assistant_of(operator: str | None, account: str | None) -> str | None:
    """Whether a stored operator and account are an AI assistant's, and its name.

    Args:
        operator: The recorded operator name.
        account: The recorded account text.

    Returns:
        The assistant's name as recorded (its operator name), or None when a
        person recorded it.
    """
    _acc, sep, _name = (account or "").partition(MARK)
    folded = unicodedata.normalize("NFKC", operator or "").casefold()
    if sep or folded.startswith(PREFIX):
        return str(operator)
    return None


def client_name(name: str | None) -> str:
    """The operator name of an MCP client, from the name it gave itself
    (`clientInfo.name`, which the client chooses): "mcp:" and the name cut to
    letters, digits, ".", "_" and "-".

    Args:
        name: The client's name, or None when it gave none.

    Returns:
        "mcp:NAME" ("mcp:unknown" for a name with nothing left).
    """
    cleaned = _NAME.sub("-", name or "").strip("-.")[:NAME_WIDTH]
    return PREFIX + (cleaned or "unknown")
