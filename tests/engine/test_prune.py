"""Pruning removes only what is safe, says why, and never costs a resume or
a rewind what it needs."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path


def _archive_files(h) -> list[Path]:
    folder = Path(str(h.db) + ".archive")
    return sorted(p for p in folder.rglob("*.json")) if folder.exists() else []


def _candidates(h) -> list[dict]:
    p = h.cli("prune", "--json")
    assert p.returncode == 0, p
    return json.loads(p.stdout)


def test_candidates_say_why_they_are_safe(h):
    assert h.run("r1").returncode == 0
    assert h.decide("r1", "rewind", "--phase", "charge", reason="again").returncode == 0
    assert h.resume("r1").returncode == 0
    cands = _candidates(h)
    kinds = {c["kind"] for c in cands}
    assert {"superseded_output", "step_records", "unneeded_output"} <= kinds
    for c in cands:
        assert c["why_safe"].startswith("no future value") or "hash-matched" in c["why_safe"], c
        assert c["bytes"] > 0 and c["run_id"] == "r1"
    by_what = {c["what"]: c for c in cands}
    # The current final result is never a candidate while the run is kept.
    assert not any(c["kind"] == "unneeded_output" and "output of report" in c["what"] for c in cands)
    # status shows the same list to an operator.
    assert {c["what"] for c in h.status("r1")["prune_candidates"]} == set(by_what)


def test_apply_archives_with_verified_hash_and_drops_only_what_is_safe(h):
    assert h.run("r1").returncode == 0
    assert h.decide("r1", "rewind", "--phase", "charge", reason="again").returncode == 0
    assert h.resume("r1").returncode == 0
    listed = _candidates(h)

    p = h.cli("prune", "--apply")
    assert p.returncode == 0, p
    assert f"{len(listed)} pruned" in p.stdout

    files = _archive_files(h)
    assert files, "archived outputs are written to files"
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        doc = json.loads(f.read_bytes())
        assert hashlib.sha256(doc["output_json"].encode()).hexdigest() == doc["output_hash"]
    states = h.sql(
        "SELECT phase, output_state FROM phasegate_checkpoints WHERE run_id='r1' AND kind='phase' ORDER BY seq"
    )
    assert states == [
        ("load", "archived"),
        ("price", "archived"),
        ("charge", "pruned"),
        ("report", "pruned"),
        ("charge", "archived"),
        ("report", "present"),
    ]
    assert h.sql("SELECT count(*) FROM phasegate_steps WHERE run_id='r1'") == [(0,)]
    # The prune is recorded like a decision, and the chain still verifies.
    st = h.status("r1")
    assert st["decisions"][-1]["action"] == "prune"
    assert h.cli("verify").returncode == 0
    assert _candidates(h) == []


def test_rewind_after_pruning_restores_archived_outputs(h):
    assert h.run("r1").returncode == 0
    expected = h.report_hash("r1")
    assert h.cli("prune", "--apply").returncode == 0
    assert h.sql("SELECT output_state FROM phasegate_checkpoints WHERE run_id='r1' AND phase='load'") == [("archived",)]
    h.clear_trace()

    assert h.decide("r1", "rewind", "--phase", "price", reason="re-price").returncode == 0
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:price", "start:charge", "start:report"]  # load came back from its archive
    assert len(h.charges()) == 3
    assert h.report_hash("r1") == expected


def test_rewind_after_pruning_rederives_when_the_archive_is_gone(h):
    assert h.run("r1").returncode == 0
    assert h.cli("prune", "--apply").returncode == 0
    for f in _archive_files(h):
        f.unlink()
    h.clear_trace()
    assert h.decide("r1", "rewind", "--phase", "price", reason="re-price").returncode == 0
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:load", "start:price", "start:charge", "start:report"]
    assert len(h.charges()) == 3


def test_a_tampered_archive_is_not_trusted(h):
    assert h.run("r1").returncode == 0
    assert h.cli("prune", "--apply").returncode == 0
    (load_file,) = [f for f in _archive_files(h) if "-load" in f.name]
    doc = json.loads(load_file.read_bytes())
    doc["output_json"] = doc["output_json"].replace("100", "999")
    load_file.write_text(json.dumps(doc))
    h.clear_trace()
    assert h.decide("r1", "rewind", "--phase", "price", reason="re-price").returncode == 0
    assert h.resume("r1").returncode == 0
    assert h.trace()[0] == "start:load"  # re-derived, not read from the altered file


def test_finished_run_past_retention_is_archived_whole(h):
    assert h.run("r1").returncode == 0
    keep = {"PHASEGATE_RETENTION_DAYS": "1"}
    assert all(c["kind"] != "finished_run" for c in json.loads(h.cli("prune", "--json", env=keep).stdout))
    past = {"PHASEGATE_RETENTION_DAYS": "0"}
    (c,) = json.loads(h.cli("prune", "--json", env=past).stdout)
    assert c["kind"] == "finished_run" and "retention" in c["why_safe"]
    assert h.cli("prune", "--apply", env=past).returncode == 0
    assert {s for (s,) in h.sql("SELECT output_state FROM phasegate_checkpoints WHERE run_id='r1'")} == {"archived"}
    assert len(_archive_files(h)) == 4
    # The result can still be read back through a rewind of the last phase.
    h.clear_trace()
    assert h.decide("r1", "rewind", "--phase", "report", reason="reprint").returncode == 0
    assert h.resume("r1").returncode == 0
    assert h.trace() == ["start:report"]


def test_nothing_is_pruned_from_a_damaged_run(h):
    assert h.run("r1").returncode == 0
    h.sql("UPDATE phasegate_checkpoints SET prev_hash='x' WHERE run_id='r1' AND phase='report'")
    assert _candidates(h) == []
    before = h.dump()
    assert h.cli("prune", "--apply").returncode == 0
    assert h.dump() == before


def test_an_archive_that_cannot_be_written_removes_nothing(h, tmp_path):
    assert h.run("r1").returncode == 0
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    before = h.dump()
    p = h.cli("prune", "--apply", env={"PHASEGATE_ARCHIVE_DIR": str(blocker / "sub")})
    h.one_line_error(p, 2)
    assert h.dump() == before
