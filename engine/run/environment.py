"""Comparing the world a checkpoint was written against with the world now.

Three things can move: a probe's value (an outside condition), the code of a
phase already done, and the workflow's shape before the frontier. Any of them
stops the run, a probe only when work that is kept read it. Code that changed
in a phase not yet done is the ordinary fix-and-resume, reported but not
blocking; so is a probe that only phases not yet started read.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..authoring.workflow import AGE_PROBE, Workflow
from ..history.chain import Folded


def evaluate(wf: Workflow, names: list[str] | None = None, inputs: Any = None) -> dict[str, Any]:
    """Current probe values. A probe that raises reads as an error value: a
    world we cannot observe is not one we may assume unchanged. A probe that
    takes a parameter is given the run's inputs, so it can look at the files
    that run works on rather than at one global place."""
    values: dict[str, Any] = {}
    for name, probe in wf.probes.items():
        if names is not None and name not in names:
            continue
        try:
            value = probe.fn(inputs) if _takes_inputs(probe.fn) else probe.fn()
            values[name] = _json.loads(_json.dumps(value))
        except Exception as exc:  # noqa: BLE001 - any failure of the probe is a finding
            values[name] = {"probe_error": f"{type(exc).__name__}: {exc}"}
    return values


def _takes_inputs(fn: Any) -> bool:
    try:
        return bool(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a builtin without a signature: called bare
        return False


@dataclass
class Comparison:
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Every compared item, as shown to operators: probe, saved, current, changed, phases."""
    blocking: list[dict[str, Any]] = field(default_factory=list)
    unread: list[dict[str, Any]] = field(default_factory=list)
    """Probes that changed where no kept work read them: the run goes on with the new value."""
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.blocking)


def _declared_by(wf: Workflow, probe: str) -> list[str]:
    return [p.name for p in wf.phases if probe in p.probes]


def compare(
    wf: Workflow,
    state: Folded,
    current: Mapping[str, Any],
    now: float,
    last_codes: Mapping[str, str | None] | None = None,
    kept: Collection[str] | None = None,
) -> Comparison:
    """`kept` names the phases whose work is kept (done, or open with saved
    durable steps or effects). A changed probe blocks only when one of them
    declared it (a probe no phase declares is read by every phase): work that
    has not started simply runs with the new value. None: every phase counts."""
    out = Comparison()
    for name in sorted(set(current) | set(state.probes)):
        saved = state.probes.get(name)
        cur = current.get(name)
        changed = name in state.probes and saved != cur
        declared = _declared_by(wf, name)
        row = {"probe": name, "saved": saved, "current": cur, "changed": changed, "phases": declared}
        out.rows.append(row)
        readers = declared or [p.name for p in wf.phases]
        if changed and (kept is None or any(n in kept for n in readers)):
            out.blocking.append(row)
        elif changed:
            out.unread.append(row)
    for p in wf.phases:
        done = state.done.get(p.name)
        if done is None:
            continue
        changed = not p.runs(done.code)
        row = {
            "probe": f"code:{p.name}",
            "saved": done.code,
            "current": p.code_hash,
            "changed": changed,
            "phases": [p.name],
        }
        out.rows.append(row)
        if changed:
            out.blocking.append(row)
    if state.shape is not None:
        done_names = set(state.done)
        saved_prefix = [s for s in state.shape if s["name"] in done_names]
        cur_prefix = [s for s in wf.shape() if s["name"] in done_names]
        order_saved = [s["name"] for s in state.shape][: len(done_names)]
        order_cur = [s["name"] for s in wf.shape()][: len(done_names)]
        changed = saved_prefix != cur_prefix or order_saved != order_cur
        row = {
            "probe": "shape",
            "saved": _json.dumps(order_saved),
            "current": _json.dumps(order_cur),
            "changed": changed,
            "phases": sorted(done_names),
        }
        out.rows.append(row)
        if changed:
            out.blocking.append(row)
    if wf.max_age is not None and state.last_at is not None:
        age = round(now - state.last_at, 3)
        changed = age > wf.max_age
        row = {
            "probe": AGE_PROBE,
            "saved": f"<= {wf.max_age:g}s",
            "current": f"{age:g}s",
            "changed": changed,
            "phases": _declared_by(wf, AGE_PROBE) or [p.name for p in wf.phases if p.name not in state.done],
        }
        out.rows.append(row)
        if changed:
            out.blocking.append(row)
    if last_codes:
        for p in wf.phases:
            before = last_codes.get(p.name)
            if p.name not in state.done and before is not None and not p.runs(before):
                out.notes.append(f"code of phase {p.name} changed; it is not done yet, so it runs the new code")
    return out


def fingerprint(
    wf: Workflow, probes: Mapping[str, Any], phase_code: str | None, at: float, *, with_shape: bool = True
) -> dict[str, Any]:
    """The environment marker a checkpoint records. The workflow's shape is
    recorded only where it differs from the one the chain last recorded
    (`with_shape`): unchanged, it would be re-encoded at every boundary."""
    return {
        "at": at,
        "probes": dict(probes),
        "workflow_code": wf.code_version(),
        "phase_code": phase_code,
        "shape": wf.shape() if with_shape else None,
    }


def describe(rows: list[dict[str, Any]]) -> str:
    parts = []
    for r in rows:
        if r["probe"].startswith("code:"):
            parts.append(f"code of done phase {r['probe'][5:]} changed")
        elif r["probe"] == "shape":
            parts.append(f"workflow shape changed before the frontier ({r['saved']} -> {r['current']})")
        elif r["probe"] == AGE_PROBE:
            parts.append(f"checkpoint is {r['current']} old, older than max_age {r['saved'][3:]}")
        elif isinstance(r["saved"], dict) and isinstance(r["current"], dict):
            # An object's keys that differ, not two cut JSON texts that look alike.
            keys = sorted({*r["saved"], *r["current"]}, key=str)
            moved = [
                f"{k} {_short(r['saved'].get(k), 24)} -> {_short(r['current'].get(k), 24)}"
                for k in keys
                if r["saved"].get(k) != r["current"].get(k)
            ]
            parts.append(f"probe {r['probe']} changed: {', '.join(moved)}")
        else:
            parts.append(f"probe {r['probe']} changed: {_short(r['saved'])} -> {_short(r['current'])}")
    return "; ".join(parts)


def _short(v: Any, n: int = 40) -> str:
    s = _json.dumps(v) if not isinstance(v, str) else v
    return s if len(s) <= n else s[: n - 3] + "..."
