"""Figure 3d (#38): what trust round 3's checks cost, on a resume and on
`verify`. The checks: the store's key mark read from its four sealed tables'
newest rows when it opens (four reads on their primary keys), a run row's
status and hold against its sealed decisions (`trail.run_row`, pure, over the
decisions the start sequence and verify read anyway), and the policy's head
against its seal (one more meta row). Each is timed with the checks and with
them turned off (`trail.run_row` answering nothing, the key mark not read),
alternated in one process, on a tmpfs where there is one (as figure 3b: with
fsync out of the way the checks' CPU share is at its largest); the ratio is
the median of the pairs'. The
checkpoint path is not touched by them (its seal was already the store's).

Round 4 of #38 adds, timed alone on a keyed store: the policy's head against
the changes decisions name (`Decisions.policies_named`, one DISTINCT over
the decisions, on verify and decide; a resume looks only at its own rows)
and against the head the key's holder kept beside its key
(`witness.policy_damage`: a small file read under a lock), and at decide
time the answer checked by the question's own type (`answertype.check_typed`:
the workflow's file executed afresh, the asking phase's source parsed, the
type evaluated and described)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from phasegate import Engine, PhaseContext, Workflow
from phasegate.decide import answertype
from phasegate.history import trail, witness
from phasegate.store import _seals
from phasegate.views.models import QuestionView

from ._util import Figure, at_most, median
from .seals import _place


def _workflow() -> Workflow:
    wf = Workflow("trust-bench")
    state = {"fail": True}

    @wf.phase()
    def one(ctx: PhaseContext) -> int:
        return 1

    @wf.phase(needs=["one"])
    def two(ctx: PhaseContext, one: int) -> int:
        if state["fail"]:
            raise RuntimeError("down")
        return one + 1

    wf.bench_state = state  # type: ignore[attr-defined]
    return wf


@contextmanager
def _checks(on: bool) -> Iterator[None]:
    """The new checks as they are, or answering nothing (what the code did before)."""
    if on:
        yield
        return
    row, newest = trail.run_row, _seals.Seals.newest
    trail.run_row = lambda run, rows: []  # type: ignore[assignment]
    _seals.Seals.newest = lambda self, conn, tables: []  # type: ignore[method-assign]
    try:
        yield
    finally:
        trail.run_row = row  # type: ignore[assignment]
        _seals.Seals.newest = newest  # type: ignore[method-assign]


def _store(d: Path, runs: int) -> tuple[Path, Workflow]:
    """`runs` failed runs, each with a pause and an unpause recorded (decisions to check)."""
    db = d / "t.db"
    wf = _workflow()
    with Engine(db) as eng:
        for i in range(runs):
            eng.run(wf, f"r{i:04d}", {})
            eng.decide(f"r{i:04d}", "pause", reason="look")
            eng.decide(f"r{i:04d}", "unpause", reason="go on")
    return db, wf


def _resume(db: Path, wf: Workflow, rid: str) -> float:
    t0 = time.perf_counter()
    with Engine(db) as eng:
        eng.run(wf, rid)
    return time.perf_counter() - t0


def _verify(db: Path) -> float:
    with Engine(db) as eng:
        t0 = time.perf_counter()
        eng.verify(record=False)
        return time.perf_counter() - t0


def _pairs(n: int, timed: Callable[[bool, int], float]) -> tuple[list[float], list[float], list[float]]:
    on: list[float] = []
    off: list[float] = []
    ratios: list[float] = []
    for i in range(n):
        pair: dict[bool, float] = {}
        for mode in (True, False) if i % 2 == 0 else (False, True):
            with _checks(mode):
                pair[mode] = timed(mode, i)
        on.append(pair[True])
        off.append(pair[False])
        ratios.append(pair[True] / pair[False])
    return on, off, ratios


def run(quick: bool, rounds: int) -> list[Figure]:
    runs = 60 if quick else 300
    n = max(3, rounds) * 4
    figures: list[Figure] = []
    with _place() as d:
        db, wf = _store(d, runs)
        # Each resume takes up one failed run (it fails again: the same work each time).
        on, off, ratios = _pairs(n, lambda mode, i: _resume(db, wf, f"r{(2 * i + mode) % runs:04d}"))
        resume_off = median(off)
        tgt, met = at_most(median(ratios), 1.05)
        figures.append(
            Figure(
                "trust checks: resume of a run with decisions, checked / unchecked",
                median(ratios),
                "x",
                tgt,
                met,
                group="3d trust checks",
                baseline=f"unchecked: {median(off) * 1e3:.2f} ms a resume (open, start sequence, a phase, its end)",
                detail=f"checked: {median(on) * 1e3:.2f} ms; the key mark (one statement of 4 indexed reads at open), the run row"
                " against its decisions, the policy's head seal",
                samples=ratios,
            )
        )
        on, off, ratios = _pairs(n, lambda mode, i: _verify(db))
        tgt, met = at_most(median(ratios), 1.05)
        figures.append(
            Figure(
                "trust checks: verify, checked / unchecked",
                median(ratios),
                "x",
                tgt,
                met,
                group="3d trust checks",
                baseline=f"unchecked: {median(off) * 1e3:.1f} ms for {runs} runs with 2 decisions each",
                detail=f"checked: {median(on) * 1e3:.1f} ms; each run row against its decisions, the policy's head",
                samples=ratios,
            )
        )
        figures += _round4(d, runs)
        own = _own_cost(db)
        figures.append(
            Figure(
                "trust checks: their own time on a resume, share of the resume",
                own / resume_off,
                "x",
                *at_most(own / resume_off, 0.02),
                group="3d trust checks",
                baseline=f"a resume: {resume_off * 1e3:.2f} ms unchecked (the median above)",
                detail=f"the checks alone, timed by themselves: {own * 1e6:.0f} us (the key mark read, the run row"
                " against its decisions, the policy's head read); the pairs above are as noisy as the disk and"
                " the machine's other load",
            )
        )
    return figures


def _own_cost(db: Path) -> float:
    """Seconds the new checks take on one run's start, each timed alone, summed."""
    n = 500
    with Engine(db) as eng:
        store = eng.store
        with store.read() as conn:
            rows = store.decisions.of_run(conn, "r0000")
            row = store.runs.get(conn, "r0000")
            t0 = time.perf_counter()
            for _ in range(n):
                store.seals.newest(conn, store.db.tables)
                store.policy.head(conn)
                trail.run_row(row, rows)
            return (time.perf_counter() - t0) / n


