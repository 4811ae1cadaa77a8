"""Trust round 3 (#38), finding 2 / What to build 3: the policy's head (its
newest change and count) is sealed, keyed where the store is, so deleting the
newest change and moving the meta's head back is found by `verify`, and no
decision is taken under the older rule; the upgrade from schema 6 seals the
head as it stands."""

from __future__ import annotations

import json
import os

import pytest
from engine_harness import Harness

from phasegate.store.schema import SCHEMA_VERSION

KEY_ENV = "PHASEGATE_SEAL_KEY_FILE"


def _keyed(h: Harness) -> dict[str, str]:
    key = h.tmp / "seal.key"
    key.write_bytes(os.urandom(32).hex().encode())
    key.chmod(0o600)
    return {KEY_ENV: str(key)}


def _two_policies(h: Harness, env: dict[str, str]) -> None:
    assert h.run("r1", kill="start:charge", env=env).killed
    assert h.cli("policy", "--require-second", "reset", "--reason", "one", env=env).returncode == 0
    p = h.cli("policy", "--require-second", "rewind,cancel,pause", "--reason", "two", env=env)
    assert p.returncode == 0, p


def _delete_the_newest_change(h: Harness) -> None:
    """Finding 2's forger: the newest change deleted, and the unsealed meta
    `policy_last`/`policy_count` moved back to the change before it."""
    ((last, before),) = h.sql("SELECT max(id), min(id) FROM phasegate_policy")
    h.sql("DELETE FROM phasegate_policy WHERE id = ?", (last,))
    h.sql("UPDATE phasegate_meta SET value = ? WHERE key = 'policy_last'", (str(before),))
    h.sql("UPDATE phasegate_meta SET value = '1' WHERE key = 'policy_count'")


def test_deleting_the_newest_policy_change_is_found_and_relaxes_nothing(h: Harness) -> None:
    env = _keyed(h)
    _two_policies(h, env)
    _delete_the_newest_change(h)
    v = h.cli("verify", "--json", env=env)
    assert v.returncode == 3, v
    (pol,) = [r for r in json.loads(v.stdout) if r.get("policy")]
    assert any("policy's head" in d["detail"] for d in pol["policy"]), pol
    # One person's cancel is not applied under the older rule.
    before = h.dump()
    c = h.cli("cancel", "r1", "--reason", "alone", env=env)
    assert c.returncode != 0 and "policy's history is damaged" in c.stderr, c
    assert h.status("r1")["status"] != "cancelled"
    assert h.dump() == before


def test_a_plain_store_finds_the_deletion_unless_the_forger_recomputes_the_head(h: Harness) -> None:
    _two_policies(h, {})
    _delete_the_newest_change(h)
    v = h.cli("verify")
    assert v.returncode == 3 and "policy's head" in v.stdout, v


