"""Corruption fuzzing: damage copies of a stored database at random and check
that every resume ends in one of the allowed ways:

  integrity   the run stopped as `integrity` (exit 3) before any phase ran
  unusable    one clear line and exit 2 (the database cannot be used)
  resumed     a correct resume: the damage touched nothing the run needs, so
              it completed with an uninterrupted run's outputs, ran only the
              phases that were open, and charged nothing twice
  stopped     stopped for an operator (exit 3, another kind) before any phase ran

Anything else (a traceback, a resume from damaged state, a double charge, a
wrong result) is a failure. `status`, `status --json` and `verify` are run on
every damaged store as well: they may report damage, never crash.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import proc
from .crash import TARGET, _hashes, _trace, _wfmod

#: The base store's runs: (run id, kill point that stopped it or None).
BASE_RUNS = [
    ("done", None),
    ("open-notify", "start:notify"),
    ("mid-charge", "loop:charge:2"),
    ("mid-enrich", "step:1"),
]
#: Columns of a run's row that no hash covers: damage there must still not crash anything.
RUN_COLUMNS = [
    "shape_json",
    "blocked_json",
    "env_json",
    "notes_json",
    "status",
    "workflow",
    "target",
    "frontier_phase",
    "attention",
    "lease_owner",
    "lease_pid",
    "lease_expires_at",
    "updated_at",
]
CHECKPOINT_COLUMNS = ["run_id", "epoch", "seq", "kind", "phase", "output_state", "output_bytes", "created_at", "status"]
STEP_COLUMNS = ["run_id", "phase", "step_key", "created_at", "discarded"]
EFFECT_COLUMNS = ["run_id", "phase", "name", "key", "state", "attempt", "intent_at", "done_at"]
TABLES = {
    "checkpoints": "phasegate_checkpoints",
    "steps": "phasegate_steps",
    "effects": "phasegate_effects",
    "runs": "phasegate_runs",
    "decisions": "phasegate_decisions",
}


@dataclass
class CaseReport:
    n: int
    kind: str
    detail: str = ""
    outcomes: dict[str, str] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    """Findings of a known limit (page damage SQLite finds mid-phase)."""


class Fuzzer:
    def __init__(self, workdir: Path, *, items: int = 3, log: Any = print) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.items = items
        self.log = log
        self.mod = _wfmod()
        self.base = self.dir / "base"
        self.base.mkdir(exist_ok=True)
        self.other = self.dir / "other"
        self.other.mkdir(exist_ok=True)
        # The world outside the store (gateway ledgers, mailboxes, traces) is
        # reset from this snapshot before every case.
        self.world = self.dir / "world"
        self._build(self.base, self.world)
        self._build(self.other, self.dir / "other-world", prefix="x-")
        self.pristine = self.dir / "world.pristine"
        shutil.copytree(self.world, self.pristine)
        self.reference = self._reference()
        self.base_open = self._open_phases()
        self.foreign_wal = self._foreign_wal()

    # -- the stores ---------------------------------------------------------------

    def inputs(self, world: Path, run_id: str) -> dict[str, Any]:
        return {
            "items": self.items,
            "pace": 0,
            "ledger": str(world / f"{run_id}.ledger"),
            "mailbox": str(world / f"{run_id}.mailbox"),
        }

    def _build(self, folder: Path, world: Path, prefix: str = "") -> None:
        db = folder / "store.db"
        world.mkdir(exist_ok=True)
        for rid, point in BASE_RUNS:
            rid = prefix + rid
            env = {"PHASEGATE_TEST_KILL_AT": point} if point else {}
            r = proc.run(
                ["run", TARGET, "--run-id", rid, "--input", json.dumps(self.inputs(world, rid)), "--db", str(db)],
                env=env,
            )
            if r.rc not in (0, proc.KILLED) or r.traceback:
                raise AssertionError(f"building the base store: {rid} exited {r.rc}: {r.stderr}")

    def _reference(self) -> dict[str, str]:
        r = proc.inproc(["status", "done", "--json", "--db", str(self.base / "store.db")])
        return _hashes(json.loads(r.stdout))

    def _open_phases(self) -> dict[str, set[str]]:
        out = {}
        for rid, _ in BASE_RUNS:
            st = json.loads(proc.inproc(["status", rid, "--json", "--db", str(self.base / "store.db")]).stdout)
            out[rid] = {p["name"] for p in st["phases"] if p["state"] not in ("done", "degraded")}
        return out

    def _foreign_wal(self) -> bytes:
        """A WAL file with committed frames, from another phasegate store."""
        src = self.other / "store.db"
        tmp = self.dir / "walsrc.db"
        shutil.copy(src, tmp)
        conn = sqlite3.connect(tmp, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("UPDATE phasegate_runs SET attention = 'from another database' WHERE 1")
        conn.execute("UPDATE phasegate_checkpoints SET created_at = created_at + 1 WHERE 1")
        data = Path(str(tmp) + "-wal").read_bytes()
        conn.close()
        return data

    # -- damage ---------------------------------------------------------------------

    def damages(self) -> dict[str, Callable[[Path, random.Random], str]]:
        return {
            "flip-envelope": lambda db, rng: self._flip_col(db, rng, "checkpoints", "envelope"),
            "flip-payload-hash": lambda db, rng: self._flip_col(db, rng, "checkpoints", "payload_hash"),
            "flip-prev-hash": lambda db, rng: self._flip_col(db, rng, "checkpoints", "prev_hash"),
            "flip-output": lambda db, rng: self._flip_col(db, rng, "checkpoints", "output_json"),
            "relink-envelope": self._relink,
            "splice-other-run": self._splice,
            "delete-checkpoint": lambda db, rng: self._delete(db, rng, "checkpoints"),
            "delete-step": lambda db, rng: self._delete(db, rng, "steps"),
            "delete-effect": lambda db, rng: self._delete(db, rng, "effects"),
            "delete-run": lambda db, rng: self._delete(db, rng, "runs"),
            "flip-step": lambda db, rng: self._flip_col(db, rng, "steps", rng.choice(["result_json", "result_hash"])),
            "flip-effect": lambda db, rng: self._flip_col(
                db, rng, "effects", rng.choice(["result_json", "result_hash"])
            ),
            # effect records are history (seals.py): a completion undone, a
            # permission to call again forged, a record copied under another key
            "undo-effect": lambda db, rng: self._pick_sql(
                db, rng, "UPDATE phasegate_effects SET state='intent', result_json=NULL, result_hash=NULL WHERE id=?"
            ),
            "allow-retry": lambda db, rng: self._pick_sql(
                db, rng, "UPDATE phasegate_effects SET retry_ok=1, attempt=attempt+1 WHERE id=?"
            ),
            "forge-effect": self._forge_effect,
            "flip-inputs": lambda db, rng: self._flip_col(db, rng, "runs", "inputs_json"),
            "flip-head": lambda db, rng: self._flip_col(
                db, rng, "runs", rng.choice(["head_hash", "head_seq", "epoch"])
            ),
            "flip-run-row": lambda db, rng: self._flip_col(db, rng, "runs", rng.choice(RUN_COLUMNS)),
            "flip-checkpoint-row": lambda db, rng: self._flip_col(
                db, rng, "checkpoints", rng.choice(CHECKPOINT_COLUMNS)
            ),
            "flip-record-row": lambda db, rng: self._flip_col(
                db, rng, *rng.choice([("steps", c) for c in STEP_COLUMNS] + [("effects", c) for c in EFFECT_COLUMNS])
            ),
            "schema-future": lambda db, rng: self._sql(
                db, "UPDATE phasegate_meta SET value='99' WHERE key='schema_version'"
            ),
            "schema-garbage": lambda db, rng: self._sql(
                db, "UPDATE phasegate_meta SET value='v1;drop' WHERE key='schema_version'"
            ),
            "truncate": self._truncate,
            "flip-file-bytes": self._flip_file,
            "foreign-wal": self._put_wal,
        }

    def _rows(self, db: Path, table: str, col: str) -> list[tuple[int, Any]]:
        with closing(sqlite3.connect(db, isolation_level=None)) as conn:
            key = "run_id" if table == "runs" else "id"
            return [tuple(r) for r in conn.execute(f"SELECT {key}, {col} FROM {TABLES[table]} WHERE {col} IS NOT NULL")]

    def _flip_col(self, db: Path, rng: random.Random, table: str, col: str) -> str:
        rows = self._rows(db, table, col)
        if not rows:
            return "nothing to damage"
        key, value = rng.choice(rows)
        value = str(value)
        if not value:
            self._sql(
                db, f"UPDATE {TABLES[table]} SET {col} = ? WHERE {'run_id' if table == 'runs' else 'id'} = ?", "{", key
            )
            return f"{table}.{col} of {key}: '' -> '{{'"
        i = rng.randrange(len(value))
        ch = value[i]
        pool = "0123456789abcdef" if col.endswith("hash") else '0123456789abcdefXYZ{}[]":,'
        new = rng.choice([c for c in pool if c != ch])
        damaged = value[:i] + new + value[i + 1 :]
        keycol = "run_id" if table == "runs" else "id"
        self._sql(db, f"UPDATE {TABLES[table]} SET {col} = ? WHERE {keycol} = ?", damaged, key)
        return f"{table}.{col} of {key}: byte {i} {ch!r}->{new!r}"

    def _relink(self, db: Path, rng: random.Random) -> str:
        """A forger's edit: a checkpoint's own hash is right, its link is not."""
        from phasegate import _json

        with closing(sqlite3.connect(db, isolation_level=None)) as conn:
            rows = list(conn.execute("SELECT id, envelope FROM phasegate_checkpoints"))
        cid, env = rng.choice(rows)
        body = json.loads(env)
        body["prev"] = "0" * 64
        text = _json.dumps(body)
        self._sql(
            db, "UPDATE phasegate_checkpoints SET envelope=?, payload_hash=? WHERE id=?", text, _json.sha256(text), cid
        )
        return f"checkpoint {cid}: link rewritten, hash recomputed"

    def _splice(self, db: Path, rng: random.Random) -> str:
        """A checkpoint of another run (another store's twin) put in its place."""
        with closing(sqlite3.connect(self.other / "store.db", isolation_level=None)) as src:
            src_rows = list(
                src.execute(
                    "SELECT run_id, seq, envelope, payload_hash, prev_hash, output_json FROM phasegate_checkpoints"
                )
            )
        with closing(sqlite3.connect(db, isolation_level=None)) as conn:
            rows = list(conn.execute("SELECT id, run_id, seq FROM phasegate_checkpoints"))
        cid, rid, seq = rng.choice(rows)
        twins = [r for r in src_rows if r[0] == "x-" + rid and r[1] == seq] or src_rows
        s = rng.choice(twins)
        self._sql(
            db,
            "UPDATE phasegate_checkpoints SET envelope=?, payload_hash=?, prev_hash=?, output_json=? WHERE id=?",
            s[2],
            s[3],
            s[4],
            s[5],
            cid,
        )
        return f"checkpoint {cid} ({rid}/{seq}) replaced by {s[0]}/{s[1]}"

    def _delete(self, db: Path, rng: random.Random, table: str) -> str:
        keycol = "run_id" if table == "runs" else "id"
        rows = self._rows(db, table, keycol)
        if not rows:
            return "nothing to delete"
        key = rng.choice(rows)[0]
        self._sql(db, f"DELETE FROM {TABLES[table]} WHERE {keycol} = ?", key)
        return f"{table} row {key} deleted"

    def _pick_sql(self, db: Path, rng: random.Random, sql: str) -> str:
        rows = self._rows(db, "effects", "id")
        if not rows:
            return "no effect record"
        eid = rng.choice(rows)[0]
        self._sql(db, sql, eid)
        return f"effects row {eid}: {sql[:50]}"

    def _forge_effect(self, db: Path, rng: random.Random) -> str:
        """A done record copied in under the key of an effect of an open phase
        that has none yet: without a check, that effect would be skipped."""
        with closing(sqlite3.connect(db, isolation_level=None)) as conn:
            done = conn.execute("SELECT id, key FROM phasegate_effects WHERE state='done' ORDER BY id").fetchall()
            if not done:
                return "no done effect to copy"
            eid, key = rng.choice(done)
            forged = key.rsplit(":", 1)[0] + ":forged"
            cols = [r[1] for r in conn.execute("PRAGMA table_info(phasegate_effects)") if r[1] not in ("id", "key")]
            conn.execute(
                f"INSERT INTO phasegate_effects (key, {', '.join(cols)}) SELECT ?, {', '.join(cols)}"
                " FROM phasegate_effects WHERE id = ?",
                (forged, eid),
            )
        return f"effect {key} copied as {forged}"

    def _sql(self, db: Path, sql: str, *params: Any) -> str:
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            conn.execute(sql, params)
        finally:
            conn.close()
        return sql[:60]

    def _truncate(self, db: Path, rng: random.Random) -> str:
        size = db.stat().st_size
        at = rng.randrange(0, size)
        with db.open("r+b") as fh:
            fh.truncate(at)
        return f"truncated at {at} of {size}"

    def _flip_file(self, db: Path, rng: random.Random) -> str:
        data = bytearray(db.read_bytes())
        n = rng.randint(1, 8)
        where = []
        for _ in range(n):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
            where.append(i)
        db.write_bytes(bytes(data))
        return f"{n} bit(s) flipped at {sorted(where)}"

    def _put_wal(self, db: Path, rng: random.Random) -> str:
        Path(str(db) + "-wal").write_bytes(self.foreign_wal)
        return f"WAL of another store ({len(self.foreign_wal)} bytes) placed beside it"

    # -- one case -------------------------------------------------------------------

    def case(self, n: int, rng: random.Random, kind: str | None = None) -> CaseReport:
        kinds = self.damages()
        kind = kind or rng.choice(sorted(kinds))
        folder = self.dir / f"case{n}"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.base, folder)
        shutil.rmtree(self.world, ignore_errors=True)
        shutil.copytree(self.pristine, self.world)
        db = folder / "store.db"
        rep = CaseReport(n, kind)
        rep.detail = kinds[kind](db, rng)
        for args in (["status", "--json"], ["status"], ["verify"], ["status", "mid-charge"]):
            r = proc.inproc([*args, "--db", str(db)])
            if r.traceback or r.rc not in (0, 2, 3) or (r.rc != 0 and not _one_line(r.stderr) and args[0] != "verify"):
                rep.violations.append(
                    f"`{' '.join(args)}` on the damaged store: exit {r.rc}: {r.stderr.strip()[-800:]}"
                )
        crash = _console_reads(db, [rid for rid, _ in BASE_RUNS])
        if crash:
            rep.violations.append(f"the console's reads crashed on the damaged store: {crash}")
        for rid, _ in BASE_RUNS:
            trace = self.world / f"{rid}.trace"
            before = len(_trace(trace))
            r = proc.run(["resume", rid, "--db", str(db)], env={"PHASEGATE_TEST_TRACE": str(trace)})
            ran = [ln[6:] for ln in _trace(trace)[before:] if ln.startswith("start:")]
            rep.outcomes[rid] = self._classify(folder, db, rid, r, ran, rep)
        return rep

    def _charged_twice(self, rid: str) -> bool:
        keys = Counter(x["key"] for x in self.mod.read_lines(self.inputs(self.world, rid)["ledger"]))
        return any(n > 1 for n in keys.values())

    def _world_moved(self, rid: str) -> bool:
        """Did anything reach this run's gateway or mailer since the base store was built?"""
        for suffix in (".ledger", ".mailbox", ".mailbox.calls"):
            now, then = self.world / f"{rid}{suffix}", self.pristine / f"{rid}{suffix}"
            if (now.read_bytes() if now.exists() else b"") != (then.read_bytes() if then.exists() else b""):
                return True
        return False

    def _classify(self, folder: Path, db: Path, rid: str, r: proc.Result, ran: list[str], rep: CaseReport) -> str:
        bad = rep.violations.append
        if r.traceback:
            bad(f"{rid}: traceback: {r.stderr[-1500:]}")
            return "traceback"
        if r.rc == 2:
            if not _one_line(r.stderr):
                bad(f"{rid}: exit 2 without one clear line: {r.stderr!r}")
            if ran:
                if "damaged or not a database" in r.stderr and not self._charged_twice(rid):
                    # SQLite met page damage the chain does not cover (an index
                    # page, say) only when the phase wrote to it. Whatever was
                    # under way is left in doubt by its intent, never repeated.
                    moved = "something reached the world" if self._world_moved(rid) else "nothing reached the world"
                    rep.known.append(f"{rid}: page damage found by SQLite after {ran} began; {moved}; nothing twice")
                    return "unusable-mid-phase"
                bad(f"{rid}: exit 2 after running phases {ran}: {r.stderr.strip()}")
            return "unusable"
        if r.rc == 3:
            kinds = [ln.strip().split(":")[0] for ln in r.stdout.splitlines()[1:]]
            if ran:
                bad(f"{rid}: stopped only after running phases {ran}: {r.stdout.strip()}")
            return "integrity" if "integrity" in kinds else "stopped:" + ",".join(sorted(set(kinds)))
        if r.rc == 0:
            st = json.loads(proc.inproc(["status", rid, "--json", "--db", str(db)]).stdout)
            if _hashes(st) != self.reference:
                bad(f"{rid}: resumed to a wrong result: {_hashes(st)}")
            extra = [p for p in ran if p not in self.base_open[rid]]
            if extra:
                bad(f"{rid}: resumed and re-ran phases that were done: {extra}")
            ledger = self.inputs(self.world, rid)["ledger"]
            keys = Counter(x["key"] for x in self.mod.read_lines(ledger))
            if any(v > 1 for v in keys.values()) or len(keys) != self.items:
                bad(f"{rid}: gateway charges after resume: {dict(keys)}")
            return "resumed"
        bad(f"{rid}: exit {r.rc}: {r.stdout.strip()} {r.stderr.strip()[-500:]}")
        return f"exit {r.rc}"


