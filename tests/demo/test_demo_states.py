"""`phasegate demo` builds, with real runs really interrupted, one run in every
state an operator triages; checked only through `phasegate status --json`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from demo_support import cli, ledger_keys, status

from phasegate.sample_runs._spare import kill_if_same
from tests.support.waiting import until

# One xdist worker for the module: the demo store is built once, for all its tests.
pytestmark = pytest.mark.xdist_group("demo-states")


def _kill_live_run(work: Path) -> None:
    """The demo leaves a slow run going in the background: stop it (only it)."""
    pid_file = work / "live-run.pid"
    if pid_file.exists():
        pid, started = pid_file.read_text().split("\n")[:2]
        kill_if_same(int(pid), started)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any, list[dict[str, Any]]]]:
    folder = tmp_path_factory.mktemp("demo")
    db = folder / "demo.db"
    # A shorter live run than a person gets; still minutes longer than this test.
    proc = cli("demo", "--no-console", "--db", str(db), timeout=240, PHASEGATE_DEMO_LIVE_SECONDS="90")
    try:
        runs = status(db) if proc.returncode == 0 else []
        yield db, proc, runs
    finally:
        _kill_live_run(folder / "demo.work")


def _blocked(runs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [r for r in runs if r["status"] == "blocked" and any(b["kind"] == kind for b in r["blocked"])]
    assert found, f"no run blocked for {kind}: {[(r['run_id'], r['status']) for r in runs]}"
    return found[0]


def test_demo_builds(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    db, proc, runs = demo
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert db.exists()
    assert len(runs) >= 9


def test_interrupted_mid_phase(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    runs = demo[2]
    interrupted = [r for r in runs if r["status"] == "interrupted"]
    assert interrupted
    r = interrupted[0]
    assert any(p["state"] == "partial" for p in r["phases"]), r["phases"]
    assert r["frontier"]["steps_done"] > 0
    assert r["lease"] is None or r["lease"]["alive"] is False


def test_integrity_failure(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    r = _blocked(demo[2], "integrity")
    assert r["integrity"] and r["integrity"][0]["what"] == "output"
    proc = cli("verify", "--db", str(demo[0]))
    assert proc.returncode == 3 and "1 damaged" in proc.stdout


def test_environment_mismatch(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    r = _blocked(demo[2], "env_mismatch")
    changes = [c for b in r["blocked"] if b["kind"] == "env_mismatch" for c in b["changes"]]
    assert [c["probe"] for c in changes] == ["tax_rates"]
    assert changes[0]["saved"] != changes[0]["current"]


def test_one_tax_change_is_one_cause_of_three_runs(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    """#13: the demo has a cause with several runs; `status --by-cause` groups
    them, and a dry run of one decision for all of them changes nothing."""
    import json

    db = demo[0]
    proc = cli("status", "--by-cause", "--json", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    causes = json.loads(proc.stdout)
    (tax,) = [c for c in causes if c["kind"] == "probe_change"]
    assert tax["runs"] == ["billing-hooli-2026-11", "billing-initech-2026-11", "billing-umbrella-2026-11"]
    assert "tax_rates" in tax["summary"] and tax["allowed_actions"][0] == "approve"
    # The largest cause first; every other stopped run is a cause of its own.
    assert causes[0] == tax and all(len(c["runs"]) == 1 for c in causes[1:])
    # (The demo's live run keeps writing: the store's bytes move, these runs do not.)
    before = [r for r in status(db) if r["run_id"] in tax["runs"]]
    proc = cli(
        "decide", "--cause", tax["cause"], "approve", "--reason", "EU-2027-Q1 is right", "--dry-run", "--db", str(db)
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(": Accept the changed environment (tax_rates)") == 3
    assert [r for r in status(db) if r["run_id"] in tax["runs"]] == before


def test_in_doubt_effect(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    r = _blocked(demo[2], "in_doubt_effect")
    doubts = [e for e in r["effects"] if e["state"] == "in_doubt"]
    assert len(doubts) == 1 and not doubts[0]["idempotent"]
    # It did happen, once: the gateway's own ledger has the charge the store is unsure of.
    gateway = Path(r["inputs"]["workdir"]) / "gateway"
    assert ledger_keys(gateway).count(doubts[0]["key"]) == 1


def test_below_floor(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    r = _blocked(demo[2], "below_floor")
    assert any(o["state"] == "lost" for o in r["outputs"])


def test_prune_candidates(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    kinds = {c["kind"] for r in demo[2] for c in r["prune_candidates"]}
    assert "superseded_output" in kinds


def test_completed_failed_and_live(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    runs = demo[2]
    statuses = {r["status"] for r in runs}
    assert {"completed", "failed"} <= statuses
    live = [r for r in runs if r["status"] == "running"]
    assert len(live) == 1 and live[0]["lease"]["alive"] is True


def test_again_without_force_and_without_a_terminal_refuses(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    db = demo[0]
    before = db.stat().st_ino
    proc = cli("demo", "--no-console", "--db", str(db))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--force" in proc.stderr
    assert db.stat().st_ino == before


def test_never_replaces_a_database_it_did_not_build(tmp_path: Path) -> None:
    db = tmp_path / "prod.db"
    from phasegate import Engine

    Engine(db).close()
    proc = cli("demo", "--no-console", "--force", "--db", str(db))
    assert proc.returncode == 2 and "not built by phasegate demo" in proc.stderr
    assert db.exists()


def test_force_replaces_it_and_stops_the_old_live_run(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    db = demo[0]
    pid_file = db.with_name("demo.work") / "live-run.pid"
    old_pid = int(pid_file.read_text().split()[0])
    proc = cli("demo", "--no-console", "--force", "--db", str(db), timeout=240, PHASEGATE_DEMO_LIVE_SECONDS="90")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not Path(f"/proc/{old_pid}").exists() or "Z" in Path(f"/proc/{old_pid}/stat").read_text().split()[2]
    runs = status(db)
    assert sum(r["status"] == "running" for r in runs) == 1
    assert len(runs) == len(demo[2])


def test_list_and_detail_show_one_frontier_for_every_run(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    """#17 finding 1: the list (what `phasegate status` and the console's list
    read) and the detail (`status --json`) agree, the integrity-blocked run too."""
    from phasegate import Engine

    db, _proc, runs = demo
    with Engine(db, create=False, readonly=True) as eng:
        listed = {r.run_id: (r.frontier_index, r.phase_count, r.frontier_phase) for r in eng.runs()}
    detail = {r["run_id"]: (r["frontier"]["index"], r["frontier"]["of"], r["frontier"]["phase"]) for r in runs}
    assert listed == detail


def test_store_gauges_match_status_json(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    """`phasegate metrics --listen 127.0.0.1:0` on the demo store, scraped over
    HTTP, says what `status --json` says: runs by status and by block kind,
    the oldest run needing a person, the proposals waiting for a second."""
    import re
    import time
    import urllib.request

    pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")
    from demo_support import start, stop
    from prometheus_client.parser import text_string_to_metric_families

    db = demo[0]
    proc = start("metrics", "--listen", "127.0.0.1:0", "--db", str(db))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"metrics on (http://127\.0\.0\.1:\d+/metrics)", line)
        assert m, line

        def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
            with urllib.request.urlopen(m.group(1), timeout=10) as resp:
                text = resp.read().decode()
            return {
                (s.name, tuple(sorted(s.labels.items()))): s.value
                for fam in text_string_to_metric_families(text)
                for s in fam.samples
            }

        # The demo's live run moves on meanwhile: compare a scrape with the
        # status read just before and after it, until the two agree.
        def steady() -> tuple[Any, Any] | None:
            before = status(db)
            got = scrape()
            after = status(db)
            return (got, after) if [r["status"] for r in before] == [r["status"] for r in after] else None

        got, runs = until(steady, "a scrape between two reads of the same statuses", timeout=30, every=0.2)
    finally:
        stop(proc)

    assert got[("phasegate_store_up", ())] == 1
    by_status: dict[str, int] = {}
    for r in runs:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    for s in (
        "completed",
        "failed",
        "blocked",
        "interrupted",
        "running",
        "stalled",
        "reset",
        "waiting",
        "paused",
        "cancelled",
    ):
        assert got[("phasegate_runs", (("status", s),))] == by_status.get(s, 0), s
    kinds: dict[str, int] = {}
    for r in runs:
        if r["status"] == "blocked":
            for k in {b["kind"] for b in r["blocked"]}:
                kinds[k] = kinds.get(k, 0) + 1
    assert kinds, "the demo has blocked runs"
    for k in ("integrity", "env_mismatch", "in_doubt_effect", "below_floor"):
        assert got[("phasegate_runs_blocked", (("kind", k),))] == kinds.get(k, 0), k
    proposed = sum(d["state"] == "proposed" for r in runs for d in r["decisions"])
    assert got[("phasegate_proposals_unanswered", ())] == proposed
    # The oldest blocked or failed run with no decision waiting: its age, give or take the scrape's moment.
    asking = [
        r for r in runs if r["status"] == "waiting" and r["waiting"]["kind"] == "answer" and not r["pending_decisions"]
    ]
    waiting = [r for r in runs if (r["status"] in ("blocked", "failed") or r in asking) and not r["pending_decisions"]]
    assert waiting
    from datetime import datetime

    oldest = min(datetime.fromisoformat(r["updated_at"]).timestamp() for r in waiting)
    assert abs(got[("phasegate_oldest_needing_person_seconds", ())] - (time.time() - oldest)) < 120
    assert asking, "the demo has a run waiting for an answer"
    assert got[("phasegate_runs_waiting_for_answer", ())] == len(asking)


def test_runs_that_wait_one_paused_and_one_cancelled(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    """#27: the approvals agent's runs: one waits for a person's answer, one on
    a rate limit, one on a timer; one was paused and one cancelled by an operator."""
    runs = demo[2]
    waiting = {r["waiting"]["kind"]: r for r in runs if r["status"] == "waiting" and r["workflow"] == "approvals"}
    assert set(waiting) == {"answer", "timer", "retry_later"}
    question = waiting["answer"]["waiting"]["question"]
    assert question["name"] == "approve_tool_call" and question["payload"]["risk"] == "high"
    assert "429 from the model API" in waiting["retry_later"]["waiting"]["reason"]
    statuses = [r["status"] for r in runs]
    assert statuses.count("paused") == 1 and statuses.count("cancelled") == 1


def test_the_pydantic_ai_agent_waits_for_its_tool_approval(demo: tuple[Path, Any, list[dict[str, Any]]]) -> None:
    """#37: a pydantic-ai agent (scripted model, no key, no network) waits for
    a person to approve its refund tool, the call named in the question."""
    pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")
    (run,) = [r for r in demo[2] if r["workflow"] == "refunds-agent"]
    assert run["status"] == "waiting" and run["waiting"]["kind"] == "answer", run["attention"]
    question = run["waiting"]["question"]
    assert question["name"] == "approve:refund-A-1042"
    assert question["payload"] == {
        "agent": "support",
        "tool": "refund",
        "call_id": "refund-A-1042",
        "args": {"order": "A-1042", "amount": 89},
        "metadata": {},
    }
    assert run["effects"] == []  # nothing refunded before the approval
