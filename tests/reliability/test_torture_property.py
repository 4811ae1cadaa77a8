"""A property-based test: random workflows (phases of ordinary and durable
steps, non-idempotent, idempotent and atomic effects), random kills at any
of their instants, and an operator answering in-doubt effects, checked
against a simple model of what must have happened.

In-process for speed: a kill is a `BaseException` raised from inside a phase,
a step or an effect (the engine records only `Exception`s as failures), after
which the engine object is dropped like a dead process's memory and the clock
jumps past the lease so the next attempt may take over."""

from __future__ import annotations

import tempfile
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from sqlalchemy import text

from phasegate import AlreadyDecided, Engine, Workflow
from tests.support import seeds


class Kill(KeyboardInterrupt):
    """The process died here: like an interrupt, never recorded as the phase's
    failure (everything else a phase raises is, since #16 finding 7)."""


OPS = st.sampled_from(["step", "durable", "effect", "idempotent", "atomic"])
SPEC = st.lists(st.lists(OPS, min_size=0, max_size=4), min_size=1, max_size=4)


class World:
    """The outside world and the script of the example: when to die."""

    def __init__(self, kills: set[int]) -> None:
        self.kills = kills
        self.events = 0
        self.calls: Counter[str] = Counter()  # every call that reached a gateway
        self.applied: dict[str, dict[str, str]] = {}  # what the gateway did, by key
        self.starts: list[str] = []
        self.step_runs: Counter[str] = Counter()
        self.step_killed: Counter[str] = Counter()

    def tick(self) -> None:
        self.events += 1
        if self.events in self.kills:
            raise Kill(self.events)

    def gateway(self, key: str, *, idempotent: bool) -> dict[str, str]:
        self.tick()  # died before the call left
        self.calls[key] += 1
        if not (idempotent and key in self.applied):
            self.applied[key] = {"charge": "c-" + key}
        self.tick()  # died after the call, before the engine heard back
        return self.applied[key]


def build(spec: list[list[str]], world: World) -> Workflow:
    wf = Workflow("prop")

    def make(i: int, ops: list[str]) -> None:
        def body(ctx: Any, **prev: Any) -> dict[str, Any]:
            world.starts.append(f"p{i}")
            world.tick()
            out: list[Any] = []
            for j, op in enumerate(ops):
                world.tick()
                name = f"e{j}"
                if op == "step":
                    out.append(ctx.step(name, lambda j=j: f"s{i}.{j}"))
                elif op == "durable":

                    def work(i: int = i, j: int = j) -> str:
                        world.step_runs[f"p{i}.{j}"] += 1
                        try:
                            world.tick()
                        except Kill:
                            world.step_killed[f"p{i}.{j}"] += 1  # died before its result was saved
                            raise
                        return f"d{i}.{j}"

                    out.append(ctx.step(name, work, durable=True))
                elif op == "atomic":

                    def book(key: str, session: Any) -> dict[str, str]:
                        session.execute(text("CREATE TABLE IF NOT EXISTS prop_books (key TEXT PRIMARY KEY)"))
                        session.execute(text("INSERT INTO prop_books (key) VALUES (:k)"), {"k": key})
                        world.tick()  # died inside the transaction: nothing of it may remain
                        return {"booked": key}

                    out.append(ctx.effect(name, book, atomic=True))
                else:
                    idem = op == "idempotent"
                    out.append(
                        ctx.effect(name, lambda key, idem=idem: world.gateway(key, idempotent=idem), idempotent=idem)
                    )
            world.tick()
            return {"ops": out, "prev": prev.get(f"p{i - 1}")}

        needs = [f"p{i - 1}"] if i else []
        wf.phase(f"p{i}", needs=needs)(body)

    for i, ops in enumerate(spec):
        make(i, ops)
    return wf


def expected(spec: list[list[str]], run_id: str) -> Any:
    prev = None
    for i, ops in enumerate(spec):
        out: list[Any] = []
        for j, op in enumerate(ops):
            key = f"{run_id}/p{i}/e{j}"
            out.append(
                {"step": f"s{i}.{j}", "durable": f"d{i}.{j}", "atomic": {"booked": key}}.get(op, {"charge": "c-" + key})
            )
        prev = {"ops": out, "prev": prev}
    return prev


