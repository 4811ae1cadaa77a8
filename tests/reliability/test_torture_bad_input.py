"""Bad input: each case is one clear line on stderr, exit 2, no traceback,
and nothing in the store changed (its logical dump and, where no writer could
have opened it, its bytes are compared before and after)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.torture import proc
from tests.torture.crash import TARGET

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)"),
    # One xdist worker for the module: its store is module-scoped.
    pytest.mark.xdist_group("torture-bad-input"),
]


def _dump(db: Path) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        text = "\n".join(conn.iterdump())
    finally:
        conn.close()
    if Path(f"{db}-wal").exists() and os.access(db.parent, os.W_OK):
        # A read-only connection leaves the WAL index behind; the last
        # writer-capable connection to close removes it, as a clean shutdown does.
        conn = sqlite3.connect(db)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.close()
    return text


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _assert_one_clear_line(r: proc.Result, *, code: int = 2) -> str:
    assert not r.traceback, r.stderr
    assert r.rc == code, (r.rc, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("phasegate: "), r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store with one completed and one stopped run, closed cleanly."""
    folder = tmp_path_factory.mktemp("store")
    db = folder / "store.db"
    for rid, env in (("done", {}), ("stopped", {"PHASEGATE_TEST_KILL_AT": "start:charge"})):
        ins = {"items": 2, "ledger": str(folder / f"{rid}.ledger"), "mailbox": str(folder / f"{rid}.mail")}
        proc.run(["run", TARGET, "--run-id", rid, "--input", json.dumps(ins), "--db", str(db)], env=env)
    # The killed run left a WAL behind: fold it in, so a copy of the file is the whole store.
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert "stopped" in _dump(db)
    return db


@pytest.fixture
def copy(store: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(store, folder / "store.db")
    return folder / "store.db"


def _commands(db: Path) -> list[list[str]]:
    ins = json.dumps({"items": 1, "ledger": str(db.parent / "l"), "mailbox": str(db.parent / "m")})
    return [
        ["run", TARGET, "--run-id", "new", "--input", ins, "--db", str(db)],
        ["resume", "stopped", "--db", str(db)],
        ["status", "--db", str(db)],
        ["status", "done", "--json", "--db", str(db)],
        ["verify", "--db", str(db)],
        ["decide", "stopped", "reset", "--reason", "r", "--db", str(db)],
        ["prune", "--apply", "--db", str(db)],
        ["claim", "stopped", "--db", str(db)],
        ["policy", "--require-second", "reset", "--reason", "r", "--db", str(db)],
    ]


def test_not_a_database_file(tmp_path: Path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are my notes, not a database\n")
    before = _digest(tmp_path)
    for args in _commands(db):
        line = _assert_one_clear_line(proc.run(args))
        assert "not an SQLite database" in line, line
    assert _digest(tmp_path) == before


def test_an_unrelated_sqlite_database(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.close()
    before = _digest(tmp_path)
    for args in _commands(db):
        line = _assert_one_clear_line(proc.run(args))
        assert "not a phasegate store" in line, line
    assert _digest(tmp_path) == before


@contextmanager
def _immutable(path: Path) -> Iterator[None]:
    """Read-only even for root: the immutable attribute (root ignores modes)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available: as root a read-only mode does not stop writes")
    r = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"this filesystem does not support chattr +i: {r.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def test_a_read_only_file(copy: Path) -> None:
    dump = _dump(copy)
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    with _immutable(copy):
        for args in _commands(copy):
            r = proc.run(args)
            if args[0] in ("status", "verify") and r.rc in (0, 3):
                assert not r.traceback and "Traceback" not in r.stdout  # reading a read-only store is fine
                continue
            line = _assert_one_clear_line(r)
            assert "read-only" in line or "cannot open" in line, line
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == digest
    assert _dump(copy) == dump


def test_a_read_only_folder(copy: Path, tmp_path: Path) -> None:
    folder = copy.parent
    dump = _dump(copy)
    names = sorted(p.name for p in folder.iterdir())
    with _immutable(folder):
        for args in _commands(copy):
            r = proc.run(args)
            if args[0] in ("status", "verify") and r.rc in (0, 3):
                assert not r.traceback
                continue
            _assert_one_clear_line(r)
        # a new store in a read-only folder
        line = _assert_one_clear_line(proc.run(_commands(folder / "fresh.db")[0]))
        assert "cannot create" in line or "read-only" in line, line
        assert sorted(p.name for p in folder.iterdir()) == names
    assert _dump(copy) == dump


def test_a_read_only_file_for_an_unprivileged_user(copy: Path, tmp_path: Path) -> None:
    """The same through a real `python -m phasegate` run by `nobody`, where file modes do apply."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to run a child as nobody")
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="phasegate-ro-"))  # pytest's own folders are private to root
    try:
        os.chmod(folder, 0o755)
        shutil.copy(copy, folder / "store.db")
        copy = folder / "store.db"
        os.chmod(copy, 0o644)  # readable, not writable, by nobody
        _as_nobody(copy, setpriv)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(copy: Path, setpriv: str) -> None:
    dump = _dump(copy)
    wrapper = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    r = proc.run(["run", TARGET, "--run-id", "new", "--input", "{}", "--db", str(copy)], mode="exec", wrapper=wrapper)
    if "Permission denied" in r.stderr and "phasegate:" not in r.stderr:
        pytest.skip(f"nobody cannot run this interpreter: {r.stderr.strip()[:200]}")
    line = _assert_one_clear_line(r)
    assert "read-only" in line or "cannot open" in line or "cannot read" in line, line
    assert _dump(copy) == dump


