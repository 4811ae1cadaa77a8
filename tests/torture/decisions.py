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

each raw (the seals left as they were) and, in a store sealed under a key,
also forged: every seal the edit touched recomputed as a plain hash, which
is all a forger without the key can do. A store without a key is only held
to the raw edits: a plain hash is recomputed by anyone (history/seals.py).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from phasegate.history import trail
from tests.engine.engine_harness import Harness

KINDS = (
    "edited-state",
    "deleted-second",
    "forged-proposer",
    "reordered-policy",
    "uncancelled-row",
    "policy-tail",
    "seal-downgrade",
)
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
}


@dataclass
class Case:
    """One damaged copy and what came of it."""

    kind: str
    keyed: bool
    forged: bool
    detected: bool = False
    applied: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.detected and not self.applied


class DecisionSoak:
    """A base store per seal mode, built once, and the cases over copies of it."""

    def __init__(self, workdir: Path, *, log: Callable[[str], None] = print) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o777)
        self.log = log
        secret = os.urandom(32).hex().encode()
        self.key = self.dir / "seal.key"
        self.key.write_bytes(secret)
        self.key.chmod(0o600)
        # The second operator's own copy of the key: a key file must be its reader's.
        self.nobody_key = self.dir / "nobody.key"
        self.nobody_key.write_bytes(secret)
        self.nobody_key.chmod(0o600)
        os.chown(self.nobody_key, 65534, 65534)
        self.bases = {keyed: self._build(keyed) for keyed in (False, True)}

    def env(self, keyed: bool) -> dict[str, str]:
        return {"PHASEGATE_SEAL_KEY_FILE": str(self.key) if keyed else ""}

    def _build(self, keyed: bool) -> Harness:
        folder = self.dir / ("base-keyed" if keyed else "base-plain")
        folder.mkdir()
        os.chmod(folder, 0o777)
        h = Harness(folder)
        h.env.update(self.env(keyed))
        for rid in ("r1", "r2", "r3"):
            assert h.run(rid, kill="start:charge").killed
        h.tax.write_text("vat-2026-v2")
        for rid in ("r1", "r2", "r3"):
            assert h.resume(rid).returncode == 3
        # r3 is cancelled (the policy never lists cancel: one person may).
        assert h.cli("cancel", "r3", "--reason", "customer withdrew").returncode == 0
        for reason, acts in (("strict", "approve,reset"), ("relaxed", ""), ("strict again", "approve,reset")):
            assert h.cli("policy", "--require-second", acts, "--reason", reason).returncode == 0
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

    # -- a case ---------------------------------------------------------------

    def case(self, n: int, rng: random.Random, kind: str, keyed: bool, forged: bool) -> Case:
        folder = self.dir / f"case-{n}"
        base = self.bases[keyed]
        shutil.copytree(base.tmp, folder)
        h = Harness(folder)
        h.env.update(self.env(keyed))
        h.tax.write_text("vat-2026-v2")
        c = Case(kind, keyed, forged)
        target = TARGET[kind]
        charges = self._charges(h, target)
        with closing(sqlite3.connect(h.db)) as con:
            con.row_factory = sqlite3.Row
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
        shutil.rmtree(folder, ignore_errors=True)
        return c

    @staticmethod
    def _charges(h: Harness, run_id: str) -> int:
        return sum(1 for k in h.charge_keys() if k.startswith(run_id + "/"))

    # -- the damage -------------------------------------------------------------

    @staticmethod
    def _reseal_decision(con: sqlite3.Connection, did: int) -> None:
        """What a forger without the key can do: a plain hash over the row."""
        row = dict(con.execute("SELECT * FROM phasegate_decisions WHERE id = ?", (did,)).fetchone())
        con.execute("UPDATE phasegate_decisions SET seal = ? WHERE id = ?", (trail.decision_seal(row, None), did))

    def _edited_state(self, con: sqlite3.Connection, rng: random.Random, forged: bool) -> None:
        (did,) = con.execute("SELECT id FROM phasegate_decisions WHERE run_id = 'r1' AND action = 'approve'").fetchone()
        con.execute("UPDATE phasegate_decisions SET state = ? WHERE id = ?", (rng.choice(["pending", "applied"]), did))
        if forged:
            self._reseal_decision(con, did)

    def _deleted_second(self, con: sqlite3.Connection, rng: random.Random, forged: bool) -> None:
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

    def _forged_proposer(self, con: sqlite3.Connection, rng: random.Random, forged: bool) -> None:
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

    def _reordered_policy(self, con: sqlite3.Connection, rng: random.Random, forged: bool) -> None:
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

    def _uncancelled_row(self, con: sqlite3.Connection, rng: random.Random, forged: bool) -> None:
        status = rng.choice(["running", "blocked"])
        con.execute(
            "UPDATE phasegate_runs SET status = ?, held_json = NULL, lease_owner = NULL, lease_expires_at = NULL"
            " WHERE run_id = 'r3'",
            (status,),
        )

    def _policy_tail(self, con: sqlite3.Connection, rng: random.Random, forged: bool) -> None:
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

    def _seal_downgrade(self, con: sqlite3.Connection, rng: random.Random, forged: bool) -> None:
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


def soak(cases: int, seed: int, workdir: Path, *, log: Callable[[str], None] = print) -> list[Case]:
    """`cases` damaged copies, the kinds and modes drawn from `seed`: every
    kind raw in both modes and forged under a key, round after round."""
    s = DecisionSoak(workdir, log=log)
    rng = random.Random(seed)
    modes = [(False, False), (True, False), (True, True)]
    out: list[Case] = []
    for n in range(cases):
        kind = KINDS[n % len(KINDS)]
        keyed, forged = modes[(n // len(KINDS)) % len(modes)]
        c = s.case(n, random.Random(rng.getrandbits(64)), kind, keyed, forged)
        if not c.ok:
            log(f"case {n} {kind} keyed={keyed} forged={forged}: {'; '.join(c.notes)}")
        out.append(c)
    return out


def summary(cases: list[Case]) -> str:
    """One line per mode: detected and applied out of the cases."""
    lines = []
    for keyed, forged in ((False, False), (True, False), (True, True)):
        group = [c for c in cases if (c.keyed, c.forged) == (keyed, forged)]
        if not group:
            continue
        mode = ("keyed" if keyed else "plain") + (", seals recomputed" if forged else ", raw edits")
        lines.append(
            f"decision damage ({mode}): {len(group)} cases, {sum(c.detected for c in group)} detected,"
            f" {sum(c.applied for c in group)} applied"
        )
    return "\n".join(lines)
