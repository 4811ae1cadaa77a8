"""What `Engine.verify` found: a report for each run, or for a store whose
schema this engine does not know, one report for the store as a whole.

Each report's `to_json()` is the object `phasegate verify --json` prints
for it, key for key and in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..history.chain import IntegrityFailure
from ..history.seals import EffectDamage
from ..history.trail import Damage


@dataclass(frozen=True)
class LostOutput:
    """A done phase of a run's trusted chain whose output cannot be had now:
    the chain verifies, but what it vouches for is gone (a stored copy lost,
    an archive deleted or altered)."""

    phase: str
    """The phase whose output is lost."""
    seq: int
    """The checkpoint that vouches for the output."""
    message: str
    """One line for the operator: `output of PHASE is lost: WHY`."""

    def to_json(self) -> dict[str, Any]:
        """The lost output as `verify --json` prints it.

        Returns:
            `phase`, `seq` and `message`.
        """
        return {"phase": self.phase, "seq": self.seq, "message": self.message}


@dataclass(frozen=True)
class VerifyReport:
    """What verify found in one run's stored history."""

    run_id: str
    """The run verified."""
    checkpoints: int
    """Checkpoints of the run's live chain that were read."""
    bytes: int
    """The envelope and output bytes read and hashed (UTF-8 bytes, not characters)."""
    failure: IntegrityFailure | None = None
    """The first checkpoint (or the inputs) the chain cannot vouch for; None when it verifies."""
    lost: tuple[LostOutput, ...] = ()
    """Outputs the verified chain vouches for that cannot be read now."""
    effects: tuple[EffectDamage, ...] = ()
    """Effect records the run's history does not vouch for."""
    decisions: tuple[Damage, ...] = ()
    """Decision rows the run's history does not vouch for, or whose state no
    recorded transition explains, and message rows it does not vouch for
    (`kind` "message") (history/trail.py)."""
    seals: str = "plain"
    """The kind of seal the store carries: `plain` (SHA-256, no key) or `keyed:<key id>`."""

    @property
    def ok(self) -> bool:
        """True when the chain, every effect record and every decision verify (outputs may still be `lost`)."""
        return self.failure is None and not self.effects and not self.decisions

    def to_json(self) -> dict[str, Any]:
        """The report as `verify --json` prints it.

        Returns:
            `run_id`, `ok`, `checkpoints`, `bytes`, `failure` and `lost`;
            `effects` when its effect records are damaged.
        """
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "ok": self.ok,
            "checkpoints": self.checkpoints,
            "bytes": self.bytes,
            "failure": self.failure.as_dict() if self.failure else None,
            "lost": [x.to_json() for x in self.lost],
        }
        if self.effects:  # present only when there is some: the JSON of a whole store is unchanged
            out["effects"] = [d.as_dict() for d in self.effects]
        if self.decisions:
            out["decisions"] = [d.as_dict() for d in self.decisions]
        if self.seals != "plain":  # a store sealed without a key prints as it always did
            out["seals"] = self.seals
        return out


@dataclass(frozen=True)
class PolicyReport:
    """The store's policy history is damaged (history/trail.py): a report
    for the store as a whole, beside its runs'."""

    damage: tuple[Damage, ...]
    """The policy changes its history does not vouch for."""
    seals: str = "plain"
    """The kind of seal the store carries (as `VerifyReport.seals`)."""
    run_id: ClassVar[None] = None
    """No run: the report is the store's."""
    ok: ClassVar[Literal[False]] = False
    """Never: a damaged policy decides which decisions needed a second."""

    def to_json(self) -> dict[str, Any]:
        """The report as `verify --json` prints it."""
        return {"run_id": None, "ok": False, "policy": [d.as_dict() for d in self.damage], "seals": self.seals}


@dataclass(frozen=True)
class UnknownSchema:
    """The store as a whole cannot be verified: its schema version is newer
    than this engine knows, or not a number. No run of it was read."""

    message: str
    """Which version the store says it is, and why that cannot be read."""
    run_id: ClassVar[None] = None
    """No run: the report is the store's."""
    ok: ClassVar[Literal[False]] = False
    """Never: nothing of the store can be trusted."""

    def to_json(self) -> dict[str, Any]:
        """The report as `verify --json` prints it.

        Returns:
            One object: no run id, not ok, a `schema` failure with its message.
        """
        return {"run_id": None, "ok": False, "failure": {"what": "schema", "message": self.message}}


@dataclass(frozen=True)
class UnmarkedStore:
    """The process holds a seal key and the store carries no mark of one
    (no meta row, no keyed seal on its newest records): a keyed store whose
    marks were taken away, or one never keyed. Its runs are still checked
    as plain-sealed, and this report says the store could not be checked
    under the key."""

    message: str
    """What was found, and what to do about it."""
    run_id: ClassVar[None] = None
    """No run: the report is the store's."""
    ok: ClassVar[Literal[False]] = False
    """Never: a key was given, and nothing in the store is sealed under it."""

    def to_json(self) -> dict[str, Any]:
        """The report as `verify --json` prints it.

        Returns:
            One object: no run id, not ok, a `seal` failure with its message.
        """
        return {"run_id": None, "ok": False, "failure": {"what": "seal", "message": self.message}}
