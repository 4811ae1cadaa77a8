"""The messages sent into a run, as an operator sees them (`RunView.messages`).

Each is shown with its state: `queued` (waiting in the run's queue),
`delivered` (a phase received it), `refused` (the receiving phase's type
refused it: kept, never handed on), `kept` (queued on a cancelled run: it
is never delivered), or `damaged` (its seal does not vouch for it: it is
never delivered either). The value is stored data: shown through the
safe-text rule by whoever prints it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from .. import _json
from ..history import trail
from ..history.keys import SealKey
from ..states import RunStatus
from ..timefmt import iso

MessageState = Literal["queued", "delivered", "refused", "kept", "damaged"]
"""What became of a message sent into a run."""


@dataclass(frozen=True)
class MessageView:
    """One message sent into a run (`phasegate send`)."""

    id: int
    """Its id."""
    topic: str
    """The topic a phase receives it on."""
    value: Any
    """The value sent (JSON; None when its stored text does not parse)."""
    operator: str
    """Who sent it."""
    account: str
    """The OS account it was sent from."""
    reason: str
    """Why, in the sender's words."""
    at: float
    """When it was sent (UNIX seconds; ISO 8601 in the JSON)."""
    state: MessageState
    """queued, delivered, refused, kept (a cancelled run's) or damaged."""
    phase: str | None = None
    """The phase that received (or refused) it."""
    taken_at: float | None = None
    """When it was received (or refused)."""
    refused: str | None = None
    """Why the receiving phase's type refused it."""

    @property
    def pending(self) -> bool:
        """Whether it still waits for a phase to receive it."""
        return self.state == "queued"

    def to_json(self) -> dict[str, Any]:
        """As `status --json` prints it (`messages`).

        Returns:
            Every field, times as ISO 8601; `refused` only when set.
        """
        d = asdict(self)
        d["at"] = iso(self.at)
        d["taken_at"] = iso(self.taken_at)
        if self.refused is None:
            del d["refused"]
        return d


def messages_of(rows: list[Any], status: RunStatus, key: SealKey | None) -> tuple[MessageView, ...]:
    """The run's message rows as views, oldest first.

    Args:
        rows: Its message rows (store/_messages.py), oldest first.
        status: The run's status (a cancelled run's queued messages are kept, not pending).
        key: The store's seal key.

    Returns:
        One view a message.
    """
    out: list[MessageView] = []
    for r in rows:
        try:
            value = _json.loads(r.value_json)
        except ValueError:
            value = None
        state: MessageState = r.state if r.state in ("queued", "delivered", "refused") else "damaged"
        if not trail.message_vouched(r, key):
            state = "damaged"
        elif state == "queued" and status is RunStatus.CANCELLED:
            state = "kept"
        out.append(
            MessageView(
                id=int(r.id),
                topic=str(r.topic),
                value=value,
                operator=str(r.operator),
                account=str(r.account),
                reason=str(r.reason),
                at=float(r.at),
                state=state,
                phase=r.phase,
                taken_at=float(r.taken_at) if r.taken_at is not None else None,
                refused=r.refused,
            )
        )
    return tuple(out)