# The suite's fixed seed (read when pytest collects this module, after
# `--seed` is parsed): the same examples every run unless told otherwise.
@seed(seeds.test_seed())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=SPEC,
    kills=st.sets(st.integers(min_value=1, max_value=80), max_size=8),
    dawdle=st.lists(st.booleans(), min_size=0, max_size=6),
    twice=st.booleans(),
)
def test_kills_and_decisions_keep_every_promise(
    spec: list[list[str]], kills: set[int], dawdle: list[bool], twice: bool
) -> None:
    world = World(kills)
    wf = build(spec, world)
    run_id = "prop"
    now = [1_000_000.0]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "p.db"
        reported: list[tuple[frozenset[str], int]] = []
        outcome = None
        for attempt in range(60):
            eng = Engine(db, clock=lambda: now[0], lease_seconds=30)
            try:
                calls_before, starts_before = sum(world.calls.values()), len(world.starts)
                outcome = eng.run(wf, run_id, {} if attempt == 0 else None)
            except Kill:
                # the process is gone: its memory with it, its lease lapses
                eng.store.db._hot = None  # a dead process's connection is not closed politely
                eng.store.db.sa.dispose()
                now[0] += 1000
                with Engine(db, clock=lambda: now[0]) as reader:
                    view = reader.status(run_id) if any(True for _ in reader.run_ids()) else None
                if view is not None:
                    reported.append((frozenset(p.name for p in view.phases if p.state == "done"), len(world.starts)))
                continue
            finally:
                eng.close()
            now[0] += 1
            if outcome.status == "completed":
                break
            assert outcome.status == "blocked", outcome
            kinds = {b.kind for b in outcome.blocked}
            assert kinds == {"in_doubt_effect"}, outcome.blocked
            assert sum(world.calls.values()) == calls_before, "a blocked run reached the gateway"
            if dawdle and dawdle.pop():
                continue  # the operator has not answered yet: the next run must stop the same way
            with Engine(db, clock=lambda: now[0]) as op:
                for b in outcome.blocked:
                    key = b.data["effect"]
                    if key in world.applied:
                        args = {"action": "confirm_effect", "result": world.applied[key]}
                    else:
                        args = {"action": "retry_effect"}
                    op.decide(run_id, effect=key, reason="the gateway's ledger says so", operator="prop", **args)
                    if twice:
                        with pytest.raises(AlreadyDecided):
                            op.decide(run_id, effect=key, reason="a second operator", operator="prop2", **args)
            del starts_before
        assert outcome is not None and outcome.status == "completed", (outcome, world.events)
        # the result is an uninterrupted run's
        assert outcome.result == expected(spec, run_id)
        # no non-idempotent effect reached the gateway twice; every effect happened
        for i, ops in enumerate(spec):
            for j, op in enumerate(ops):
                key = f"{run_id}/p{i}/e{j}"
                if op == "effect":
                    assert world.calls[key] == 1, (key, world.calls)
                if op == "idempotent":
                    assert world.calls[key] >= 1 and key in world.applied
        # an atomic effect is booked exactly once, however it was interrupted
        atomic = [f"{run_id}/p{i}/e{j}" for i, ops in enumerate(spec) for j, op in enumerate(ops) if op == "atomic"]
        if atomic:
            import sqlite3

            with closing(sqlite3.connect(db)) as conn:
                books = [r[0] for r in conn.execute("SELECT key FROM prop_books")]
            assert sorted(books) == sorted(atomic)
        # no phase reported done before a kill was started again after it
        for done, pos in reported:
            again = [p for p in world.starts[pos:] if p in done]
            assert not again, (again, done)
        # a durable step is computed again only when it died before its result was saved
        for k, n in world.step_runs.items():
            assert n == 1 + world.step_killed[k], (k, n, world.step_killed[k])
