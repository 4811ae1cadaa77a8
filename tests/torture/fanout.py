"""Fan-out torture: twenty concurrent items (a durable step and a
non-idempotent effect each), by `asyncio.gather`, `ctx.map` and threads,
SIGKILLed at random instants while they are in flight, and resumed until
the run completes.

After every kill and every resume, what must hold:
- `phasegate verify` is clean (every record intact and linked, however
  many threads or tasks wrote at once);
- no effect key reached the gateway twice (the gateway's own ledger);
- every key whose intent was not recorded is absent from the ledger: an
  intent is durable before its call, never after;
- once completed, every item was computed and sent exactly once, and both
  phases are done.

With `reconcile="ledger"` the effect's hook reads the gateway's ledger, so
a resume settles each in-doubt effect itself. Without it, each unfinished
effect is reported in doubt (checked: every in-doubt key is one the ledger
may or may not hold, never a finished one), and answered the way an
operator would, from the ledger.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import proc

WORKFLOWS = proc.ROOT / "tests" / "workflows"
MODES = ("gather", "threads", "map", "map-threads")


def target(mode: str) -> str:
    name = "gathered" if mode in ("gather", "map") else "threaded"
    return f"{WORKFLOWS / 'fanout.py'}:{name}"


@dataclass
class FanReport:
    run_id: str
    mode: str
    reconcile: str
    kills: int = 0
    attempts: int = 0
    answered: int = 0
    violations: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def _ledger(path: Path) -> list[dict[str, Any]]:
    from tests.workflows.fanout import read_lines

    return read_lines(str(path))


def _status(db: str, run_id: str) -> dict[str, Any]:
    r = proc.run(["status", run_id, "--json", "--db", db])
    return json.loads(r.stdout) if r.returncode == 0 else {"status": f"unreadable: {r.stderr.strip()}"}


def torture_run(
    work: Path,
    db: str,
    run_id: str,
    mode: str,
    rng: random.Random,
    *,
    reconcile: str = "ledger",
    items: int = 20,
    pace: float = 0.01,
    max_kills: int = 6,
) -> FanReport:
    """One run of the fan-out workflow, killed up to `max_kills` times, to its end."""
    rep = FanReport(run_id, mode, reconcile)
    ledger, trace = work / f"{run_id}.ledger", work / f"{run_id}.trace"
    inputs = {
        "mode": mode,
        "items": items,
        "ledger": str(ledger),
        "trace": str(trace),
        "pace": pace,
        "reconcile": reconcile,
    }
    first = ["run", target(mode), "--run-id", run_id, "--input", json.dumps(inputs), "--db", db]
    args = first
    for attempt in range(max_kills + 30):
        rep.attempts += 1
        saved = _saved_items(db, run_id)
        seen = len(_ledger(trace))
        kill = rep.kills < max_kills and rng.random() < 0.85
        child = proc.start(args)
        if kill:
            # Within the fan-out: fork start, lease, then 20 items of ~2 paces on 4-8 lanes.
            time.sleep(rng.uniform(0.01, 0.05 + pace * (6 + items // 2)))
            res = child.kill()
            if res.killed:
                rep.kills += 1
        else:
            res = child.wait(120)
        rep.history.append(f"attempt {attempt}: {'killed' if res.killed else f'rc={res.returncode}'}")
        again = sorted({r["step"] for r in _ledger(trace)[seen:]} & saved)
        if again:
            rep.violations.append(f"saved items computed again: {again}")
        _check(rep, db, ledger)
        st = _status(db, run_id)
        status = st.get("status")
        rep.history.append(f"  status {status}: {st.get('reason', '')}")
        if status == "completed":
            break
        if str(status).startswith("unreadable: phasegate: no such run") and args is first:
            continue  # killed before its row was created: start it again, as a deploy would

        if status == "blocked":
            rep.answered += _answer(rep, db, run_id, st, ledger)
        elif status not in ("interrupted", "running", "failed"):
            rep.violations.append(f"unexpected status {status!r}")
            break
        if status == "failed":
            rep.violations.append(f"failed: {st.get('error')}")
            break
        args = ["resume", run_id, "--db", db]
    else:
        rep.violations.append("never completed")
    if not rep.violations:
        _check_done(rep, db, run_id, ledger, trace, items)
    return rep


def _saved_items(db: str, run_id: str) -> set[int]:
    """The items whose durable step is saved, read straight from the store (as a forensic tool would)."""
    query = "SELECT step_key FROM phasegate_steps WHERE run_id = ? AND phase = 'fan'"
    if db.startswith("postgresql"):
        import psycopg

        try:
            with psycopg.connect(db.replace("postgresql+psycopg://", "postgresql://")) as con:
                rows = con.execute(query.replace("?", "%s"), (run_id,)).fetchall()
        except psycopg.errors.UndefinedTable:
            return set()  # not created yet
    else:
        if not Path(db).exists():
            return set()
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            try:
                rows = con.execute(query, (run_id,)).fetchall()
            except sqlite3.OperationalError:
                return set()  # not created yet
    return {int(str(k).split(":")[1]) for (k,) in rows if str(k).startswith("fetch:")}


def _check(rep: FanReport, db: str, ledger: Path) -> None:
    v = proc.run(["verify", "--db", db])
    if v.returncode != 0:
        rep.violations.append(f"verify exit {v.returncode}: {v.stdout.strip()[-400:]} {v.stderr.strip()[-200:]}")
    sent = Counter(r["key"] for r in _ledger(ledger))
    twice = sorted(k for k, n in sent.items() if n > 1)
    if twice:
        rep.violations.append(f"sent twice: {twice}")


def _answer(rep: FanReport, db: str, run_id: str, st: dict[str, Any], ledger: Path) -> int:
    """An operator's answers to in-doubt effects, from the gateway's ledger."""
    sent = {r["key"]: r for r in _ledger(ledger)}
    effects = {e["key"]: e for e in st.get("effects", [])}
    n = 0
    for b in st.get("blocked", []):
        if b.get("kind") != "in_doubt_effect":
            rep.violations.append(f"blocked for {b.get('kind')}: {b.get('detail')}")
            continue
        key = b["effect"]
        if effects.get(key, {}).get("state") == "done":
            rep.violations.append(f"a finished effect reported in doubt: {key}")
        if key in sent:
            result = json.dumps({"sent": sent[key]["i"]})
            args = ["decide", run_id, "confirm_effect", "--effect", key, "--result", result]
        else:
            args = ["decide", run_id, "retry_effect", "--effect", key]
        d = proc.run([*args, "--reason", "looked it up in the gateway's ledger", "--db", db])
        if d.returncode != 0 and "already been decided" not in d.stderr:
            # (an answer recorded before a resume that was killed is still pending: fine)
            rep.violations.append(f"decide {key}: exit {d.returncode}: {d.stderr.strip()}")
        n += 1
    return n


def _check_done(
    rep: FanReport,
    db: str,
    run_id: str,
    ledger: Path,
    trace: Path,
    items: int,
) -> None:
    sent = Counter(r["i"] for r in _ledger(ledger))
    if sorted(sent) != list(range(items)) or any(n != 1 for n in sent.values()):
        rep.violations.append(f"items sent: {dict(sent)}")
    from tests.workflows.fanout import read_lines

    computed = {r["step"] for r in read_lines(str(trace))}
    if computed != set(range(items)):
        rep.violations.append(f"items computed: {sorted(computed)}")
    st = _status(db, run_id)
    if [p["state"] for p in st.get("phases", [])] != ["done", "done"]:
        rep.violations.append(f"phases at the end: {st.get('phases')}")


def torture(
    kills: int,
    seed: int,
    work: Path,
    *,
    db: str | None = None,
    modes: tuple[str, ...] = MODES,
    log: Any = print,
) -> list[FanReport]:
    """Fan-out runs, round-robin over `modes` and both reconcile styles, until `kills` SIGKILLs landed."""
    rng = random.Random(seed)
    target_db = db or str(work / "fanout.db")
    reports: list[FanReport] = []
    # One uninterrupted run first: it creates the store (a kill inside the
    # store's creation is the crash torture's business, not this one's).
    base = torture_run(work, target_db, f"fan-{seed}-base", modes[0], rng, items=2, max_kills=0)
    if not base.ok:
        log("\n".join(base.history + base.violations))
        return [base]
    i = 0
    while sum(r.kills for r in reports) < kills:
        mode = modes[i % len(modes)]
        reconcile = "ledger" if (i // len(modes)) % 2 == 0 else ""
        run_seed = rng.randrange(2**32)
        rep = torture_run(work, target_db, f"fan-{seed}-{i}", mode, random.Random(run_seed), reconcile=reconcile)
        rep.history.insert(0, f"run-seed {run_seed}")
        reports.append(rep)
        log(
            f"{rep.run_id} {mode:<11} reconcile={reconcile or '-':<6} kills={rep.kills} "
            f"attempts={rep.attempts} answered={rep.answered} {'ok' if rep.ok else 'VIOLATED'}"
        )
        if not rep.ok:
            log("\n".join(["  " + h for h in rep.history] + ["  ! " + v for v in rep.violations]))
        i += 1
    return reports