def _console_reads(db: Path, run_ids: list[str]) -> str | None:
    """What the console reads for its screens, on the damaged store: a
    phasegate error is shown to the operator; anything else is a crash."""
    try:
        from phasegate.console import service
    except ImportError:
        return None
    from phasegate import Engine, PhasegateError

    try:
        with Engine(db, create=False) as eng:
            for i in range(len(service.STATUS_FILTERS)):
                service.read_page(eng, limit=50, filter_index=i, text="", order="attention")
            for rid in run_ids:
                try:
                    service.allowed(eng, eng.status(rid))
                except PhasegateError:
                    continue
    except PhasegateError:
        return None
    except Exception:  # noqa: BLE001 - exactly what this check looks for
        import traceback

        return traceback.format_exc()[-1500:]
    return None


def _one_line(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return len(lines) == 1 and lines[0].startswith("phasegate: ")


def fuzz(cases: int, seed: int, workdir: Path, *, log: Any = print, only: str | None = None) -> list[CaseReport]:
    log(f"corruption: seed {seed}, {cases} cases")
    fz = Fuzzer(workdir, log=log)
    rng = random.Random(seed)
    reports = []
    kinds = sorted(fz.damages())
    for n in range(cases):
        kind = only or kinds[n % len(kinds)]  # every kind gets its turn; the damage itself is random
        rep = fz.case(n, random.Random(rng.getrandbits(64)), kind)
        reports.append(rep)
        if rep.violations:
            log(f"  FAIL case {n} {rep.kind}: {rep.detail}")
            for v in rep.violations:
                log(f"       {v}")
        shutil.rmtree(workdir / f"case{n}", ignore_errors=True)
    tally: Counter[str] = Counter(o for r in reports for o in r.outcomes.values())
    by_kind: dict[str, Counter[str]] = {}
    for r in reports:
        by_kind.setdefault(r.kind, Counter()).update(r.outcomes.values())
    for k in sorted(by_kind):
        log(f"  {k:<18} " + ", ".join(f"{o} {c}" for o, c in sorted(by_kind[k].items())))
    failed = sum(1 for r in reports if r.violations)
    known = sum(1 for r in reports if r.known and not r.violations)
    log(
        f"corruption: {len(reports)} cases, {sum(tally.values())} resumes: "
        + ", ".join(f"{o} {c}" for o, c in sorted(tally.items()))
        + f"; {failed} failed"
        + (f"; {known} met a known limit (see the report lines marked 'known')" if known else "")
    )
    for r in reports:
        for k in r.known:
            log(f"  known: case {r.n} {r.kind}: {k}")
    return reports
