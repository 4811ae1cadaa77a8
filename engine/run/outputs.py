"""The outputs of done phases that later phases read, as this run has them.

An output comes from the run's verified chain, or from its archive when it
was pruned there and its bytes still hash to what the chain says. Each phase
(and each attempt of it) is handed its own copy parsed from the stored JSON,
so what it sees is exactly what a resume would read (keys in sorted order,
lists where the producer returned tuples), and a phase that mutates what it
was given cannot change what a later phase, a later attempt, or a resume
sees.

The stored JSON is kept, and parsed only when a phase is handed it: an
output no later phase reads is never parsed (at 1 MB the parse cost as much
as the commit). A copy that was parsed already on the way in (the encoder's
check of a null, a resume's verify of the chain) and that nothing else will
read is handed to the first phase that asks, instead of a second parse.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from .. import _json
from ..authoring.workflow import Phase, Workflow
from ..history import archive, chain
from .stepcalls import rehydrate


class PhaseOutputs:
    def __init__(self, wf: Workflow) -> None:
        self._wf = wf
        self._stored: dict[str, tuple[str | bytes, bool]] = {}
        """Each output's JSON as stored, and whether orjson wrote it (`_json.Encoded.by_orjson`)."""
        self._fresh: dict[str, Any] = {}
        """A copy already parsed from the stored JSON that no one holds yet."""
        self.hashes: dict[str, str] = {}
        """Output hash of each phase this run has the output of."""

    def __contains__(self, name: str) -> bool:
        return name in self._stored

    def available(self, state: chain.Folded, name: str) -> bool:
        """Whether done phase `name`'s output can be had; loads it if so."""
        if name in self:
            return True
        d = state.done.get(name)
        if d is None:
            return False
        e = d.entry
        if e.output_ok:
            # The verify parsed it for this start; only this reads it from there.
            self._keep(name, e.row.output_json, e.output, e.env["output_hash"])
            return True
        if e.row.output_state == "archived" and e.row.archive_path:
            text = archive.restore_text(Path(e.row.archive_path), e.env.get("output_hash"))
            if text is archive.MISSING:
                return False
            try:
                value = _json.loads(text)
            except ValueError:
                return False
            if self._wf.check_output(name, value) is None:
                self._keep(name, text, value, e.env["output_hash"])
                return True
        return False

    def put(self, name: str, text: str, encoded: _json.Encoded, digest: str) -> None:
        """The output a phase just checkpointed: the text that was stored
        (`encoded.data` as text). The text is kept rather than the bytes: the
        text lives on in the store's statement anyway, and keeping the bytes
        as well cost about 140 more page faults a 1 MB boundary (a fresh 1 MB
        buffer each time), more than the parse from bytes saves."""
        self._stored[name] = (text, encoded.by_orjson)
        if encoded.parsed is _json.MISSING:
            self._fresh.pop(name, None)
        else:
            self._fresh[name] = encoded.parsed
        self.hashes[name] = digest

    def _keep(self, name: str, text: str, value: Any, digest: str) -> None:
        # Text read back from a store may hold integers past 64 bits: the
        # standard library's parser, as a resume's.
        self._stored[name] = (text, False)
        self._fresh[name] = value
        self.hashes[name] = digest

    def handed(self, name: str) -> Any:
        """A copy of `name`'s output for one phase (or attempt), as its type declares it."""
        if name in self._fresh:
            value = self._fresh.pop(name)
        else:
            value = _json.loads_canonical(*self._stored[name])
        return rehydrate(self._wf.get(name).output_type, value)

    def kwargs(self, p: Phase, missing: set[str]) -> dict[str, Any]:
        """The outputs a phase is called with; None for a missing one it has no default for."""
        kwargs = {n: self.handed(n) for n in p.needs if n not in missing}
        # Only a degraded phase needs its signature: ~10 us saved per boundary.
        params = inspect.signature(p.fn).parameters if missing else {}
        for n in missing:
            prm = params.get(n)
            if prm is not None and prm.default is inspect.Parameter.empty:
                kwargs[n] = None
        return kwargs