#: Pages a capped file may still grow by: room for a new run's row and its
#: first records (a run's shape grew with issue 41's `fns`), none for a run
#: that goes on writing, nor for a 200 KB input.
HEADROOM_PAGES = 4


def _cap_pages() -> None:
    """A full disk: every connection of the child may grow the file by a few pages at most."""
    from sqlalchemy import event

    import phasegate.store._sqlite as sq

    make = sq.make_engine

    def capped(*a: object, **kw: object) -> object:
        eng = make(*a, **kw)

        @event.listens_for(eng, "connect")
        def _full(dbapi_conn: sqlite3.Connection, _rec: object) -> None:
            cur = dbapi_conn.cursor()
            pages = cur.execute("PRAGMA page_count").fetchone()[0]
            cur.execute(f"PRAGMA max_page_count={max(pages, 1) + HEADROOM_PAGES}")
            cur.close()

        return eng

    sq.make_engine = capped  # type: ignore[assignment]


def test_a_full_disk(copy: Path) -> None:
    """SQLite's max_page_count pinned at the file's size: a run that needs to grow."""
    dump = _dump(copy)
    big = json.dumps(
        {"items": 1, "ledger": str(copy.parent / "l"), "mailbox": str(copy.parent / "m"), "padding": "x" * 200_000}
    )
    r = proc.run(["run", TARGET, "--run-id", "big", "--input", big, "--db", str(copy)], before=_cap_pages)
    line = _assert_one_clear_line(r)
    assert "full" in line, line
    assert _dump(copy) == dump
    # with room again, the same command simply works
    r = proc.run(["run", TARGET, "--run-id", "big", "--input", big, "--db", str(copy)])
    assert r.rc == 0, r


def test_a_full_disk_midway_leaves_a_resumable_run(copy: Path) -> None:
    """A resume that runs out of room part-way: one clear line and exit 2; what
    it committed before the disk filled is intact (the chain verifies), and
    with room again it completes with the same outputs as the run that never
    ran out."""
    big = {"items": 40, "ledger": str(copy.parent / "l"), "mailbox": str(copy.parent / "m")}
    args = ["run", TARGET, "--run-id", "grows", "--input", json.dumps(big), "--db", str(copy)]
    r = proc.run(args, before=_cap_pages)
    line = _assert_one_clear_line(r)
    assert "full" in line, line
    assert proc.run(["verify", "--db", str(copy)]).rc == 0
    r = proc.run(["resume", "grows", "--db", str(copy)])
    assert r.rc == 0, r
    ref = copy.parent / "ref.db"
    big_ref = {**big, "ledger": str(copy.parent / "l2"), "mailbox": str(copy.parent / "m2")}
    assert proc.run(["run", TARGET, "--run-id", "grows", "--input", json.dumps(big_ref), "--db", str(ref)]).rc == 0

    def outputs(db: Path) -> list[object]:
        return [
            o["hash"] for o in json.loads(proc.inproc(["status", "grows", "--json", "--db", str(db)]).stdout)["outputs"]
        ]

    assert outputs(copy) == outputs(ref)
    ledger = [json.loads(x)["key"] for x in (copy.parent / "l").read_text().splitlines()]
    assert len(ledger) == len(set(ledger)) == 40


def test_a_missing_path(tmp_path: Path) -> None:
    gone = tmp_path / "no-such-folder" / "store.db"
    for args in _commands(gone):
        _assert_one_clear_line(proc.run(args))
    assert not gone.parent.exists()
    missing = tmp_path / "missing.db"
    for args in _commands(missing)[1:]:  # everything but `run` needs an existing store
        _assert_one_clear_line(proc.run(args))
        assert not missing.exists(), args


@pytest.mark.parametrize(
    "target",
    [
        "/no/such/file.py:wf",
        f"{proc.ROOT / 'tests' / 'workflows' / 'torture.py'}:nothing",
        f"{proc.ROOT / 'tests' / 'workflows' / 'torture.py'}:kill_point",
        "no_such_module_anywhere:wf",
        "just-a-word",
        f"{proc.ROOT / 'README.md'}:wf",
    ],
)
def test_a_target_that_is_not_a_workflow(copy: Path, target: str) -> None:
    dump = _dump(copy)
    _assert_one_clear_line(proc.run(["run", target, "--run-id", "x", "--db", str(copy)]))
    assert _dump(copy) == dump
    fresh = copy.parent / "fresh.db"
    _assert_one_clear_line(proc.run(["run", target, "--run-id", "x", "--db", str(fresh)]))
    assert not fresh.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--input", "{not json"],
        ["--input", "NaN"],
        ["--input", '{"a": Infinity}'],
        ["--input-file", "/no/such/inputs.json"],
        ["--input-file", "@BAD"],
        ["--input", "{}", "--input-file", "@BAD"],
    ],
)
def test_inputs_that_are_not_json(copy: Path, args: list[str]) -> None:
    bad = copy.parent / "bad.json"
    bad.write_text("{'python': 'dict'}")
    args = [str(bad) if a == "@BAD" else a for a in args]
    dump = _dump(copy)
    _assert_one_clear_line(proc.run(["run", TARGET, "--run-id", "x", *args, "--db", str(copy)]))
    assert _dump(copy) == dump


def test_a_decision_result_that_is_not_json(copy: Path) -> None:
    dump = _dump(copy)
    _assert_one_clear_line(
        proc.run(["decide", "stopped", "confirm_effect", "--result", "{oops", "--reason", "r", "--db", str(copy)])
    )
    assert _dump(copy) == dump
