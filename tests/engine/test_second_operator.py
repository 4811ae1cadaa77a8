"""A second operator for risky decisions (#13 part 4), through the command
line: the store-wide policy and its audit, a proposal that only a different
OS account can second (the second CLI runs as `nobody` through setpriv, as
the reliability tests do), the worker applying only seconded proposals,
expiry, and re-validation when seconded and when applied."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_harness import Harness, Proc

from tests.support import cli

NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]


class TwoAccounts(Harness):
    """A harness whose store another OS account (nobody) can write too."""

    def as_nobody(self, *args: str) -> Proc:
        """`phasegate ARGS --db STORE` run by the `nobody` account."""
        if self.backend == "sqlite":
            # Files root's commands created are private to root; the folder is shared.
            for f in self.tmp.iterdir():
                os.chmod(f, 0o666)
        setpriv = shutil.which("setpriv")
        assert setpriv is not None
        return cli.run(
            [*args, "--db", self.target], env={**self.env, "PHASEGATE_OPERATOR": "nina"}, mode="exec",
            wrapper=[setpriv, *NOBODY],
        )  # fmt: skip


@pytest.fixture(params=["sqlite", "postgres"])
def two(request: pytest.FixtureRequest) -> Iterator[TwoAccounts]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the second operator's command as another account (nobody)")
    # pytest's own folders are private to root: the store lives in a shared one.
    folder = Path(tempfile.mkdtemp(prefix="phasegate-second-"))
    os.chmod(folder, 0o777)
    try:
        if request.param == "sqlite":
            yield TwoAccounts(folder)
        else:
            from pg_schema import pg_schema

            with pg_schema() as url:
                yield TwoAccounts(folder, pg_url=url)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _blocked_on_tax(h: Harness) -> None:
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3


def _policy(h: Harness, *extra: str) -> None:
    p = h.cli("policy", *extra, "--reason", "four eyes on risky decisions")
    assert p.returncode == 0, p


def _decisions(h: Harness) -> list[tuple[str, str, str]]:
    return [(d["action"], d["operator"], d["state"]) for d in h.status("r1")["decisions"]]


def test_the_policy_is_kept_in_the_store_and_audited(h):
    assert h.run("r1").returncode == 0
    p = h.cli("policy", "--show", "--json")
    assert p.returncode == 0, p
    assert json.loads(p.stdout)["require_second"] == []
    before = h.dump()
    for bad in (
        ("policy", "--require-second", "reset"),  # no reason
        ("policy", "--require-second", "reset,explode", "--reason", "x"),
        ("policy", "--proposal-seconds", "0", "--reason", "x"),
        ("policy", "--show", "--require-second", "reset", "--reason", "x"),
    ):
        p = h.cli(*bad)
        assert p.returncode == 2, (bad, p)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert h.dump() == before
    _policy(h, "--require-second", "reset,retry_effect,approve")
    # Another operator's environment cannot turn it off: nothing but the store says.
    shown = json.loads(h.cli("policy", "--json", env={"PHASEGATE_OPERATOR": "eve"}).stdout)
    assert shown["require_second"] == ["reset", "retry_effect", "approve"]
    assert shown["changed_by"] == "tester" and shown["account"] and shown["reason"] == "four eyes on risky decisions"
    _policy(h, "--require-second", "")
    shown = json.loads(h.cli("policy", "--show", "--json").stdout)
    assert shown["require_second"] == []
    assert [p["require_second"] for p in shown["history"]] == [[], ["reset", "retry_effect", "approve"]]


def test_a_proposal_waits_for_another_account_then_the_worker_applies_it(two):
    h = two
    _blocked_on_tax(h)
    _policy(h, "--require-second", "reset,retry_effect,approve")
    p = h.decide("r1", "approve", reason="the new rate is right")
    assert p.returncode == 0, p
    assert "proposed (decision 1)" in p.stdout and "second --decision 1" in p.stdout
    st = h.status("r1")
    prop = st["decisions"][0]
    assert (prop["state"], prop["proposer"], prop["account"]) == ("proposed", "tester", "root")
    assert prop["expires_at"] > prop["at"]
    assert st["status"] == "blocked" and "env_mismatch" in st["attention"]  # why it stopped is kept
    # A proposal is not yet a decision: the list still ranks the run as needing a person.
    assert h.sql("SELECT attention_rank FROM phasegate_runs WHERE run_id = 'r1'") == [(0,)]

    # The worker does not apply a proposal.
    assert h.cli("worker", "--once").returncode == 0
    assert h.status("r1")["status"] == "blocked" and _decisions(h) == [("approve", "tester", "proposed")]

    # The same account is refused, whatever name it gives.
    before = h.dump()
    p = h.cli("decide", "r1", "second", "--decision", "1", "--reason", "me again", "--operator", "someone-else")
    assert p.returncode == 2, p
    assert "another operator's account" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert h.dump() == before

    p = h.as_nobody("decide", "r1", "second", "--decision", "1", "--reason", "checked the rate file")
    if "Permission denied" in p.stderr and "phasegate:" not in p.stderr:
        pytest.skip(f"nobody cannot run this interpreter: {p.stderr.strip()[:200]}")
    assert p.returncode == 0, p
    assert "seconded" in p.stdout
    # Seconded, it is pending: the list ranks the run as decided and waiting.
    assert h.sql("SELECT attention_rank FROM phasegate_runs WHERE run_id = 'r1'") == [(1,)]
    decs = h.status("r1")["decisions"]
    assert [(d["action"], d["operator"], d["state"]) for d in decs] == [
        ("approve", "tester", "pending"),
        ("second", "nina", "applied"),
    ]
    assert decs[1]["account"] == "nobody" and decs[0]["seconded_by"] == decs[1]["id"]

    assert h.cli("worker", "--once").returncode == 0
    assert h.status("r1")["status"] == "completed"
    assert _decisions(h)[0] == ("approve", "tester", "applied")


def test_a_reset_proposal_changes_nothing_until_seconded(two):
    h = two
    assert h.run("r1").returncode == 0
    _policy(h, "--require-second", "reset")
    before = h.sql("SELECT status, epoch FROM phasegate_runs WHERE run_id='r1'")
    assert h.decide("r1", "reset", reason="start over").returncode == 0
    assert h.sql("SELECT status, epoch FROM phasegate_runs WHERE run_id='r1'") == before
    # A second proposal of the same is refused as already proposed.
    p = h.decide("r1", "reset", reason="again")
    assert p.returncode == 2 and "already has this proposed" in p.stderr
    p = h.as_nobody("decide", "r1", "second", "--decision", "1", "--reason", "yes")
    assert p.returncode == 0, p
    st = h.status("r1")
    assert st["status"] == "reset" and st["epoch"] == 1
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [("reset", "applied"), ("second", "applied")]
    # Seconded once: a second second is refused.
    p = h.as_nobody("decide", "r1", "second", "--decision", "1", "--reason", "yes")
    assert p.returncode == 2 and "not waiting for a second operator" in p.stderr


def test_a_proposal_expires(two):
    h = two
    _blocked_on_tax(h)
    # The shortest lapse there is (1 s: bounds.WAIT_SECONDS), waited out.
    _policy(h, "--require-second", "approve", "--proposal-seconds", "1")
    assert h.decide("r1", "approve", reason="ok").returncode == 0
    time.sleep(1.1)  # sleep: the proposal the test made must lapse, and the store's clock is the real one
    assert _decisions(h) == [("approve", "tester", "expired")]
    before = h.dump()
    p = h.as_nobody("decide", "r1", "second", "--decision", "1", "--reason", "too late")
    assert p.returncode == 2 and "expired" in p.stderr, p
    assert h.dump() == before
    # An expired proposal does not stand in the way of proposing again.
    _policy(h, "--proposal-seconds", "86400")
    assert h.decide("r1", "approve", reason="ok, again").returncode == 0
    assert [d[2] for d in _decisions(h)] == ["expired", "proposed"]


def test_a_proposal_is_validated_again_when_seconded_and_when_applied(two):
    h = two
    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve")
    assert h.decide("r1", "approve", reason="v2 is right").returncode == 0
    # The world moves again before anyone seconds: the run is blocked on other values.
    h.tax.write_text("vat-2026-v3")
    assert h.resume("r1").returncode == 3
    before = h.dump()
    p = h.as_nobody("decide", "r1", "second", "--decision", "1", "--reason", "looks fine")
    assert p.returncode == 2 and "moved since the preview" in p.stderr, p
    assert h.dump() == before

    # Proposed and seconded for v3; the world moves once more before the worker runs.
    assert h.decide("r1", "approve", reason="v3 is right").returncode == 0
    assert h.as_nobody("decide", "r1", "second", "--decision", "2", "--reason", "ok").returncode == 0
    h.tax.write_text("vat-2026-v4")
    assert h.cli("worker", "--once").returncode == 0
    st = h.status("r1")
    assert st["status"] == "blocked"
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [
        ("approve", "void"),  # voided by the new proposal: it no longer fit
        ("approve", "void"),  # voided when applied: v4 is not what was approved
        ("second", "applied"),
    ]
    assert any("did not cover what changed" in n for n in st["notes"])


def test_second_needs_a_proposal_and_takes_no_other_option(h):
    assert h.run("r1").returncode == 0
    before = h.dump()
    for args in (
        ("decide", "r1", "second", "--reason", "x"),
        ("decide", "r1", "second", "--decision", "7", "--reason", "x"),
        ("decide", "r1", "second", "--decision", "1", "--phase", "price", "--reason", "x"),
        ("decide", "r1", "rewind", "--phase", "price", "--decision", "1", "--reason", "x"),
    ):
        p = h.cli(*args)
        assert p.returncode == 2, (args, p)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert h.dump() == before


def test_the_command_line_never_claims_a_web_identity(h):
    """#29 finding 3: with `policy --web-account` naming the CLI's own
    account, `PHASEGATE_WEB_USER=x decide ...` then `=y ... second` made one
    person two. The command line refuses the variable, and the policy refuses
    naming the account it is typed from."""
    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve")
    before = h.dump()
    for args in (
        ("decide", "r1", "approve", "--reason", "v2 is right"),
        ("decide", "r1", "second", "--decision", "1", "--reason", "agreed"),
        ("claim", "r1"),
    ):
        p = h.cli(*args, env={"PHASEGATE_WEB_USER": "ann"})
        assert p.returncode == 2 and "PHASEGATE_WEB_USER" in p.stderr, (args, p)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    from phasegate.oversight.identity import os_account

    p = h.cli("policy", "--web-account", os_account(), "--reason", "serve runs as me")
    assert p.returncode == 2 and "--web-account" in p.stderr, p
    assert h.dump() == before


_WEB_SESSION = """
import sys
from phasegate import Engine
eng = Engine(sys.argv[1])
if sys.argv[2] == "propose":
    print(eng.decide("r1", "approve", reason="v2 is right").state)
