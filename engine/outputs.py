"""The outputs of done phases that later phases read, as this run has them.

An output comes from the run's verified chain, or from its archive when it
was pruned there and its bytes still hash to what the chain says. Each phase
is handed its own parsed copy, so a phase that mutates what it was given
cannot change what a later phase, or a resume, sees.

An output this process just checkpointed is kept as the text it stored and
parsed only when a phase is handed it: the copy is then exactly what a resume
would read, and an output no later phase reads is never parsed (at 1 MB the
parse cost as much as the commit).
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
        self._texts: dict[str, tuple[str, bool]] = {}
        self.hashes: dict[str, str] = {}
        """Output hash of each phase this run has the output of."""

    def __contains__(self, name: str) -> bool:
        return name in self._values or name in self._texts

    def available(self, state: chain.Folded, name: str) -> bool:
        """Whether done phase `name`'s output can be had; loads it if so."""
        if name in self:
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

    def put(self, name: str, text: str, digest: str, by_orjson: bool) -> None:
        """The output a phase just checkpointed (as the text that was stored,
        and whether orjson wrote it: see `_json.encode`)."""
        self._values.pop(name, None)
        self._texts[name] = (text, by_orjson)
        self.hashes[name] = digest

    def _keep(self, name: str, value: Any, digest: str) -> None:
        self._texts.pop(name, None)
        self._values[name] = value
        self.hashes[name] = digest

    def handed(self, name: str) -> Any:
        """The value to pass a phase that needs `name`, as its type declares it."""
        stored = self._texts.get(name)
        value = _json.loads_canonical(*stored) if stored is not None else self._values[name]
        return rehydrate(self._wf.get(name).output_type, value)
