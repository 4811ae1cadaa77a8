"""The idempotency key an effect tool call reads while it runs."""

from __future__ import annotations

import contextvars

from ...errors import UsageError

current_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("phasegate_openai_agents_key", default=None)
"""The key of the effect tool call running in this context (set by the journal's tool wrapper)."""


def effect_key() -> str:
    """The idempotency key of the effect tool call running now.

    A tool named in `PhasegateRunner.run`'s `effects` gets one key per call,
    the same on every attempt of that call: send it to the service that acts
    (an `Idempotency-Key` header) so that an attempt cut off by a crash and
    made again is done once.

    Returns:
        The key of the effect this tool call is.

    Raises:
        UsageError: not called from inside a tool that `effects` names.
    """
    key = current_key.get()
    if key is None:
        raise UsageError("effect_key() is only known inside a tool call that PhasegateRunner.run's effects=(...) names")
    return key