else:
    print(eng.oversight.second("r1", 1, reason="agreed").state)
"""


def _web_session(h: TwoAccounts, user: str, what: str) -> Proc:
    """What a served console does for a web user: the engine's API, under
    the server's own account (nobody here), with the proxy's user passed on."""
    import subprocess
    import sys

    for f in h.tmp.iterdir():
        os.chmod(f, 0o666)
    setpriv = shutil.which("setpriv")
    assert setpriv is not None
    env = cli.child_env({**h.env, "PHASEGATE_WEB_USER": user, "PHASEGATE_OPERATOR": f"web:{user}"})
    p = subprocess.run(
        [setpriv, *NOBODY, sys.executable, "-c", _WEB_SESSION, h.target, what],
        env=env, capture_output=True, text=True, timeout=120, cwd=h.tmp,
    )  # fmt: skip
    return Proc(p.returncode, p.stdout, p.stderr)


def test_behind_the_web_view_another_authenticated_user_may_second(two):
    """Under one OS account, sessions of `serve --operator-header` count as
    different operators only where the policy names that account; the same
    user in another case (Alice for alice) is the same operator."""
    h = two
    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve")
    p = _web_session(h, "ann", "propose")
    assert p.returncode == 0 and "proposed" in p.stdout, p
    assert h.status("r1")["decisions"][0]["account"].endswith("/web:ann")
    p = _web_session(h, "bob", "second")
    assert p.returncode != 0 and "another operator" in p.stderr  # no web account named yet
    _policy(h, "--web-account", "nobody")
    for same in ("ann", "ANN", "\uff41nn"):  # the proposer again, in any case or width
        p = _web_session(h, same, "second")
        assert p.returncode != 0 and "another operator" in p.stderr, (same, p)
    p = _web_session(h, "bob", "second")
    assert p.returncode == 0, p
    assert [d["state"] for d in h.status("r1")["decisions"]] == ["pending", "applied"]
    assert h.cli("verify").returncode == 0


def test_proposals_a_run_no_longer_needs_are_voided(h):
    """A run that goes on without its proposals (the world came back), or a
    reset, leaves nothing for them to answer: they are settled void, not
    left waiting for a second operator."""
    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve")
    assert h.decide("r1", "approve", reason="v2 is right").returncode == 0
    h.tax.write_text("vat-2026-v1")  # the rate file is put back
    assert h.resume("r1").returncode == 0
    assert _decisions(h) == [("approve", "tester", "void")]

    assert h.run("r2", kill="start:charge").killed
    h.tax.write_text("vat-2026-v9")
    assert h.resume("r2").returncode == 3
    assert h.decide("r2", "approve", reason="v9 then").returncode == 0
    assert h.decide("r2", "reset", reason="no: start over").returncode == 0  # reset is not in this policy
    assert [(d["action"], d["state"]) for d in h.status("r2")["decisions"]] == [
        ("approve", "void"),
        ("reset", "applied"),
    ]
