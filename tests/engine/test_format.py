"""What the store holds and how it is created: canonical JSON that operators'
tools can read, pydantic models that come back as models, files only the owner
can read, and an engine that does not drag a UI toolkit in (nor, for its two
public modules, the store's driver and ORM)."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from engine_harness import ROOT
from pydantic import BaseModel

from phasegate import Engine, Workflow


class Invoice(BaseModel):
    id: str
    amount: int
    city: str


class Batch(BaseModel):
    invoices: list[Invoice]
    total: int


models = Workflow("models")
seen: dict[str, object] = {}


@models.phase()
def load(ctx) -> list[Invoice]:
    return [Invoice(id="inv-1", amount=5, city=ctx.inputs["city"]), Invoice(id="inv-2", amount=7, city="Zürich")]


def _sum(invoices: list[Invoice]) -> Batch:
    return Batch(invoices=invoices, total=sum(i.amount for i in invoices))


@models.phase(needs=["load"])
def batch(ctx, load) -> Batch:
    seen["load"] = load
    b = ctx.step("sum", _sum, load, durable=True)
    seen["step"] = b

    def file(key: str) -> Invoice:
        return Invoice(id=key, amount=b.total, city="Genève")

    receipt = ctx.effect("file", file, idempotent=True)
    seen["effect"] = receipt
    return b


def _stop_after_first_boundary():
    calls = []

    def should_stop() -> bool:  # asked before each phase: let one run, then stop
        calls.append(1)
        return len(calls) > 1

    return should_stop


def _canonical(text: str) -> bool:
    return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False) == text


def test_pydantic_outputs_round_trip_across_a_resume(tmp_path):
    db = tmp_path / "m.db"
    with Engine(db) as eng:
        eng.should_stop = _stop_after_first_boundary()  # stop at the first boundary...
        out = eng.run(models, "m1", inputs={"city": "Zürich"})
        assert out.status == "interrupted"
    seen.clear()
    with Engine(db) as eng:  # ...and resume in a fresh engine: values come from the store
        out = eng.run(models, "m1")
    assert out.status == "completed"
    assert all(isinstance(i, Invoice) for i in seen["load"])  # type: ignore[attr-defined]
    assert isinstance(seen["step"], Batch) and isinstance(seen["effect"], Invoice)
    assert isinstance(out.result, Batch)
    assert out.result == Batch(
        invoices=[Invoice(id="inv-1", amount=5, city="Zürich"), Invoice(id="inv-2", amount=7, city="Zürich")], total=12
    )
    # A second call of a completed run returns the same model from the store.
    with Engine(db) as eng:
        again = eng.run(models, "m1")
    assert again.result == out.result and again.phases_run == []


def test_a_saved_output_that_no_longer_fits_its_type_is_an_integrity_failure(tmp_path):
    import sqlite3

    db = tmp_path / "m.db"
    with Engine(db) as eng:
        eng.should_stop = _stop_after_first_boundary()
        eng.run(models, "m1", inputs={"city": "Bern"})
    # A well-formed, consistently re-hashed payload that does not fit the
    # phase's declared type: only the type check can catch it.
    from phasegate import _json
    from phasegate.history import chain

    con = sqlite3.connect(db)
    row = con.execute("SELECT envelope, output_json FROM phasegate_checkpoints WHERE phase='load'").fetchone()
    env = json.loads(row[0])
    bad = _json.dumps([{"id": "inv-1", "amount": "lots", "city": "Bern"}])
    env["output_hash"] = _json.sha256(bad)
    text = _json.dumps(env)
    digest = _json.sha256(text)
    con.execute(
        "UPDATE phasegate_checkpoints SET envelope=?, payload_hash=?, output_json=? WHERE phase='load'",
        (text, digest, bad),
    )
    con.execute("UPDATE phasegate_runs SET head_hash=?", (digest,))
    con.commit()
    con.close()
    assert chain.FORMAT_VERSION == env["v"]
    with Engine(db) as eng:
        out = eng.run(models, "m1")
    assert out.status == "blocked"
    (r,) = out.blocked
    assert r.kind == "integrity" and r.data["failure"]["what"] == "type"


def test_payloads_are_canonical_utf8_json(h):
    p = h.run("r1", city="Zürich")
    assert p.returncode == 0, p
    rows = h.sql("SELECT envelope, output_json FROM phasegate_checkpoints WHERE run_id='r1'")
    assert rows
    for envelope, output in rows:
        assert _canonical(envelope)
        assert output is None or _canonical(output)
    (inputs,) = h.sql("SELECT inputs_json FROM phasegate_runs WHERE run_id='r1'")[0]
    assert "Zürich" in inputs and _canonical(inputs)  # readable as written, not \\u-escaped
    for (result,) in h.sql("SELECT result_json FROM phasegate_effects WHERE run_id='r1'"):
        assert _canonical(result)
    for (result,) in h.sql("SELECT result_json FROM phasegate_steps WHERE run_id='r1'"):
        assert _canonical(result)


@pytest.mark.sqlite_only
def test_database_files_are_created_owner_only(h):
    assert h.run("r1", kill="start:report").killed  # leave the WAL files behind
    for path in [h.db, Path(f"{h.db}-wal"), Path(f"{h.db}-shm")]:
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert h.sql("PRAGMA journal_mode") == [("wal",)]


def test_engine_import_does_not_load_a_ui_toolkit():
    code = (
        "import sys, phasegate, phasegate.cli, phasegate.engine; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') or m.startswith('phasegate.console')))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_importing_the_api_loads_no_driver_orm_or_ui() -> None:
    """Both namespaces are lazy: a command that only registers itself pays
    for neither the store's stack nor the console's."""
    heavy = ("sqlalchemy", "sqlmodel", "sqlite3", "psycopg", "pydantic", "orjson", "watchfiles", "textual", "rich")
    code = (
        "import sys, phasegate, phasegate.ops\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('phasegate.')))\n"
    )
    argv = [sys.executable, "-W", "error", "-c", code]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["[]", "['phasegate.ops']"]


def test_status_and_verify_start_without_the_heavy_imports(tmp_path):
    """`status`, `decide` and `verify` on a SQLite store run on SQLAlchemy Core
    and the driver: no UI toolkit, no file watcher, no ORM, no pydantic, no
    PostgreSQL driver (each was a measurable part of their start)."""
    heavy = ("textual", "rich", "watchfiles", "sqlmodel", "sqlalchemy.orm", "pydantic", "psycopg")
    db = tmp_path / "s.db"
    code = (
        "import sys\n"
        "from phasegate.cli import main\n"
        "for args in (['status', '--db', sys.argv[1]], ['status', '--json', '--db', sys.argv[1]],"
        " ['verify', '--db', sys.argv[1]]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})), file=sys.stderr)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "[]", p.stderr


def test_nothing_read_from_the_store_is_unpickled_or_evaluated():
    for path in (ROOT / "engine").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"\b(pickle|marshal|shelve)\b", text), path
        assert not re.search(r"(?<![\w.])(eval|exec)\((?!self)", text), path
