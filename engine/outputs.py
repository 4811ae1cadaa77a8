"""The outputs of done phases that later phases read, as this run has them.

An output comes from the run's verified chain, or from its archive when it
was pruned there and its bytes still hash to what the chain says. Each phase
is handed its own parsed copy, so a phase that mutates what it was given
cannot change what a later phase, or a resume, sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import _json, archive, chain
from .context import rehydrate
from .workflow import Workflow


class PhaseOutputs:
    def __init__(self, wf: Workflow) -> None:
        self._wf = wf
        self._values: dict[str, Any] = {}
        self.hashes: dict[str, str] = {}
        """Output hash of each phase this run has the output of."""

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def available(self, state: chain.Folded, name: str) -> bool:
        """Whether done phase `name`'s output can be had; loads it if so."""
        if name in self._values:
            return True
        d = state.done.get(name)
        if d is None:
            return False
        e = d.entry
        if e.output_ok:
            self._keep(name, e.output, e.env["output_hash"])
            return True
        if e.row.output_state == "archived" and e.row.archive_path:
            value = archive.restore(Path(e.row.archive_path), e.env.get("output_hash"))
            if value is not archive.MISSING and self._wf.check_output(name, value) is None:
                self._keep(name, value, e.env["output_hash"])
                return True
        return False

    def put(self, name: str, text: str, digest: str) -> None:
        """The output a phase just checkpointed (as the text that was stored)."""
        self._keep(name, _json.loads(text), digest)

    def _keep(self, name: str, value: Any, digest: str) -> None:
        self._values[name] = value
        self.hashes[name] = digest

    def handed(self, name: str) -> Any:
        """The value to pass a phase that needs `name`, as its type declares it."""
        return rehydrate(self._wf.get(name).output_type, self._values[name])
