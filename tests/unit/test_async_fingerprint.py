"""An async phase is fingerprinted like a sync one: its code and what it calls."""

from __future__ import annotations

import textwrap
from pathlib import Path

from phasegate.authoring.loader import load


def _wf(tmp_path: Path, name: str, body: str) -> object:
    src = tmp_path / f"{name}.py"
    src.write_text(
        textwrap.dedent(
            f"""
            from phasegate import Workflow
            wf = Workflow("fp")

            async def helper(x):
                return x {body}

            @wf.phase()
            async def think(ctx):
                return await helper(1)
            """
        )
    )
    return load(f"{src}:wf", isolated=True)


def test_an_async_phase_and_the_async_function_it_calls_are_in_its_fingerprint(tmp_path: Path) -> None:
    a = _wf(tmp_path, "a", "+ 1")
    b = _wf(tmp_path, "b", "+ 1")
    c = _wf(tmp_path, "c", "+ 2")
    (pa,), (pb,), (pc,) = a.phases, b.phases, c.phases  # type: ignore[attr-defined]
    assert pa.is_async and pa.code_hash == pb.code_hash
    assert pa.code_hash != pc.code_hash  # a change in the awaited helper is a code change
