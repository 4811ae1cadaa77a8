"""Trust round 3 (#38), through a second OS account: the forger is `nobody`,
who may write the store (its file and folder are world-writable, as a shared
store's group often is) but not read the key (0600, root's) nor write beside
it. Each finding that is about another account's reach is played by that
account itself (`setpriv --reuid nobody`), its edits through sqlite3 and its
worker without the key, and the key's holder (root, this test) must find
every one and apply nothing."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from engine_harness import Harness

from phasegate.history import trail
from tests.support import cli
from tests.support.cli import child_env

NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]
KEY_ENV = "PHASEGATE_SEAL_KEY_FILE"

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="a second OS account (nobody) needs root and setpriv",
)


@pytest.fixture
def world() -> Iterator[tuple[Harness, dict[str, str]]]:
    """A keyed SQLite store nobody may write, and root's key nobody may not read."""
    # pytest's folders are private to root; the forger must reach the store.
    work = Path(tempfile.mkdtemp(prefix="phasegate-accounts-"))
    work.chmod(0o777)
    store = work / "store"
    store.mkdir()
    store.chmod(0o777)
    private = work / "root-only"
    private.mkdir(mode=0o700)
    key = private / "seal.key"
    key.write_bytes(os.urandom(32).hex().encode())
    key.chmod(0o600)
    h = Harness(store)
    env = {KEY_ENV: str(key)}
    h.env.update(env)
    try:
        yield h, env
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _share(h: Harness) -> None:
    for f in h.tmp.iterdir():
        f.chmod(0o666)


_EDIT = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript(sys.argv[2])
con.commit()
"""


def _as_nobody_sql(h: Harness, script: str) -> None:
    """sqlite3 edits by the forger's own account."""
    _share(h)
    p = subprocess.run(
        ["setpriv", *NOBODY, sys.executable, "-c", _EDIT, str(h.db), script],
        env=child_env(),
        capture_output=True,
        text=True,
        cwd="/",
        timeout=60,
    )
    assert p.returncode == 0, p.stderr


def _as_nobody(h: Harness, *args: str) -> cli.Result:
    """phasegate as the forger, without the key (it cannot read root's)."""
    _share(h)
    return cli.run([*args, "--db", h.target], env={**h.env, KEY_ENV: ""}, mode="exec", wrapper=["setpriv", *NOBODY])


def test_the_forger_cannot_read_the_key_nor_write_beside_it(world: tuple[Harness, dict[str, str]]) -> None:
    h, env = world
    assert h.run("r1", kill="start:charge").killed
    key = Path(env[KEY_ENV])
    p = subprocess.run(
        ["setpriv", *NOBODY, sys.executable, "-c", f"open({str(key)!r}).read()"],
        env=child_env(),
        capture_output=True,
        text=True,
        cwd="/",
        timeout=60,
    )
    assert p.returncode != 0 and "Permission denied" in p.stderr, p
    # A key file the forger hands root (its own) is refused by name: a key must be its reader's.
    theirs = h.tmp / "their.key"
    theirs.write_bytes(os.urandom(32).hex().encode())
    theirs.chmod(0o600)
    os.chown(theirs, 65534, 65534)
    v = h.cli("verify", env={KEY_ENV: str(theirs)})
    assert v.returncode == 2 and v.stderr.count("\n") == 1, v
    assert KEY_ENV in v.stderr and "not this user" in v.stderr, v


def test_a_cancelled_run_uncancelled_by_another_account_stays_cancelled(world: tuple[Harness, dict[str, str]]) -> None:
    """Finding 3, by the forger's hand: one UPDATE of the run row, then the
    forger's own worker (no key) and root's resume: nothing runs."""
    h, env = world
    assert h.run("r1", kill="start:charge").killed
    h.clear_trace()
    assert h.cli("cancel", "r1", "--reason", "customer withdrew").returncode == 0
    _as_nobody_sql(h, "UPDATE phasegate_runs SET status = 'interrupted', held_json = NULL WHERE run_id = 'r1';")
    w = _as_nobody(h, "worker", "--once")
    assert "Traceback" not in w.stderr, w
    r = h.resume("r1")
    assert r.returncode == 3 and "integrity" in r.stdout, r
    assert h.trace() == [] and h.charges() == []
    v = h.cli("verify", "--json")
    assert v.returncode == 3 and "cancelled run is final" in v.stdout, v


