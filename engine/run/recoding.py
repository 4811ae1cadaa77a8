"""Which code a run's records were written by, while a start decides what
to replay under the code that runs now.

A run's stored shape names each phase's code fingerprint (and its step
functions', `Phase.fns`). A start keeps the recorded fingerprints in the
shape until it runs phases: a start that blocks leaves no trace in it, and
an open phase whose code changed keeps its old fingerprint until it is done,
so a later start (after a kill, or a wait) still checks its replay against
what the old code saved (replay.py). The runner asks this one object what
the records say, tells it what the operator's decisions changed, and takes
from it the shape to store and the phases whose replay is checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import _json
from ..authoring.workflow import Workflow
from ..history import chain
from .effectrecord import EffectRecord
from .ledger import EffectLedger
from .planner import AcceptReplay, Rewind
from .replay import Recoded


class RecordedCode:
    """Each phase's code as one run's records know it, for one execution."""

    def __init__(self, wf: Workflow) -> None:
        """
        Args:
            wf: The workflow as this process declares it.
        """
        self._wf = wf
        self._fns: dict[str, Any] = {}
        """Each phase's step-function fingerprints as the run's shape recorded
        them (`Phase.fns`): kept with its code while `_codes` keeps that."""
        self._codes: dict[str, Any] | None = None
        """Each phase's code fingerprint as the run's records know it: the code
        its saved durable steps were written by. None for a new run, and for
        the phases this start runs once it runs them: they record their own."""
        self.last: dict[str, Any] = {}
        """Phase -> the fingerprint its records are kept under, as this start's
        decisions leave it: what the planner compares the code with."""

    def taken_up(self, shape_json: str) -> None:
        """The run's stored shape, as the start takes the run up: its codes
        are kept until phases run with the new code.

        Args:
            shape_json: The run row's `shape_json`.
        """
        recorded = _json.loads(shape_json)
        self._codes = {p["name"]: p.get("code") for p in recorded}
        self._fns = {p["name"]: p.get("fns") for p in recorded}

    def start(self, shape_json: str) -> dict[str, Any]:
        """The codes the start plans from (the row as the start read it).

        Args:
            shape_json: The run row's `shape_json`.

        Returns:
            Phase -> recorded fingerprint (`last`), changed in place by `applied`.
        """
        self.last = {p["name"]: p.get("code") for p in _json.loads(shape_json)}
        self._codes = self.last
        return self.last

    def applied(self, decision: object) -> None:
        """A decision the start carried out, for what it changes of the codes.

        Args:
            decision: The planner's decision to apply.
        """
        if isinstance(decision, AcceptReplay):
            # The operator took the new code from the divergence on: this
            # phase's code is now the code its records are kept under.
            self.last[decision.phase] = decision.code
        elif isinstance(decision, Rewind):
            # Re-opened phases replay nothing: no older code to check against.
            for name in decision.reopen:
                self.last[name] = None

    def running(self, recode: Iterable[str]) -> dict[str, Recoded]:
        """The start runs phases: only the open phases whose code changed keep
        their old fingerprint in the shape, until they are done.

        Args:
            recode: The open phases whose code changed (the plan's `recode`).

        Returns:
            Phase -> its old code and the new, for the step log's replay check.
        """
        names = list(recode)
        self._codes = {n: self.last.get(n) for n in names}
        now = {p.name: p for p in self._wf.phases}
        old_fns = {n: f for n, f in self._fns.items() if isinstance(f, dict)}
        return {n: Recoded(self.last.get(n), now[n].code_hash, old_fns.get(n, {}), now[n].fns) for n in names}

    def shape_text(self) -> str:
        """The shape to store: the workflow's as declared, with each phase's
        code as recorded until this start runs phases.

        Returns:
            The `shape_json` text.
        """
        shape = self._wf.describe()
        if self._codes is not None:
            for p in shape:
                if self._codes.get(p["name"]) is not None:
                    p["code"] = self._codes[p["name"]]
                    fns = self._fns.get(p["name"])
                    if isinstance(fns, dict):
                        p["fns"] = fns
                    else:
                        p.pop("fns", None)
        return _json.dumps(shape)


def effects_since(ledger: EffectLedger, state: chain.Folded, reset_at: float) -> Callable[[str], list[EffectRecord]]:
    """The effect records of a phase made since it was last re-opened: an
    earlier generation's are kept (a completed effect is never repeated),
    but they are not part of what the phase's replay runs through.

    Args:
        ledger: The run's effect ledger.
        state: The run's trusted state (when each phase was last re-opened).
        reset_at: When the run was last reset.

    Returns:
        Phase -> its effect records of this generation, read when asked.
    """

    def effects_of(phase: str) -> list[EffectRecord]:
        since = max(reset_at, state.reopened_at.get(phase, float("-inf")))
        return [e for e in list(ledger.effects.values()) if e.phase == phase and float(e.intent_at) >= since]

    return effects_of
