"""The harness for the engine's tests: the real command line in a real child
process, killed with SIGKILL where a test says, and the store read back the
way an operator (`phasegate status --json`) or a forensic tool (sqlite3)
would read it.

Most runs fork this interpreter and call `phasegate.cli.main` in the child
instead of starting `python -m phasegate`: the child is a separate process that
parses the same argv, opens the store itself, exits with the same code and
dies as hard under SIGKILL, but skips ~0.5 s of imports, which keeps the suite
inside its CI budget. A few tests (`real=True`) go through `python -m phasegate`
to hold the actual entry point to the same contract.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from tests.support import cli

ROOT = cli.ROOT
WORKFLOWS = ROOT / "tests" / "workflows"
HERE_WORKFLOWS = Path(__file__).resolve().parent / "workflows"
BILLING_FILE = WORKFLOWS / "billing.py"


# Every forked child inherits the imports and caches of one run of the
# command line in this process (tests/support/cli.py's `warm`).
cli.warm()


#: How a child ended (`returncode`, `stdout`, `stderr`, `killed`).
Proc = cli.Result


def spawn(args: list[str], env: dict[str, str] | None = None) -> cli.Child:
    """The command line in a forked child, still running (for lease tests)."""
    return cli.start(args, env=env, mode="fork")


class Harness:
    """One test's world: a store, a gateway ledger, a phase trace and a tax
    table file, all under the test's own tmp folder."""

    def __init__(self, tmp: Path, pg_url: str | None = None) -> None:
        self.tmp = tmp
        self.db = tmp / "runs.db"
        #: What `--db` names: the SQLite file, or a PostgreSQL URL whose
        #: search_path is this test's own schema.
        self.backend = "postgres" if pg_url else "sqlite"
        self.target = pg_url or str(self.db)
        self.ledger = tmp / "gateway.jsonl"
        self.trace_file = tmp / "trace.txt"
        self.tax = tmp / "tax.txt"
        self.tax.write_text("vat-2026-v1")
        self.env = {
            "PHASEGATE_TEST_TRACE": str(self.trace_file),
            "PHASEGATE_TEST_TAX": str(self.tax),
            "PHASEGATE_TEST_KILL_AT": "",
            "PHASEGATE_TEST_SLOW": "0",
            "PHASEGATE_OPERATOR": "tester",
            "PHASEGATE_DB": "",
            # Where a SQLite store would put its archive: the same place for both backends.
            "PHASEGATE_ARCHIVE_DIR": str(self.db) + ".archive",
        }

    # -- the command line ---------------------------------------------------

    def cli(self, *args: str, env: dict[str, str] | None = None, real: bool = False, db: bool = True) -> Proc:
        argv = [*args, "--db", self.target] if db else list(args)
        full = {**self.env, **(env or {})}
        return cli.run(argv, env=full, mode="exec" if real else "fork")

    def inputs(self, **extra: Any) -> str:
        return json.dumps({"ledger": str(self.ledger), **extra})

    def run(
        self,
        run_id: str = "r1",
        *,
        target: str | None = None,
        kill: str = "",
        real: bool = False,
        env: dict[str, str] | None = None,
        **inputs: Any,
    ) -> Proc:
        target = target or f"{BILLING_FILE}:wf"
        return self.cli(
            "run",
            target,
            "--run-id",
            run_id,
            "--input",
            self.inputs(**inputs),
            env={"PHASEGATE_TEST_KILL_AT": kill, **(env or {})},
            real=real,
        )

    def resume(
        self, run_id: str = "r1", *, kill: str = "", real: bool = False, env: dict[str, str] | None = None
    ) -> Proc:
        return self.cli("resume", run_id, env={"PHASEGATE_TEST_KILL_AT": kill, **(env or {})}, real=real)

    def decide(
        self,
        run_id: str,
        action: str,
        *extra: str,
        reason: str = "checked by a test",
        env: dict[str, str] | None = None,
    ) -> Proc:
        return self.cli("decide", run_id, action, "--reason", reason, *extra, env=env)

    def status(self, run_id: str = "r1") -> dict[str, Any]:
        p = self.cli("status", run_id, "--json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    # -- what the outside world saw -------------------------------------------

    def trace(self) -> list[str]:
        return self.trace_file.read_text().splitlines() if self.trace_file.exists() else []

    def clear_trace(self) -> None:
        self.trace_file.unlink(missing_ok=True)

    def charges(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines()]

    def charge_keys(self) -> list[str]:
        return [c["key"] for c in self.charges()]

    # -- the store, as a forensic tool sees it ----------------------------------

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run SQL (with ? placeholders) straight on the store, as a forensic
        tool or a damaged disk would; committed at once."""
        if self.backend == "postgres":
            import psycopg

            with psycopg.connect(self.target.replace("postgresql+psycopg://", "postgresql://")) as con:
                cur = con.execute(statement.replace("?", "%s"), params)
                rows = cur.fetchall() if cur.description else []
                con.commit()
                return [tuple(r) for r in rows]
        con = sqlite3.connect(self.db)
        try:
            rows = con.execute(statement, params).fetchall()
            con.commit()
            return rows
        finally:
            con.close()

    def dump(self) -> str:
        """Every row of every phasegate table, in a stable order."""
        if self.backend == "sqlite":
            con = sqlite3.connect(self.db)
            try:
                return "\n".join(con.iterdump())
            finally:
                con.close()
        out = []
        for table in (
            "phasegate_meta",
            "phasegate_runs",
            "phasegate_checkpoints",
            "phasegate_steps",
            "phasegate_effects",
            "phasegate_decisions",
            "phasegate_claims",
            "phasegate_policy",
        ):
            out += [f"{table} {row!r}" for row in self.sql(f"SELECT * FROM {table} ORDER BY 1")]
        return "\n".join(out)

    def checkpoint(self, run_id: str, phase: str) -> dict[str, Any]:
        cols = (
            [
                r[0]
                for r in self.sql(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = 'phasegate_checkpoints'"
                    " AND table_schema = current_schema() ORDER BY ordinal_position"
                )
            ]
            if self.backend == "postgres"
            else [r[1] for r in self.sql("PRAGMA table_info(phasegate_checkpoints)")]
        )
        rows = self.sql(
            f"SELECT {', '.join(cols)} FROM phasegate_checkpoints WHERE run_id=? AND phase=? AND status='live'"
            " AND kind='phase' ORDER BY epoch DESC, seq DESC LIMIT 1",
            (run_id, phase),
        )
        assert rows, f"no live checkpoint of {phase} in {run_id}"
        return dict(zip(cols, rows[0], strict=True))

    def report_hash(self, run_id: str = "r1") -> str:
        outs = {o["phase"]: o for o in self.status(run_id)["outputs"]}
        return str(outs["report"]["hash"])

    def copy_workflow(self, name: str = "billing_copy.py", source: Path = BILLING_FILE) -> Path:
        dst = self.tmp / name
        shutil.copy(source, dst)
        return dst


def one_line_error(p: Proc, code: int = 2) -> str:
    """The error contract of the command line: one line on stderr, no traceback."""
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    assert lines[0].startswith("phasegate: "), lines[0]
    return lines[0]


Harness.one_line_error = staticmethod(one_line_error)  # type: ignore[attr-defined]