def test_a_policy_taken_back_by_another_account_is_found_by_the_key_holder(
    world: tuple[Harness, dict[str, str]],
) -> None:
    """Finding 2 and its holes, by the forger's hand: the policy's newer change
    deleted and an older head (a copy the forger took) put back, before
    anyone decided under it. No decision names the change; the head the
    key's holder kept beside its key (which the forger cannot write) does."""
    h, env = world
    assert h.run("r1", kill="start:charge").killed
    assert h.cli("policy", "--require-second", "reset", "--reason", "one").returncode == 0
    head = h.sql("SELECT key, value FROM phasegate_meta WHERE key IN ('policy_last', 'policy_count', 'policy_head')")
    assert h.cli("policy", "--require-second", "rewind,cancel,pause", "--reason", "two").returncode == 0
    last = dict(head)["policy_last"]
    puts = "".join(f"UPDATE phasegate_meta SET value = '{v}' WHERE key = '{k}';" for k, v in head)
    _as_nobody_sql(h, f"DELETE FROM phasegate_policy WHERE id > {int(last)};{puts}")
    # The witness is root's, in root's folder: the forger cannot move it back too.
    seen = str(env[KEY_ENV]) + ".seen"
    assert Path(seen).exists()
    p = subprocess.run(
        ["setpriv", *NOBODY, sys.executable, "-c", f"open({seen!r}, 'w')"],
        env=child_env(), capture_output=True, text=True, cwd="/", timeout=60,
    )  # fmt: skip
    assert p.returncode != 0 and "Permission denied" in p.stderr, p
    v = h.cli("verify", "--json")
    assert v.returncode == 3, v
    (pol,) = [r for r in json.loads(v.stdout) if r.get("policy")]
    assert any("this key's holder saw 2" in d["detail"] for d in pol["policy"]), pol
    before = h.dump()
    c = h.cli("cancel", "r1", "--reason", "alone")
    assert c.returncode != 0 and "policy's history is damaged" in c.stderr, c
    assert h.dump() == before


def test_a_keyed_store_downgraded_by_another_account_applies_nothing(world: tuple[Harness, dict[str, str]]) -> None:
    """Finding 4, by the forger's hand: the key mark deleted and a plain-hash
    second by mallory added; the forger's own worker (never given the key)
    and root's (with it) both apply nothing."""
    h, env = world
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3
    assert h.cli("policy", "--require-second", "approve", "--reason", "two people").returncode == 0
    p = h.decide("r1", "approve", reason="the new rate is right")
    assert p.returncode == 0 and "proposed" in p.stdout, p
    markers = h.sql("SELECT count(*) FROM phasegate_checkpoints WHERE kind = 'env'")
    cols = list(trail.DECISION_SEALED)
    with closing(sqlite3.connect(h.db)) as con:
        con.row_factory = sqlite3.Row
        prop = dict(con.execute("SELECT * FROM phasegate_decisions WHERE action = 'approve'").fetchone())
    second = {**prop, "id": prop["id"] + 1, "action": "second", "operator": "mallory", "account": "mallory",
              "state": "applied", "prev_id": prop["id"], "detail_json": json.dumps({"decision": prop["id"]}),
              "seconded_by": None, "expires_at": None}  # fmt: skip
    prop.update(state="pending", seconded_by=second["id"])

    def lit(v: object) -> str:
        return (
            "NULL" if v is None else (str(v) if isinstance(v, int | float) else "'" + str(v).replace("'", "''") + "'")
        )

    vals = ", ".join(lit(second[c]) for c in cols)
    _as_nobody_sql(
        h,
        "DELETE FROM phasegate_meta WHERE key = 'seal_key';"
        f"INSERT INTO phasegate_decisions ({', '.join(cols)}, seal) VALUES ({vals}, {lit(trail.decision_seal(second, None))});"
        f"UPDATE phasegate_decisions SET state = 'pending', seconded_by = {second['id']},"
        f" seal = {lit(trail.decision_seal(prop, None))} WHERE id = {prop['id']};"
        f"UPDATE phasegate_runs SET decisions_last = {second['id']}, decisions_count = decisions_count + 1;",
    )  # fmt: skip
    w = _as_nobody(h, "worker", "--once")
    assert "Traceback" not in w.stderr, w
    assert h.cli("worker", "--once").returncode in (0, 3)
    assert h.sql("SELECT count(*) FROM phasegate_checkpoints WHERE kind = 'env'") == markers
    assert h.charges() == [] and h.status("r1")["status"] == "blocked"
    assert h.cli("verify").returncode == 3
