"""Trust round 3 (#38), the key's findings, through the command line and
sqlite3 / psql edits: one key per store (6), a keyed store stays keyed (4),
keys that are keys (5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from engine_harness import BILLING_FILE, Harness, one_line_error

from phasegate.history import seals, trail
from tests.support.cli import child_env

KEY_ENV = "PHASEGATE_SEAL_KEY_FILE"


def _key(h: Harness, name: str, data: bytes | None = None) -> str:
    path = h.tmp / f"{name}.key"
    path.write_bytes(data if data is not None else os.urandom(32).hex().encode())
    path.chmod(0o600)
    return str(path)


# -- 6: one key per store ------------------------------------------------------

_TWO_STORES = """
import importlib.util, json, os, sys
from phasegate import Engine

spec = importlib.util.spec_from_file_location("billing_two", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
keyed_db, plain_db, key_file, ledger = sys.argv[2:6]
os.environ["PHASEGATE_SEAL_KEY_FILE"] = key_file
keyed = Engine(keyed_db)
del os.environ["PHASEGATE_SEAL_KEY_FILE"]
plain = Engine(plain_db)
# Opened last, the plain store must not decide the keyed one's seals (nor the other way round).
out = {}
for name, eng in (("keyed", keyed), ("plain", plain)):
    o = eng.run(mod.wf, "r1", {"ledger": ledger + name})
    out[name] = [o.status.value, eng.seal_kind()]
for name, eng in (("keyed", keyed), ("plain", plain)):
    out[name].append([r.ok for r in eng.verify()])
print(json.dumps(out))
"""


def test_two_stores_keyed_and_not_open_in_one_process_each_keep_their_own_seals(h: Harness) -> None:
    key = _key(h, "a")
    env = {KEY_ENV: key}
    # The keyed store exists under its key, the plain one not yet.
    assert h.run("r0", env=env).returncode == 0
    plain_db = h.tmp / "plain.db"
    script = h.tmp / "two.py"
    script.write_text(_TWO_STORES)
    p = subprocess.run(
        [sys.executable, str(script), str(BILLING_FILE), h.target, str(plain_db), key, str(h.ledger)],
        env={**child_env(), **h.env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["keyed"][0] == got["plain"][0] == "completed", got
    assert "keyed: HMAC-SHA256" in got["keyed"][1] and "plain SHA-256" in got["plain"][1], got
    assert got["keyed"][2] == [True, True] and got["plain"][2] == [True], got
    # And from outside: every seal of the keyed store is keyed, none of the plain one's.
    v = h.cli("verify", env=env)
    assert v.returncode == 0 and "2 ok, 0 damaged" in v.stdout, v
    assert all(s.startswith("k1.") for (s,) in h.sql("SELECT seal FROM phasegate_checkpoints")), "plain seal"
    q = subprocess.run(
        [sys.executable, "-m", "phasegate", "verify", "--db", str(plain_db)],
        env={**child_env(), **h.env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert q.returncode == 0 and "plain SHA-256" in q.stdout and "1 ok, 0 damaged" in q.stdout, q


# -- 4: a keyed store stays keyed ---------------------------------------------


def _forge_plain_second(h: Harness) -> None:
    """What finding 4's forger did: meta's seal_key deleted, and a plain-hash
    second by mallory added to the run's decision history."""
    h.sql("DELETE FROM phasegate_meta WHERE key = 'seal_key'")
    cols = list(trail.DECISION_SEALED)
    rows = h.sql(f"SELECT {', '.join(cols)} FROM phasegate_decisions WHERE run_id = 'r1' ORDER BY id")
    prop = dict(zip(cols, rows[-1], strict=True))
    second = {
        **prop,
        "id": int(prop["id"]) + 1,
        "action": "second",
        "operator": "mallory",
        "account": "mallory",
        "state": "applied",
        "reason": "looks fine",
        "prev_id": prop["id"],
        "detail_json": json.dumps({"decision": prop["id"]}),
        "seconded_by": None,
        "expires_at": None,
    }
    h.sql(
        f"INSERT INTO phasegate_decisions ({', '.join(cols)}, seal) VALUES ({', '.join('?' * (len(cols) + 1))})",
        (*[second[c] for c in cols], trail.decision_seal(second, None)),
    )
    prop.update(state="pending", seconded_by=second["id"])
    h.sql(
        "UPDATE phasegate_decisions SET state = 'pending', seconded_by = ?, seal = ? WHERE id = ?",
        (second["id"], trail.decision_seal(prop, None), prop["id"]),
    )
    h.sql(
        "UPDATE phasegate_runs SET decisions_last = ?, decisions_count = decisions_count + 1 WHERE run_id = 'r1'",
        (second["id"],),
    )


def test_deleting_the_key_mark_does_not_downgrade_a_keyed_store(h: Harness) -> None:
    key = _key(h, "a")
    env = {KEY_ENV: key}
    assert h.run("r1", kill="start:charge", env=env).killed
    assert h.cli("policy", "--require-second", "cancel", "--reason", "two", env=env).returncode == 0
    p = h.decide("r1", "cancel", reason="stop it", env=env)
    assert p.returncode == 0 and "second" in p.stdout, p
    _forge_plain_second(h)
    # With the key: the plain seals are damage, whatever meta says (recorded on the run).
    v = h.cli("verify", "--json", env=env)
    assert v.returncode == 3, v
    (r,) = [r for r in json.loads(v.stdout) if r["run_id"] == "r1"]
    assert any("plain hash" in d["detail"] for d in r["decisions"]), r
    before = h.dump()
    # Without the key: the store is still keyed (its records say so), and
    # a worker that was never given the key applies nothing.
    v = h.cli("verify", "--json")
    assert v.returncode == 3, v
    (r,) = [r for r in json.loads(v.stdout) if r["run_id"] == "r1"]
    assert any("plain hash" in d["detail"] for d in r["decisions"]), r
    line = one_line_error(h.resume("r1"))
    assert KEY_ENV in line
    assert h.status("r1")["status"] != "cancelled"
    assert "charge" not in h.trace()
    assert h.dump() == before


def _plain_reseal_newest_effect(h: Harness) -> None:
    """The newest effect record sealed anew with a plain hash: what someone
    without the key, who can write the store, can do."""
    names = [r[0] for r in _columns(h, "phasegate_effects")]
    (row,) = h.sql("SELECT * FROM phasegate_effects ORDER BY id DESC LIMIT 1")
    rec = dict(zip(names, row, strict=True))
    h.sql("UPDATE phasegate_effects SET seal = ? WHERE id = ?", (seals.seal(rec, None), rec["id"]))


def test_a_plain_seal_on_a_keyed_store_is_damage_without_the_key(h: Harness) -> None:
    key = _key(h, "a")
    assert h.run("r1", kill="start:report", env={KEY_ENV: key}).killed
    _plain_reseal_newest_effect(h)
    v = h.cli("verify")
    assert v.returncode == 3 and "plain hash" in v.stdout, v


def _columns(h: Harness, table: str) -> list[tuple[str]]:
    if h.backend == "postgres":
        return h.sql(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND table_schema = current_schema()"
            " ORDER BY ordinal_position",
            (table,),
        )
    return [(r[1],) for r in h.sql(f"PRAGMA table_info({table})")]


def test_a_key_meeting_a_store_without_its_mark_is_reported(h: Harness) -> None:
    key = _key(h, "a")
    assert h.run("r1").returncode == 0
    before = h.dump()
    v = h.cli("verify", env={KEY_ENV: key})
    assert v.returncode == 3, v
    assert "DAMAGED   store:" in v.stdout and "no mark of a seal key" in v.stdout, v
    j = h.cli("verify", "--json", env={KEY_ENV: key})
    assert j.returncode == 3
    store = [r for r in json.loads(j.stdout) if r["run_id"] is None]
    assert [r["failure"]["what"] for r in store] == ["seal"], j.stdout
    assert h.dump() == before


def test_a_forger_who_makes_the_newest_records_plain_is_still_found(h: Harness) -> None:
    """The store's key mark, read from its newest records, is taken only by
    rewriting them; then the older keyed seals are damage on a plain store."""
    key = _key(h, "a")
    assert h.run("r1", kill="start:report", env={KEY_ENV: key}).killed
    h.sql("DELETE FROM phasegate_meta WHERE key = 'seal_key'")
    (last,) = h.sql("SELECT max(id) FROM phasegate_checkpoints")
    h.sql("UPDATE phasegate_checkpoints SET seal = NULL WHERE id = ?", last)
    _plain_reseal_newest_effect(h)
    v = h.cli("verify")
    assert v.returncode == 3 and "on a store sealed" in v.stdout, v
    v = h.cli("verify", env={KEY_ENV: key})
    assert v.returncode == 3 and "DAMAGED   store:" in v.stdout, v


# -- 5: keys that are keys -----------------------------------------------------


def test_a_store_or_a_weak_key_is_refused_naming_what_named_it(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    other = h.tmp / "other.db"
    assert h.cli("run", f"{BILLING_FILE}:wf", "--run-id", "x", "--input", h.inputs(), db=False,
                 env={"PHASEGATE_DB": str(other)}).returncode == 0  # fmt: skip
    other.chmod(0o600)
    weak = _key(h, "weak", b"a" * 32)
    filler = _key(h, "filler", b"0123456789" * 4)
    before = h.dump()
    for bad, why in ((str(other), "SQLite"), (weak, "repeated"), (filler, "repeated")):
        line = one_line_error(h.cli("reseal", "--key-file", bad))
        assert line.startswith("phasegate: ") and "reseal --key-file" in line and why in line, line
        assert KEY_ENV not in line, line
        line = one_line_error(h.cli("verify", env={KEY_ENV: bad}))
        assert KEY_ENV in line and why in line and "--key-file" not in line, line
    if h.backend == "sqlite":
        h.db.chmod(0o600)
        line = one_line_error(h.cli("reseal", "--key-file", str(h.db)))
        assert "reseal --key-file" in line, line
    assert h.dump() == before