@pytest.mark.parametrize("keyed", [False, True])
def test_the_upgrade_from_6_seals_the_policy_head_as_it_stands(h: Harness, keyed: bool) -> None:
    env = _keyed(h) if keyed else {}
    _two_policies(h, env)
    h.sql("UPDATE phasegate_meta SET value = '6' WHERE key = 'schema_version'")
    h.sql("DELETE FROM phasegate_meta WHERE key = 'policy_head'")
    v = h.cli("verify", env=env)
    assert v.returncode == 0, v
    assert h.sql("SELECT value FROM phasegate_meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    ((head,),) = h.sql("SELECT value FROM phasegate_meta WHERE key = 'policy_head'")
    assert head.startswith("k1.") is keyed
    # And it holds from then on.
    _delete_the_newest_change(h)
    assert h.cli("verify", env=env).returncode == 3


def test_a_keyed_store_upgraded_without_its_key_is_left_unsealed_and_says_so(h: Harness) -> None:
    env = _keyed(h)
    _two_policies(h, env)
    h.sql("UPDATE phasegate_meta SET value = '6' WHERE key = 'schema_version'")
    h.sql("DELETE FROM phasegate_meta WHERE key = 'policy_head'")
    assert h.cli("status").returncode == 0  # opened (and upgraded) without the key
    v = h.cli("verify", env=env)
    assert v.returncode == 3 and "has no seal" in v.stdout, v
    # Recording the policy anew, with the key, seals the head again.
    assert h.cli("policy", "--require-second", "rewind,cancel,pause", "--reason", "anew", env=env).returncode == 0
    assert h.cli("verify", env=env).returncode == 0


def _head(h: Harness) -> list[tuple[str, str]]:
    rows = h.sql(
        "SELECT key, value FROM phasegate_meta WHERE key IN ('policy_last', 'policy_count', 'policy_head') ORDER BY key"
    )
    return [(str(k), str(v)) for k, v in rows]


def _older_head_restored(h: Harness, head: list[tuple[str, str]]) -> None:
    """A forger's replay: every change after the copied head deleted, and the
    copy (a head phasegate itself sealed, earlier) put back."""
    last = int(dict(head)["policy_last"])
    h.sql("DELETE FROM phasegate_policy WHERE id > ?", (last,))
    for k, v in head:
        h.sql("UPDATE phasegate_meta SET value = ? WHERE key = ?", (v, k))


def _policy_deleted(h: Harness, head: list[tuple[str, str]]) -> None:
    """The whole policy gone: every change and the head, as if none was ever recorded."""
    h.sql("DELETE FROM phasegate_policy")
    h.sql("DELETE FROM phasegate_meta WHERE key IN ('policy_last', 'policy_count', 'policy_head')")


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("forgery", [_older_head_restored, _policy_deleted], ids=["older-head", "deleted"])
def test_an_older_head_restored_or_the_policy_deleted_is_found(h: Harness, keyed: bool, forgery) -> None:
    """Both seal true (an older head is one phasegate sealed; no policy at all
    is a store that never had one): the decisions fitted under the newer
    changes anchor the head, by their own seals, for `verify`, for `decide`
    and for the start sequence."""
    env = _keyed(h) if keyed else {}
    assert h.run("r1", kill="start:charge", env=env).killed
    assert h.run("r2", kill="start:charge", env=env).killed
    assert h.cli("policy", "--require-second", "reset", "--reason", "one", env=env).returncode == 0
    head = _head(h)
    p = h.cli("policy", "--require-second", "rewind,cancel,pause", "--reason", "two", env=env)
    assert p.returncode == 0, p
    p = h.cli("cancel", "r2", "--reason", "duplicate order", env=env)
    assert p.returncode == 0 and "proposed" in p.stdout, p
    assert h.cli("verify", env=env).returncode == 0
    forgery(h, head)
    v = h.cli("verify", "--json", env=env)
    assert v.returncode == 3, v
    (pol,) = [r for r in json.loads(v.stdout) if r.get("policy")]
    assert any("named by sealed decisions" in d["detail"] for d in pol["policy"]), pol
    # One person's cancel of the other run is not applied under the older rule (or none).
    before = h.dump()
    c = h.cli("cancel", "r1", "--reason", "alone", env=env)
    assert c.returncode != 0 and "policy's history is damaged" in c.stderr, c
    assert h.dump() == before
    # The run whose proposal names the deleted change stops at its start.
    r = h.resume("r2", env=env)
    assert r.returncode == 3 and "integrity" in r.stdout, r
    assert h.charges() == []
    assert {h.status(r)["status"] for r in ("r1", "r2")} <= {"interrupted", "blocked"}


@pytest.mark.parametrize("forgery", [_older_head_restored, _policy_deleted], ids=["older-head", "deleted"])
def test_a_tail_no_decision_names_yet_is_anchored_by_the_key_holders_witness(h: Harness, forgery) -> None:
    """The change a forger takes back before anyone decided under it: no
    decision names it, and an older head seals true. The key's holder kept
    the head it wrote beside its key (history/witness.py): `verify`, `decide`
    and the start sequence find the store's head older than that; recording
    the policy anew is the operator's word for it again."""
    env = _keyed(h)
    assert h.run("r1", kill="start:charge", env=env).killed
    assert h.cli("policy", "--require-second", "reset", "--reason", "one", env=env).returncode == 0
    head = _head(h)
    p = h.cli("policy", "--require-second", "rewind,cancel,pause", "--reason", "two", env=env)
    assert p.returncode == 0, p
    forgery(h, head)
    v = h.cli("verify", "--json", env=env)
    assert v.returncode == 3, v
    (pol,) = [r for r in json.loads(v.stdout) if r.get("policy")]
    assert any("this key's holder saw 2" in d["detail"] for d in pol["policy"]), pol
    before = h.dump()
    c = h.cli("cancel", "r1", "--reason", "alone", env=env)
    assert c.returncode != 0 and "policy's history is damaged" in c.stderr, c
    assert h.dump() == before and h.status("r1")["status"] != "cancelled"
    # The operator records the policy anew: the head as it stands is vouched for again.
    p = h.cli("policy", "--require-second", "rewind,cancel,pause", "--reason", "restored", env=env)
    assert p.returncode == 0, p
    assert h.cli("verify", env=env).returncode == 0
    c = h.cli("cancel", "r1", "--reason", "alone", env=env)
    assert c.returncode == 0 and "proposed" in c.stdout, c
