"""What the pydantic-ai tests share: the agent workflows, run through the
real command line (forked warm children: pydantic-ai is imported here once),
and the records a test reads back (the call log, the refunds ledger, the
run's steps)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

import tests.workflows.pai_agents  # noqa: E402,F401 - imported once here, so forked children start warm
from tests.support import cli  # noqa: E402
from tests.support.cli import ROOT, Result  # noqa: E402

WORKFLOWS = ROOT / "tests" / "workflows" / "pai_agents.py"
WAITING = 5


@dataclass
class AgentRun:
    """One run of an agent workflow in its own folder: its store, call log and ledger."""

    folder: Path
    workflow: str
    run_id: str = "a1"
    task: str = "refund order A-17"

    @property
    def db(self) -> Path:
        return self.folder / "store.db"

    @property
    def log(self) -> Path:
        return self.folder / "calls.log"

    @property
    def ledger(self) -> Path:
        return self.folder / "refunds.jsonl"

    @property
    def workflow_target(self) -> str:
        return f"{WORKFLOWS}:{self.workflow}"

    def inputs(self, kill: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"log": str(self.log), "ledger": str(self.ledger), "task": self.task}
        if kill is not None:
            out["kill"] = kill
        return out

    def cli(self, *args: str, env: dict[str, str] | None = None) -> Result:
        return cli.run([*args, "--db", str(self.db)], mode="fork", env=env)

    def start(self, kill: int | None = None) -> Result:
        return self.cli("run", self.workflow_target, "--run-id", self.run_id, "--input", json.dumps(self.inputs(kill)))

    def resume(self, env: dict[str, str] | None = None) -> Result:
        return self.cli("resume", self.run_id, env=env)

    def status(self) -> Any:
        res = self.cli("status", self.run_id, "--json")
        assert res.rc == 0, res.stderr
        return json.loads(res.stdout)

    def answer(self, question: str, value: Any) -> Result:
        res = self.cli(
            "decide", self.run_id, "answer", "--question", question, "--value", json.dumps(value), "--reason", "test"
        )
        assert res.rc == 0, res.stdout + res.stderr
        return res

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def refunds(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.ledger.read_text().splitlines()] if self.ledger.exists() else []

    def steps(self) -> dict[str, Any]:
        """The run's saved steps, by name, as the store holds them (read-only)."""
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            rows = con.execute(
                "SELECT step_key, result_json FROM phasegate_steps WHERE run_id = ? AND NOT discarded ORDER BY id",
                (self.run_id,),
            ).fetchall()
        finally:
            con.close()
        return {key: json.loads(text) for key, text in rows}

    def output(self) -> Any:
        """What the run's last phase returned, as its checkpoint holds it (read-only)."""
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            (text,) = con.execute(
                "SELECT output_json FROM phasegate_checkpoints WHERE run_id = ? ORDER BY epoch DESC, seq DESC LIMIT 1",
                (self.run_id,),
            ).fetchone()
        finally:
            con.close()
        return json.loads(text)

    def sql(self, query: str, args: tuple[Any, ...] = ()) -> None:
        """One write to the store, as the engine would make it (a test that moves a timer's wake time)."""
        con = sqlite3.connect(self.db)
        try:
            with con:
                con.execute(query, args)
        finally:
            con.close()

    def verify_clean(self) -> None:
        res = self.cli("verify")
        assert res.rc == 0, res.stdout + res.stderr

    def drive(self, approval: Any = True, first: Result | None = None, limit: int = 8) -> Result:
        """Resume until the run ends, answering each approval it parks on with `approval`."""
        res = first if first is not None else self.resume()
        for _ in range(limit):
            if res.rc != WAITING:
                return res
            waiting = self.status()["waiting"]
            assert waiting["kind"] == "answer", waiting
            self.answer(waiting["question"]["name"], approval)
            res = self.resume()
        raise AssertionError(f"the run did not end in {limit} resumes: {res}")
