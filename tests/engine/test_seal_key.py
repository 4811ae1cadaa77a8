"""A keyed seal (#29, What to build 2), through the command line: with
PHASEGATE_SEAL_KEY_FILE every seal (checkpoints, effect records, decisions,
policy changes) is an HMAC under a key kept outside the store, so an edit
whose hashes were all recomputed is still found; `verify` says which kind of
seal a store carries; a key is turned on and rotated with `reseal`."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from engine_harness import Harness, one_line_error

from phasegate.history import trail


def _key(h: Harness, name: str) -> str:
    path = h.tmp / f"{name}.key"
    path.write_bytes(os.urandom(32).hex().encode())
    path.chmod(0o600)
    return str(path)


def _keyed(path: str) -> dict[str, str]:
    return {"PHASEGATE_SEAL_KEY_FILE": path}


def _forge_checkpoint(h: Harness) -> None:
    """Swap the charge phase's output and recompute every hash over it: what
    a plain hash cannot catch (test_integrity.py's forged head)."""
    row = h.checkpoint("r1", "charge")
    forged = '{"charged":[]}'
    env = json.loads(row["envelope"])
    env["output_hash"] = hashlib.sha256(forged.encode()).hexdigest()
    envelope = json.dumps(env, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(envelope.encode()).hexdigest()
    h.sql(
        "UPDATE phasegate_checkpoints SET output_json=?, envelope=?, payload_hash=? WHERE id=?",
        (forged, envelope, digest, row["id"]),
    )
    h.sql("UPDATE phasegate_runs SET head_hash=? WHERE run_id='r1'", (digest,))


def test_a_recomputed_chain_passes_plain_seals_and_fails_keyed_ones(h):
    key = _key(h, "a")
    assert h.run("r1", kill="start:report", env=_keyed(key)).killed
    v = h.cli("verify", env=_keyed(key))
    assert v.returncode == 0 and "keyed: HMAC-SHA256 under key" in v.stdout, v
    _forge_checkpoint(h)
    v = h.cli("verify", "--json", env=_keyed(key))
    assert v.returncode == 3, v
    (r,) = json.loads(v.stdout)
    assert r["failure"]["what"] == "seal" and r["seals"].startswith("keyed:")
    p = h.resume("r1", env=_keyed(key))
    assert p.returncode == 3 and "integrity" in p.stdout, p


def test_plain_seals_say_so_and_miss_a_recomputed_chain(h):
    assert h.run("r1", kill="start:report").killed
    _forge_checkpoint(h)
    v = h.cli("verify")
    assert v.returncode == 0 and "plain SHA-256 hashes (no seal key)" in v.stdout, v


def test_a_decision_forged_with_a_recomputed_plain_seal_is_found_under_a_key(h):
    key = _key(h, "a")
    env = _keyed(key)
    assert h.run("r1", kill="start:charge", env=env).killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1", env=env).returncode == 3
    assert h.cli("policy", "--require-second", "reset", "--reason", "two", env=env).returncode == 0
    assert h.decide("r1", "approve", reason="fine", env=env).returncode == 0
    cols = list(trail.DECISION_SEALED)
    (row,) = h.sql(f"SELECT {', '.join(cols)} FROM phasegate_decisions")
    rec = dict(zip(cols, row, strict=True))
    rec["reason"] = "approved by the auditor"
    h.sql("UPDATE phasegate_decisions SET reason = ?, seal = ?", (rec["reason"], trail.decision_seal(rec, None)))
    v = h.cli("verify", "--json", env=env)
    assert v.returncode == 3
    (r,) = [r for r in json.loads(v.stdout) if r["run_id"] == "r1"]
    assert r["decisions"][0]["problem"] == "edited" and "plain hash" in r["decisions"][0]["detail"]


def test_a_key_is_turned_on_and_rotated_and_the_wrong_key_is_refused(h):
    a, b = _key(h, "a"), _key(h, "b")
    assert h.run("r1", kill="start:charge").killed
    assert h.cli("policy", "--require-second", "reset", "--reason", "two").returncode == 0
    p = h.cli("reseal", "--key-file", a)
    assert p.returncode == 0 and "under key" in p.stdout, p
    # Without the key (or with another) nothing is written; one line says why.
    before = h.dump()
    line = one_line_error(h.resume("r1"))
    assert "PHASEGATE_SEAL_KEY_FILE" in line
    one_line_error(h.resume("r1", env=_keyed(b)))
    assert h.dump() == before
    # Reading still works without the key; verify says it could not check the keyed seals.
    assert h.cli("status").returncode == 0
    v = h.cli("verify", env=_keyed(b))
    assert v.returncode == 0 and "were not checked" in v.stdout, v
    assert h.dump() == before
    assert h.cli("verify", env=_keyed(a)).returncode == 0
    # Rotation: the old key in the environment, the new one named.
    p = h.cli("reseal", "--key-file", b, env=_keyed(a))
    assert p.returncode == 0, p
    one_line_error(h.resume("r1", env=_keyed(a)))
    v = h.cli("verify", env=_keyed(b))
    assert v.returncode == 0 and "under key" in v.stdout, v
    assert h.resume("r1", env=_keyed(b)).returncode == 0
    assert h.cli("verify", env=_keyed(b)).returncode == 0
    # And off again.
    assert h.cli("reseal", "--unkeyed", env=_keyed(b)).returncode == 0
    assert "plain SHA-256" in h.cli("verify").stdout


def test_a_damaged_store_is_not_resealed(h):
    a = _key(h, "a")
    assert h.run("r1", kill="start:report").killed
    h.sql("UPDATE phasegate_checkpoints SET output_json = '{\"x\":1}' WHERE phase = 'charge'")
    before = h.dump()
    assert "damage" in one_line_error(h.cli("reseal", "--key-file", a))
    assert h.dump() == before


def test_a_key_file_others_can_read_or_that_is_missing_is_refused(h):
    assert h.run("r1").returncode == 0
    key = _key(h, "a")
    Path(key).chmod(0o644)
    before = h.dump()
    assert "0600" in one_line_error(h.cli("verify", env=_keyed(key)))
    assert "cannot open" in one_line_error(h.cli("verify", env=_keyed(str(h.tmp / "nope.key"))))
    short = h.tmp / "short.key"
    short.write_bytes(b"abc")
    short.chmod(0o600)
    assert "at least 32" in one_line_error(h.cli("verify", env=_keyed(str(short))))
    assert h.dump() == before
