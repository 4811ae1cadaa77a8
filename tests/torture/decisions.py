"""Decision and policy damage (#29): copies of a store holding proposals, a
seconded decision and a policy with a history are damaged the ways one
account with write access to the store would damage them, and every case
must be detected (`verify` exits 3 naming the damage) and nothing applied
(`worker --once` leaves every run blocked, no approval applied, nothing
charged).

The damage:

  edited-state      a proposal set to pending (as finding 1 did)
  deleted-second    the second of a seconded approval deleted
  forged-proposer   a seconded approval's proposer set to its seconder
  reordered-policy  the policy's last two changes swapped (the relaxed one
                    in force) and a proposal made under it set to pending
  uncancelled-row   (#38) a cancelled run's row put back: status running,
                    no lease, no hold (one UPDATE)
  policy-tail       (#38) the newest policy change deleted, the meta's head
                    moved back, and a proposal made under it set pending
                    under the older, relaxed change
  seal-downgrade    (#38) the store's key mark deleted from meta and a
                    proposal set to pending; on a plain store, a keyed-looking
                    seal planted instead
  unheld-row        (#38) a paused run's row let go: status interrupted, no
                    hold (one UPDATE)
  lease-row         (#38) a cancelled run's row made a stalled worker's: status
                    running, no hold, a lease of a worker long gone (a takeover,
                    not a resume)
  older-head        (#38) the policy's head copied when it was relaxed put
                    back, the change after it deleted, and a proposal made
                    under the deleted change set pending (forged: naming the
                    older change, its seal recomputed)
  policy-deleted    (#38) the whole policy deleted, rows and head, and a
                    proposal set pending (forged: naming no change)
  refused-answer    (#38) a recorded answer's value changed to one the
                    question's type refuses (a validator the stored schema
                    lacks): 700 -> 5000

each raw (the seals left as they were) and, in a store sealed under a key,
also forged: every seal the edit touched recomputed as a plain hash, which
is all a forger without the key can do. A store without a key is only held
to the raw edits: a plain hash is recomputed by anyone (history/seals.py).

On SQLite the base store is a file copied per case and edited with sqlite3;
on PostgreSQL it is a schema, copied per case (`CREATE TABLE ... (LIKE ...
INCLUDING ALL)`, rows and all) and edited with psycopg, as psql would.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phasegate.history import trail
from tests.engine.engine_harness import Harness
from tests.engine.pg_schema import PG

KINDS = (
    "edited-state",
    "deleted-second",
    "forged-proposer",
    "reordered-policy",
    "uncancelled-row",
    "policy-tail",
    "seal-downgrade",
    "unheld-row",
    "lease-row",
    "older-head",
    "policy-deleted",
    "refused-answer",
)
BACKENDS = ("sqlite", "postgres")
NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]
#: The run each kind damages (the other may go on: its decisions are whole).
TARGET = {
    "edited-state": "r1",
    "deleted-second": "r2",
    "forged-proposer": "r2",
    "reordered-policy": "r1",
    "uncancelled-row": "r3",
    "policy-tail": "r1",
    "seal-downgrade": "r1",
    "unheld-row": "r4",
    "lease-row": "r3",
    "older-head": "r1",
    "policy-deleted": "r1",
    "refused-answer": "r5",
}
#: The workflow whose question's type refuses more than its stored schema (r5).
TYPED = Path(__file__).resolve().parents[1] / "engine" / "workflows" / "typed_answers.py"
PARK = {"PHASEGATE_PARK_SECONDS": "0.5"}


@dataclass
class Case:
    """One damaged copy and what came of it."""

    kind: str
    keyed: bool
    forged: bool
    backend: str = "sqlite"
    detected: bool = False
    applied: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.detected and not self.applied


class _PgRow(tuple):  # type: ignore[type-arg]
    """A psycopg row read as sqlite3.Row is: by position (unpacking) and by name."""

    names: tuple[str, ...] = ()

    def keys(self) -> tuple[str, ...]:
        return self.names

    def __getitem__(self, k: Any) -> Any:  # type: ignore[override]
        return tuple.__getitem__(self, self.names.index(k) if isinstance(k, str) else k)


class _PgRaw:
    """psycopg with sqlite3's `?` placeholders and rows: what the damage
    functions edit a PostgreSQL copy through (psql's reach, one account)."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.con = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> Any:
        cur = self.con.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
        names = tuple(d.name for d in cur.description or ())

        class Rows:
            def fetchone(self) -> Any:
                r = cur.fetchone()
                return None if r is None else _row(r)

            def fetchall(self) -> list[Any]:
                return [_row(r) for r in cur.fetchall()]

        def _row(r: Any) -> _PgRow:
            row = _PgRow(r)
            row.names = names
            return row

        return Rows()

    def commit(self) -> None:
        self.con.commit()

    def close(self) -> None:
        self.con.close()


class DecisionSoak:
    """A base store per seal mode, built once, and the cases over copies of it."""

    def __init__(self, workdir: Path, *, backend: str = "sqlite", log: Callable[[str], None] = print) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o777)
        self.log = log
        self.backend = backend
        self._schemas: list[str] = []
        self._keyed = False
        """The mode of the case being damaged (what a damage function edits by)."""
        self._admin: Any = None
        if backend == "postgres":
            import psycopg

            self._admin = psycopg.connect(PG, autocommit=True, connect_timeout=3)
        secret = os.urandom(32).hex().encode()
        self.key = self.dir / "seal.key"
        self.key.write_bytes(secret)
        self.key.chmod(0o600)
        # The second operator's own copy of the key: a key file must be its reader's.
        self.nobody_key = self.dir / "nobody.key"
        self.nobody_key.write_bytes(secret)
        self.nobody_key.chmod(0o600)
        os.chown(self.nobody_key, 65534, 65534)
        self.heads: dict[bool, list[tuple[str, str]]] = {}
        """The policy's head (meta rows) of each base as it was when relaxed: what older-head restores."""
        self.bases = {keyed: self._build(keyed) for keyed in (False, True)}

    def close(self) -> None:
        """Drop the PostgreSQL schemas the soak made."""
        if self._admin is not None:
            for schema in self._schemas:
                self._admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            self._admin.close()
            self._admin = None

    def env(self, keyed: bool) -> dict[str, str]:
        return {"PHASEGATE_SEAL_KEY_FILE": str(self.key) if keyed else ""}

    def _schema(self) -> str:
        schema = f"pgsoak_{uuid.uuid4().hex[:12]}"
        self._admin.execute(f'CREATE SCHEMA "{schema}"')
        self._schemas.append(schema)
        return schema

    def _url(self, schema: str) -> str:
        sep = "&" if "?" in PG else "?"
        return f"{PG}{sep}options=-csearch_path%3D{schema}"

    def _harness(self, folder: Path, schema: str | None) -> Harness:
        return Harness(folder, pg_url=self._url(schema) if schema else None)

    def _build(self, keyed: bool) -> Harness:
        folder = self.dir / ("base-keyed" if keyed else "base-plain")
        folder.mkdir()
        os.chmod(folder, 0o777)
        h = self._harness(folder, self._schema() if self.backend == "postgres" else None)
        h.env.update(self.env(keyed))
        for rid in ("r1", "r2", "r3", "r4"):
            assert h.run(rid, kill="start:charge").killed
        h.tax.write_text("vat-2026-v2")
        for rid in ("r1", "r2", "r3"):
            assert h.resume(rid).returncode == 3
        # r3 is cancelled and r4 paused (the policy never lists either: one person may).
        assert h.cli("cancel", "r3", "--reason", "customer withdrew").returncode == 0
        assert h.cli("pause", "r4", "--reason", "looking at it").returncode == 0
        # r5 waits on a question whose type refuses more than its stored schema; answered 700.
        assert h.cli("run", f"{TYPED}:wf", "--run-id", "r5", env=PARK).returncode == 5
        p = h.decide("r5", "answer", "--question", "amount", "--value", "700")
        assert p.returncode == 0, p
        for reason, acts in (("strict", "approve,reset"), ("relaxed", ""), ("strict again", "approve,reset")):
            assert h.cli("policy", "--require-second", acts, "--reason", reason).returncode == 0
            if reason == "relaxed":
                self.heads[keyed] = [
                    (str(k), str(v))
                    for k, v in h.sql(
                        "SELECT key, value FROM phasegate_meta"
                        " WHERE key IN ('policy_last', 'policy_count', 'policy_head')"
                    )
                ]
        for rid in ("r1", "r2"):
            p = h.decide(rid, "approve", reason="the new rate is right")
            assert p.returncode == 0 and "proposed" in p.stdout, p
        (r2_prop,) = h.sql("SELECT id FROM phasegate_decisions WHERE run_id = 'r2'")[0]
        for f in folder.iterdir():
            os.chmod(f, 0o666)
        setpriv = shutil.which("setpriv")
        assert setpriv is not None, "the soak seconds as another account (nobody): it needs setpriv"
        from tests.support import cli

        p = cli.run(
            ["decide", "r2", "second", "--decision", str(r2_prop), "--reason", "agreed", "--db", h.target],
            env={**h.env, "PHASEGATE_OPERATOR": "nina", "PHASEGATE_SEAL_KEY_FILE": str(self.nobody_key) if keyed else ""},
            mode="exec", wrapper=[setpriv, *NOBODY],
        )  # fmt: skip
        assert p.returncode == 0, p
        assert h.cli("verify", env=self.env(keyed)).returncode == 0
        return h

    def _copy(self, base: Harness, folder: Path) -> Harness:
        """The base's folder (ledger, trace, tax) and store, copied for one case."""
        shutil.copytree(base.tmp, folder)
        if self.backend == "sqlite":
            return self._harness(folder, None)
        src = base.target.rsplit("%3D", 1)[1]
        dst = self._schema()
        tables = [
            t for (t,) in self._admin.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (src,)
            ).fetchall()
        ]  # fmt: skip
        for t in tables:
            # The ids' defaults stay on the base's sequences: a copy's new rows take ids above every copied one.
            self._admin.execute(f'CREATE TABLE "{dst}"."{t}" (LIKE "{src}"."{t}" INCLUDING ALL)')
            self._admin.execute(f'INSERT INTO "{dst}"."{t}" SELECT * FROM "{src}"."{t}"')
        return self._harness(folder, dst)

    def _raw(self, h: Harness) -> Any:
        if self.backend == "sqlite":
            con = sqlite3.connect(h.db)
            con.row_factory = sqlite3.Row
            return con
        return _PgRaw(h.target)

    # -- a case ---------------------------------------------------------------

    def case(self, n: int, rng: random.Random, kind: str, keyed: bool, forged: bool) -> Case:
        folder = self.dir / f"case-{n}"
        h = self._copy(self.bases[keyed], folder)
        h.env.update(self.env(keyed))
        h.tax.write_text("vat-2026-v2")
        c = Case(kind, keyed, forged, self.backend)
        target = TARGET[kind]
        charges = self._charges(h, target)
        with closing(self._raw(h)) as con:
            self._keyed = keyed
            getattr(self, "_" + kind.replace("-", "_"))(con, rng, forged)
            con.commit()
        markers = h.sql("SELECT count(*) FROM phasegate_checkpoints WHERE run_id = ? AND kind = 'env'", (target,))
        v = h.cli("verify", "--json")
        reports = json.loads(v.stdout) if v.stdout.strip().startswith("[") else []
        named = [r for r in reports if r.get("decisions") or r.get("policy")]
        c.detected = v.returncode == 3 and bool(named)
        if not c.detected:
            c.notes.append(f"verify exit {v.returncode}: {v.stdout[-300:]} {v.stderr[-300:]}")
        w = h.cli("worker", "--once")
        if "Traceback" in w.stderr:
            c.notes.append("worker traceback: " + w.stderr[-300:])
            c.applied = True
        # Applied: the damaged run went on (its approval became an env marker
        # in its chain, it left `blocked`, or it charged).
        st = h.status(target)
        after = h.sql("SELECT count(*) FROM phasegate_checkpoints WHERE run_id = ? AND kind = 'env'", (target,))
        if st["status"] != "blocked" or after != markers:
            c.applied = True
            c.notes.append(f"{target}: {st['status']}, env markers {markers} -> {after}")
        if not any(b["kind"] == "integrity" for b in st["blocked"]):
            c.applied = True
            c.notes.append(f"{target}: not blocked as integrity: {st['blocked']}")
        if self._charges(h, target) != charges:
            c.applied = True
            c.notes.append(f"{target} charged after the damage")
        if any("5000" in line for line in h.trace()):
            c.applied = True
            c.notes.append("a phase received the refused answer 5000")
        shutil.rmtree(folder, ignore_errors=True)
        return c

    @staticmethod
    def _charges(h: Harness, run_id: str) -> int:
        return sum(1 for k in h.charge_keys() if k.startswith(run_id + "/"))

    # -- the damage -------------------------------------------------------------

    @staticmethod
    def _reseal_decision(con: Any, did: int) -> None:
        """What a forger without the key can do: a plain hash over the row."""
        row = dict(con.execute("SELECT * FROM phasegate_decisions WHERE id = ?", (did,)).fetchone())
        con.execute("UPDATE phasegate_decisions SET seal = ? WHERE id = ?", (trail.decision_seal(row, None), did))

    def _edited_state(self, con: Any, rng: random.Random, forged: bool) -> None:
        (did,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r1' AND action = 'approve'").fetchone()
        con.execute("UPDATE phasegate_decisions SET state = ? WHERE id = ?", (rng.choice(["pending", "applied"]), did))
        if forged:
            self._reseal_decision(con, did)

    def _deleted_second(self, con: Any, rng: random.Random, forged: bool) -> None:
        (sid, prev) = con.execute("SELECT id, prev_id FROM phasegate_decisions WHERE action = 'second'").fetchone()
        con.execute("DELETE FROM phasegate_decisions WHERE id = ?", (sid,))
        if forged:
            # Hide the deletion too: the run row names the row before it, one fewer.
            con.execute(
                "UPDATE phasegate_runs SET decisions_last = ?, decisions_count = decisions_count - 1"
                " WHERE run_id = 'r2'",
                (prev,),
            )
            if rng.random() < 0.5:
                (pid,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r2'").fetchone()
                con.execute("UPDATE phasegate_decisions SET seconded_by = NULL WHERE id = ?", (pid,))
                self._reseal_decision(con, pid)

    def _forged_proposer(self, con: Any, rng: random.Random, forged: bool) -> None:
        (pid,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r2' AND action = 'approve'").fetchone()
        second = con.execute("SELECT operator, account FROM phasegate_decisions WHERE action = 'second'").fetchone()
        if rng.random() < 0.5:
            con.execute(
                "UPDATE phasegate_decisions SET operator = ?, account = ? WHERE id = ?",
                (second["operator"], second["account"], pid),
            )
        else:  # the second made the proposer's: one person both times
            (prop,) = con.execute("SELECT account FROM phasegate_decisions WHERE id = ?", (pid,)).fetchone()
            con.execute("UPDATE phasegate_decisions SET account = ? WHERE action = 'second'", (prop,))
            (sid,) = con.execute("SELECT id FROM phasegate_decisions WHERE action = 'second'").fetchone()
            pid = sid
        if forged:
            self._reseal_decision(con, pid)

    def _reordered_policy(self, con: Any, rng: random.Random, forged: bool) -> None:
        rows = [dict(r) for r in con.execute("SELECT * FROM phasegate_policy ORDER BY id").fetchall()]
        a, b = rows[-2], rows[-1]
        moved = ("require_second_json", "reason", "at", "operator", "account")
        for row, other in ((a, b), (b, a)):
            con.execute(
                f"UPDATE phasegate_policy SET {', '.join(f'{c} = ?' for c in moved)} WHERE id = ?",
                (*[other[c] for c in moved], row["id"]),
            )
        (did,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r1' AND action = 'approve'").fetchone()
        con.execute("UPDATE phasegate_decisions SET state = 'pending' WHERE id = ?", (did,))
        if forged:
            for r in con.execute("SELECT * FROM phasegate_policy").fetchall():
                con.execute(
                    "UPDATE phasegate_policy SET seal = ? WHERE id = ?", (trail.policy_seal(dict(r), None), r["id"])
                )
            self._reseal_decision(con, did)

    def _uncancelled_row(self, con: Any, rng: random.Random, forged: bool) -> None:
        status = rng.choice(["running", "blocked"])
        con.execute(
            "UPDATE phasegate_runs SET status = ?, held_json = NULL, lease_owner = NULL, lease_expires_at = NULL"
            " WHERE run_id = 'r3'",
            (status,),
        )

    def _policy_tail(self, con: Any, rng: random.Random, forged: bool) -> None:
        rows = [dict(r) for r in con.execute("SELECT * FROM phasegate_policy ORDER BY id").fetchall()]
        newest, older = rows[-1], rows[-2]  # "strict again", and "relaxed" before it
        con.execute("DELETE FROM phasegate_policy WHERE id = ?", (newest["id"],))
        con.execute("UPDATE phasegate_meta SET value = ? WHERE key = 'policy_last'", (str(older["id"]),))
        con.execute("UPDATE phasegate_meta SET value = ? WHERE key = 'policy_count'", (str(len(rows) - 1),))
        (did,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r1' AND action = 'approve'").fetchone()
        con.execute("UPDATE phasegate_decisions SET state = 'pending', policy_id = ? WHERE id = ?", (older["id"], did))
        if forged:
            head = trail.policy_head_seal(int(older["id"]), len(rows) - 1, older["seal"], None)
            con.execute("UPDATE phasegate_meta SET value = ? WHERE key = 'policy_head'", (head,))
            self._reseal_decision(con, did)

    def _seal_downgrade(self, con: Any, rng: random.Random, forged: bool) -> None:
        con.execute("DELETE FROM phasegate_meta WHERE key = 'seal_key'")
        (did,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r1' AND action = 'approve'").fetchone()
        con.execute("UPDATE phasegate_decisions SET state = 'pending' WHERE id = ?", (did,))
        keyed = con.execute("SELECT seal FROM phasegate_decisions WHERE id = ?", (did,)).fetchone()[0].startswith("k1.")
        if forged:
            self._reseal_decision(con, did)
        elif not keyed:
            # A plain store: a keyed-looking seal planted (a seal of a kind the store does not carry).
            con.execute(
                "UPDATE phasegate_decisions SET seal = ? WHERE id = ?", ("k1." + "0" * 16 + "." + "a" * 64, did)
            )

    def _unheld_row(self, con: Any, rng: random.Random, forged: bool) -> None:
        status = rng.choice(["interrupted", "blocked", "running"])
        con.execute(
            "UPDATE phasegate_runs SET status = ?, held_json = NULL, lease_owner = NULL, lease_expires_at = NULL"
            " WHERE run_id = 'r4'",
            (status,),
        )

    def _lease_row(self, con: Any, rng: random.Random, forged: bool) -> None:
        # A worker long gone held it: the next one takes the run over (takeover.py), not resumes it.
        con.execute(
            "UPDATE phasegate_runs SET status = 'running', held_json = NULL, lease_owner = ?, lease_expires_at = ?"
            " WHERE run_id = 'r3'",
            (f"w-gone-{rng.randrange(1000)}", 1.0),
        )

    def _older_head(self, con: Any, rng: random.Random, forged: bool) -> None:
        head = self.heads[self._keyed]
        last = int(dict(head)["policy_last"])
        con.execute("DELETE FROM phasegate_policy WHERE id > ?", (last,))
        for k, v in head:
            con.execute("UPDATE phasegate_meta SET value = ? WHERE key = ?", (v, k))
        (did,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r1' AND action = 'approve'").fetchone()
        con.execute("UPDATE phasegate_decisions SET state = 'pending' WHERE id = ?", (did,))
        if forged:
            con.execute("UPDATE phasegate_decisions SET policy_id = ? WHERE id = ?", (last, did))
            self._reseal_decision(con, did)

    def _policy_deleted(self, con: Any, rng: random.Random, forged: bool) -> None:
        con.execute("DELETE FROM phasegate_policy")
        con.execute("DELETE FROM phasegate_meta WHERE key IN ('policy_last', 'policy_count', 'policy_head')")
        (did,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r1' AND action = 'approve'").fetchone()
        con.execute("UPDATE phasegate_decisions SET state = 'pending' WHERE id = ?", (did,))
        if forged:
            con.execute("UPDATE phasegate_decisions SET policy_id = NULL WHERE id = ?", (did,))
            self._reseal_decision(con, did)

    def _refused_answer(self, con: Any, rng: random.Random, forged: bool) -> None:
        row = con.execute("SELECT id, detail_json FROM phasegate_decisions WHERE run_id = 'r5' AND action = 'answer'")
        (did, detail) = row.fetchone()
        said = json.loads(detail)
        said["value"] = 5000
        con.execute("UPDATE phasegate_decisions SET detail_json = ? WHERE id = ?", (json.dumps(said), did))
        if forged:
            self._reseal_decision(con, did)


def soak(
    cases: int, seed: int, workdir: Path, *, backend: str = "sqlite", log: Callable[[str], None] = print
) -> list[Case]:
    """`cases` damaged copies, the kinds and modes drawn from `seed`: every
    kind raw in both modes and forged under a key, round after round, on
    `backend` (sqlite or postgres)."""
    s = DecisionSoak(workdir, backend=backend, log=log)
    rng = random.Random(seed)
    modes = [(False, False), (True, False), (True, True)]
    out: list[Case] = []
    try:
        for n in range(cases):
            kind = KINDS[n % len(KINDS)]
            keyed, forged = modes[(n // len(KINDS)) % len(modes)]
            c = s.case(n, random.Random(rng.getrandbits(64)), kind, keyed, forged)
            if not c.ok:
                log(f"case {n} {backend} {kind} keyed={keyed} forged={forged}: {'; '.join(c.notes)}")
            out.append(c)
    finally:
        s.close()
    return out


def summary(cases: list[Case]) -> str:
    """One line per backend and mode: detected and applied out of the cases."""
    lines = []
    for backend in BACKENDS:
        for keyed, forged in ((False, False), (True, False), (True, True)):
            group = [c for c in cases if (c.backend, c.keyed, c.forged) == (backend, keyed, forged)]
            if not group:
                continue
            mode = ("keyed" if keyed else "plain") + (", seals recomputed" if forged else ", raw edits")
            lines.append(
                f"decision damage ({backend}, {mode}): {len(group)} cases, {sum(c.detected for c in group)} detected,"
                f" {sum(c.applied for c in group)} applied"
            )
    return "\n".join(lines)