_TYPED = """
from typing import Annotated
from pydantic import AfterValidator
from phasegate import PhaseContext, Workflow


def at_most_1000(v: int) -> int:
    if v > 1000:
        raise ValueError("at most 1000")
    return v


wf = Workflow("typed-bench")


@wf.phase()
def amount(ctx: PhaseContext) -> int:
    return int(ctx.ask("amount", "How much?", Annotated[int, AfterValidator(at_most_1000)]))
"""


def _round4(d: Path, runs: int) -> list[Figure]:
    """Round 4's checks, each timed alone (per call, the median of rounds of 200)."""
    import os

    from phasegate.run.parking import json_schema

    key = d / "round4.key"
    key.write_bytes(os.urandom(32).hex().encode())
    key.chmod(0o600)
    was = os.environ.get("PHASEGATE_SEAL_KEY_FILE")
    os.environ["PHASEGATE_SEAL_KEY_FILE"] = str(key)
    wf = _workflow()
    db = d / "keyed.db"
    try:
        with Engine(db) as eng:
            eng.oversight.set_policy(reason="bench", require_second="rewind")
            for i in range(runs):
                eng.run(wf, f"r{i:04d}", {})
                eng.decide(f"r{i:04d}", "pause", reason="look")
            store = eng.store

            def named() -> None:
                with store.read() as conn:
                    store.decisions.policies_named(conn)

            def head() -> None:
                with store.read() as conn:
                    last, count, seal = store.policy.head(conn)
                    rows = store.policy.changes(conn, limit=None)
                    witness.policy_damage(rows, last, count, seal, store.seal_key, {1}, store.where)

            named_s = _per_call(named)
            head_s = _per_call(head)
    finally:
        if was is None:
            os.environ.pop("PHASEGATE_SEAL_KEY_FILE", None)
        else:
            os.environ["PHASEGATE_SEAL_KEY_FILE"] = was
    file = d / "typed_bench.py"
    file.write_text(_TYPED)
    from typing import Annotated

    from pydantic import AfterValidator

    schema = json_schema("bench", Annotated[int, AfterValidator(lambda v: v)])
    q = QuestionView("amount", "amount", "How much?", schema, None, 0.0, None, "open")
    typed_s = _per_call(lambda: answertype.check_typed(f"{file}:wf", q, 700), n=20)
    return [
        Figure(
            "trust round 4: the policy anchored by the decisions (verify, decide), per call",
            named_s * 1e3,
            "ms",
            group="3d trust checks",
            baseline=f"{runs} runs with a decision each, keyed SQLite",
            detail="one SELECT DISTINCT policy_id over the decisions; a resume uses its own rows' ids (no read)",
        ),
        Figure(
            "trust round 4: the policy's head against the key holder's witness, per check",
            head_s * 1e3,
            "ms",
            group="3d trust checks",
            baseline="the head's three meta rows, every change, and KEY.seen read under a shared lock",
            detail="on verify, on decide, and on a resume with a pending decision",
        ),
        Figure(
            "trust round 4: decide answer checked by the question's own type, per answer",
            typed_s * 1e3,
            "ms",
            group="3d trust checks",
            baseline="only an answer to a question with a schema pays it",
            detail="the workflow file executed afresh (isolated), the phase's source parsed, the type evaluated,"
            " its JSON Schema compared to the stored one, pydantic's strict check",
        ),
    ]


def _per_call(fn: Callable[[], object], n: int = 200) -> float:
    """Seconds a call, the median of five rounds of `n`."""
    out = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n)
    return median(out)
