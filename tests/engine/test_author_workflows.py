"""What a workflow author meets (issue #18): a workflow file of their own in
a tmp folder, run as a script, imported by name and through `phasegate
run/resume` or the worker, killed, resumed and decided on with the CLI.

The workflow is `author_flow.py`, copied in as `flow.py`."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli
from tests.support.waiting import until

FLOW = Path(__file__).resolve().parent / "author_flow.py"
IMPORT_MAIN = "import sys, flow; sys.exit(flow.main(sys.argv[1:], flow.wf, 'flow:wf'))"


class Author:
    """A tmp folder holding `flow.py`, its store and its files, and the
    ways an author runs it. Every process runs from `cwd`; the folder is on
    PYTHONPATH so that a target imported by name is found from anywhere."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp / "project"
        self.dir.mkdir()
        self.flow = self.dir / "flow.py"
        shutil.copy(FLOW, self.flow)
        self.db = str(self.dir / "flow.db")
        self.trace_file = self.dir / "trace.txt"
        self.gate = self.dir / "gate"
        self.gate2 = self.dir / "gate2"
        self.gate2.touch()
        self.hang = self.dir / "hang"
        self.hang2 = self.dir / "hang2"
        self.hang3 = self.dir / "hang3"
        self.config = self.dir / "config.txt"
        self.config.write_text("v1")
        self.schema = self.dir / "schema.txt"
        self.schema.write_text("s1")
        self.cwd = self.dir
        self.env = {"PYTHONPATH": str(self.dir), "PHASEGATE_DB": "", "PHASEGATE_OPERATOR": "author"}

    def inputs(self) -> dict[str, str]:
        return {
            "trace": str(self.trace_file),
            "gate": str(self.gate),
            "gate2": str(self.gate2),
            "hang": str(self.hang),
            "hang2": str(self.hang2),
            "hang3": str(self.hang3),
            "config": str(self.config),
            "schema": str(self.schema),
        }

    def trace(self) -> Counter[str]:
        return Counter(self.trace_file.read_text().split()) if self.trace_file.exists() else Counter()

    def edit(self, old: str, new: str) -> None:
        text = self.flow.read_text()
        assert old in text
        self.flow.write_text(text.replace(old, new))

    # -- the ways to run it ---------------------------------------------------

    def _python(self, args: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, *args],
            cwd=self.cwd,
            env=cli.child_env(self.env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def start(self, how: str, run_id: str = "r1", *, new: bool = True) -> subprocess.Popen[str]:
        """Start (`new`) or resume a run the way `how` says, in the background."""
        extra = [json.dumps(self.inputs())] if new else []
        if how == "script":
            return self._python([str(self.flow), self.db, run_id, *extra])
        if how == "import":
            return self._python(["-c", IMPORT_MAIN, self.db, run_id, *extra])
        if how == "cli":
            if new:
                args = ["run", f"{self.flow}:wf", "--run-id", run_id, "--input", extra[0]]
            else:
                args = ["resume", run_id]
            return self._python(["-m", "phasegate", *args, "--db", self.db])
        if how == "worker":
            assert not new
            return self._python(["-m", "phasegate", "worker", "--once", "--db", self.db])
        raise ValueError(how)

    def do(self, how: str, run_id: str = "r1", *, new: bool = False) -> cli.Result:
        p = self.start(how, run_id, new=new)
        out, err = p.communicate(timeout=120)
        return cli.Result(p.returncode, out, err, p.pid)

    def phasegate(self, *args: str) -> cli.Result:
        """An operator's command (decide, status, verify, prune) on the
        store, in a forked warm child that starts where `python -m
        phasegate` would (`cwd`, the folder importable): these tests are
        about the ways an author runs the flow, not about the entry point,
        which `start` and `do` still exec."""

        def here() -> None:
            os.chdir(self.cwd)
            sys.path.insert(0, str(self.dir))

        return cli.run([*args, "--db", self.db], env=self.env, mode="fork", before=here, timeout=120)

    def status(self, run_id: str = "r1") -> dict[str, Any]:
        p = self.phasegate("status", run_id, "--json")
        assert p.returncode == 0, p
        doc: dict[str, Any] = json.loads(p.stdout)
        return doc

    def started_and_failed(self, how: str, run_id: str = "r1") -> None:
        """Start a run that saves its durable steps and then fails in compute."""
        p = self.do(how, run_id, new=True)
        assert p.returncode in (0, 1), p  # the CLI says failed with 1, the scripts print it
        assert self.status(run_id)["status"] == "failed"
        assert self.trace() == Counter({"load": 1, "double:1": 1, "double:2": 1, "double:3": 1})


@pytest.fixture
def author(tmp_path: Path) -> Author:
    return Author(tmp_path)


def _kill_at(author: Author, child: subprocess.Popen[str], mark: str) -> None:
    """SIGKILL the child once the trace shows it reached `mark`."""

    def reached() -> bool:
        assert child.poll() is None, child.communicate()
        return mark in author.trace()

    until(reached, f"the child to reach {mark}")
    child.kill()
    child.wait()


def _elsewhere(author: Author) -> None:
    """Run what follows from another working directory."""
    other = author.dir.parent / "elsewhere"
    other.mkdir(exist_ok=True)
    author.cwd = other


# -- 1. the code's fingerprint, not how it was loaded --------------------------------


@pytest.mark.parametrize(
    ("starter", "resumer"),
    [
        ("script", "cli"),
        ("script", "import"),
        ("import", "cli"),
        ("import", "script"),
        ("cli", "script"),
        ("cli", "import"),
    ],
)
def test_the_same_code_resumes_however_it_was_loaded(author: Author, starter: str, resumer: str) -> None:
    author.started_and_failed(starter)
    author.gate.touch()
    _elsewhere(author)
    p = author.do(resumer)
    assert p.returncode == 0, p
    doc = author.status()
    assert doc["status"] == "completed", doc["blocked"]
    assert not [r for r in doc["env"] if r["changed"]]
    # load is done and kept; the durable steps came back from the store.
    assert author.trace() == Counter(
        {
            "load": 1,
            "double:1": 1,
            "double:2": 1,
            "double:3": 1,
            "send:r1/publish/send": 1,
            "notify:r1/publish/notify": 1,
        }
    )


@pytest.mark.parametrize("starter", ["script", "import"])
def test_a_killed_run_is_taken_up_by_the_worker_without_drift(author: Author, starter: str) -> None:
    author.hang.touch()
    author.gate.touch()
    _kill_at(author, author.start(starter), "hung")
    author.hang.unlink()
    assert author.status()["status"] == "interrupted"
    _elsewhere(author)
    p = author.do("worker")
    assert p.returncode == 0, p
    doc = author.status()
    assert doc["status"] == "completed", (doc["blocked"], p.stderr)
    assert author.trace()["double:1"] == 1 and author.trace()["load"] == 1


def test_a_real_change_in_a_done_phase_still_stops_the_run(author: Author) -> None:
    author.started_and_failed("script")
    author.gate.touch()
    author.edit("return [1, 2, 3]", "return [1, 2, 4]")
    p = author.do("cli")
    assert p.returncode == 3, p
    assert "env_mismatch: code of done phase load changed" in p.stdout
    (change,) = author.status()["blocked"][0]["changes"]
    assert change["probe"] == "code:load"


def test_a_block_does_not_discard_saved_durable_steps(author: Author) -> None:
    """A start that stops on a code change must not record the new code as
    the code the open phase's durable steps were written by: once the change
    is undone, they come back from the store instead of being recomputed."""
    author.started_and_failed("script")
    author.gate.touch()
    original = author.flow.read_text()
    author.edit("return [1, 2, 3]", "return [1, 2, 4]")
    author.edit("return 2 * x", "return x + x")
    assert author.do("cli").returncode == 3
    author.flow.write_text(original)
    p = author.do("cli")
    assert p.returncode == 0, p
    assert author.trace()["double:1"] == 1


def test_steps_written_by_older_code_of_an_open_phase_are_not_handed_to_a_changed_function(author: Author) -> None:
    """Issue 41: a deploy under an open phase keeps its saved steps for the new
    code when they are asked for in the same order by the same functions
    (run/replay.py); a step whose function changed stops the run before its
    old result is handed over, and an approval computes it again."""
    author.started_and_failed("import")
    author.gate.touch()
    author.edit("return 2 * x", "return x + x")
    p = author.do("script")
    assert p.stdout.startswith("blocked env_mismatch") and "its function double changed" in p.stdout, p
    assert author.trace()["double:1"] == 1
    assert author.phasegate("decide", "r1", "approve", "--reason", "the fix is right").returncode == 0
    p = author.do("script")
    assert p.stdout.startswith("completed"), p
    assert author.trace()["double:1"] == 2


# -- 2. probes scoped to the work they affect -----------------------------------------


def test_a_probe_no_kept_work_read_does_not_stop_the_run(author: Author) -> None:
    """`config` is declared by `publish` alone; the run stopped in `compute`.
    Then killed at the start of `publish` (nothing of it kept), and once more
    after its effect: the value it ran with is the one compared."""
    author.started_and_failed("script")
    author.config.write_text("v2")
    author.gate.touch()
    author.hang2.touch()
    _kill_at(author, author.start("cli", new=False), "hung2")
    doc = author.status()
    assert doc["status"] == "interrupted"
    assert any("probe config changed: v1 -> v2" in n and "goes on with the new value" in n for n in doc["notes"])
    p = author.phasegate("status", "r1")
    assert "probe config changed: v1 -> v2" in p.stdout

    author.config.write_text("v3")
    author.hang2.unlink()
    author.gate2.unlink()
    p = author.do("cli")
    assert p.returncode == 1 and "second gate" in p.stdout, p  # ran, with its effect done
    author.gate2.touch()
    p = author.do("cli")
    assert p.returncode == 0, p
    assert author.trace()["send:r1/publish/send"] == 1


def test_a_probe_read_by_kept_work_stops_the_run(author: Author) -> None:
    author.gate.touch()
    author.gate2.unlink()
    p = author.do("cli", new=True)
    assert p.returncode == 1, p  # publish sent, then failed
    author.config.write_text("v2")
    author.gate2.touch()
    p = author.do("cli")
    assert p.returncode == 3, p
    assert "env_mismatch: probe config changed: v1 -> v2" in p.stdout


def test_a_probe_no_phase_declares_is_read_by_every_phase(author: Author) -> None:
    author.started_and_failed("cli")
    author.schema.write_text("s2")
    author.gate.touch()
    p = author.do("cli")
    assert p.returncode == 3, p
    assert "env_mismatch: probe schema changed: s1 -> s2" in p.stdout


# -- 3. prune checks its premise when it prunes --------------------------------------


def _sql(author: Author, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(author.db) as conn:
        rows = conn.execute(statement, params).fetchall()
    conn.close()
    return rows


def test_prune_keeps_the_step_records_of_a_phase_whose_output_is_lost(author: Author) -> None:
    author.gate.touch()
    assert author.do("cli", new=True).returncode == 0
    steps = _sql(author, "SELECT count(*) FROM phasegate_steps WHERE phase='compute'")[0][0]
    assert steps == 3
    assert "durable step record(s) of compute" in author.phasegate("prune").stdout  # while its output is there
    # The output leaves the store for an archive that is not there (deleted, or never written).
    _sql(
        author,
        "UPDATE phasegate_checkpoints SET output_json=NULL, output_state='archived', archive_path=? WHERE phase='compute'",
        (str(author.dir / "gone.json"),),
    )
    listed = author.phasegate("prune")
    assert listed.returncode == 0, listed
    assert "of compute" not in listed.stdout
    assert author.phasegate("prune", "--apply").returncode == 0
    assert _sql(author, "SELECT count(*) FROM phasegate_steps WHERE phase='compute'")[0][0] == 3
    v = author.phasegate("verify")
    assert v.returncode == 3, v
    assert "LOST      r1: checkpoint" in v.stdout and "output of compute is lost" in v.stdout
    assert "0 ok, 0 damaged, 1 with lost outputs" in v.stdout


def test_verify_reports_an_archive_that_no_longer_reads_back(author: Author) -> None:
    author.gate.touch()
    assert author.do("cli", new=True).returncode == 0
    assert author.phasegate("prune", "--apply").returncode == 0
    ((path,),) = _sql(author, "SELECT archive_path FROM phasegate_checkpoints WHERE phase='load'")
    assert author.phasegate("verify").returncode == 0
    Path(path).write_text(Path(path).read_text().replace("[1,2,3]", "[1,2,4]").replace("[1, 2, 3]", "[1, 2, 4]"))
    v = author.phasegate("verify", "--json")
    assert v.returncode == 3, v
    (report,) = json.loads(v.stdout)
    assert report["ok"] is True and [x["phase"] for x in report["lost"]] == ["load"]


# -- 4. a dry run refuses what the decision would refuse -----------------------------


def _decisions(author: Author) -> int:
    return int(_sql(author, "SELECT count(*) FROM phasegate_decisions")[0][0])


def _blocked_on_config_with_a_notification_in_doubt(author: Author) -> None:
    """publish sent, then died inside notify (in doubt); then config changed."""
    author.gate.touch()
    author.hang3.touch()
    _kill_at(author, author.start("cli"), "notify:r1/publish/notify")
    author.hang3.unlink()
    author.config.write_text("v2")
    p = author.do("cli")
    assert p.returncode == 3, p
    kinds = [b["kind"] for b in author.status()["blocked"]]
    assert kinds == ["env_mismatch", "in_doubt_effect"], kinds


UNFIT = [
    ("degrade",),
    ("confirm_effect", "--effect", "nosuch"),
    ("retry_effect", "--effect", "nosuch"),
    ("rewind", "--phase", "nosuch"),
    ("approve", "--phase", "nosuch"),
    ("approve", "--effect", "r1/publish/notify"),
    ("confirm_effect", "--phase", "load", "--effect", "r1/publish/notify"),
    ("frobnicate",),
    ("retry_effect", "--effect", "r1/publish/notify", "--result", "1"),
    ("approve", "--reason", " "),
]


def test_every_unfit_decision_is_refused_by_its_dry_run_as_by_itself(author: Author) -> None:
    _blocked_on_config_with_a_notification_in_doubt(author)
    before = _decisions(author)
    for unfit in UNFIT:
        args = unfit if "--reason" in unfit else (*unfit, "--reason", "r")
        real = author.phasegate("decide", "r1", *args)
        dry = author.phasegate("decide", "r1", *args, "--dry-run")
        assert real.returncode == 2 and not real.stdout and len(real.stderr.splitlines()) == 1, (args, real)
        assert (dry.returncode, dry.stdout, dry.stderr) == (real.returncode, "", real.stderr), (args, dry)
        assert not dry.traceback
    for args in (("nosuch", "approve"), ("nosuch", "frobnicate")):
        real = author.phasegate("decide", *args, "--reason", "r")
        dry = author.phasegate("decide", *args, "--reason", "r", "--dry-run")
        assert real.returncode == 2 and (dry.returncode, dry.stderr) == (2, real.stderr), (args, dry)
    assert _decisions(author) == before
    # What fits is previewed, and the approval says what will still stop the run.
    dry = author.phasegate("decide", "r1", "approve", "--reason", "r", "--dry-run")
    assert dry.returncode == 0, dry
    assert "r1/publish/notify" in dry.stdout and "in doubt" in dry.stdout, dry.stdout


def test_a_completed_run_refuses_every_decision_but_reset_in_a_dry_run(author: Author) -> None:
    author.gate.touch()
    assert author.do("cli", new=True).returncode == 0
    for action in ("approve", "degrade", "confirm_effect", "retry_effect"):
        real = author.phasegate("decide", "r1", action, "--reason", "r")
        dry = author.phasegate("decide", "r1", action, "--reason", "r", "--dry-run")
        assert real.returncode == 2 and (dry.returncode, dry.stderr) == (2, real.stderr), (action, dry)
    assert _decisions(author) == 0
