"""The code the documentation shows is code that works.

- A block marked `<!-- run -->` is executed as a reader would paste it, in an
  empty folder with the installed `phasegate` first on PATH: a `python` block
  as a script, a `bash` block by bash. Its exit code must be 0 and, when the
  next block is marked `<!-- prints -->`, its output must be that block.
- A shell block marked `<!-- run-after -->` runs in the folder of the page's
  `run` block before it, once that one has run: the next step of the same
  example (the command-line form of a script the page just ran).
- A shell block marked `<!-- run-postgres -->` runs as a `run` block does,
  with `PHASEGATE_DB` naming a fresh schema of the test server.
- Every other `python` block must at least compile.
- Every `phasegate ...` command in any other shell block (`bash`, `sh`) is
  parsed by the real parser: a documented flag that does not exist, a missing
  required argument or a misspelt command fails here.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from phasegate.cli.parser import build_parser
from phasegate.errors import UsageError
from tests.docs.docs_support import Block, all_blocks
from tests.support.cli import child_env

SHELLS = ("bash", "sh")
BLOCKS = all_blocks()
RUN = [b for b in BLOCKS if b.marker == "run"]
AFTER = [b for b in BLOCKS if b.marker == "run-after"]
ON_POSTGRES = [b for b in BLOCKS if b.marker == "run-postgres"]


def _env() -> dict[str, str]:
    # A reader's shell: the installed commands first, no store named for them.
    env = child_env(drop=("PHASEGATE_DB",))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _printed(block: Block) -> str | None:
    later = BLOCKS[BLOCKS.index(block) + 1 :]
    if later and later[0].page == block.page and later[0].marker == "prints":
        return later[0].body
    return None


def test_the_marked_blocks_are_found() -> None:
    """A page losing its markers would silently run nothing here."""
    assert {str(b.page) for b in RUN} >= {"docs/getting-started.md", "docs/writing/runbooks.md"}
    assert any(b.lang == "bash" for b in RUN) and any(b.lang == "python" for b in RUN)


def _execute(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `block` in `cwd` as a reader would, and check it ended well."""
    if block.lang == "python":
        name = block.file or "example.py"
        (cwd / name).write_text(block.body)
        cmd = [sys.executable, name]
    else:
        assert block.lang in SHELLS, f"{block}: a run block must be python or a shell"
        cmd = [block.lang, "-c", block.body]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{block}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, f"{block}:\n{proc.stderr}"
    printed = _printed(block)
    if printed is not None:
        assert proc.stdout.strip() == printed.strip(), f"{block} printed something else"
    return proc


@pytest.mark.parametrize("block", RUN, ids=str)
def test_a_run_block_runs(block: Block, tmp_path: Path) -> None:
    _execute(block, tmp_path, _env())


@pytest.mark.parametrize("block", AFTER, ids=str)
def test_a_run_after_block_runs_after_its_example(block: Block, tmp_path: Path) -> None:
    before = [b for b in RUN if b.page == block.page and b.line < block.line]
    assert before, f"{block}: no `run` block before it on its page"
    assert block.lang in SHELLS, f"{block}: a run-after block is a shell block"
    env = _env()
    _execute(before[-1], tmp_path, env)
    _execute(block, tmp_path, env)


@pytest.mark.parametrize("block", ON_POSTGRES, ids=str)
def test_a_postgres_block_runs(block: Block, tmp_path: Path) -> None:
    from tests.engine.pg_schema import pg_schema

    with pg_schema() as url:
        env = {**_env(), "PHASEGATE_DB": url}
        _execute(block, tmp_path, env)
        if str(block.page) == "docs/deploying/postgresql.md":
            # The guide's order works: the first run made the store, the worker finished the killed run.
            status = subprocess.run(
                ["phasegate", "status", "nightly", "--json"], env=env, capture_output=True, text=True
            )
            assert json.loads(status.stdout)["status"] == "completed", status.stdout + status.stderr


def test_the_postgres_guide_is_run() -> None:
    assert "docs/deploying/postgresql.md" in {str(b.page) for b in ON_POSTGRES}


def test_the_live_run_of_a_sample_ends_completed(tmp_path: Path) -> None:
    """Getting started's live run: killed mid-run, resumed, completed."""
    (block,) = [b for b in RUN if str(b.page) == "docs/getting-started.md" and "billing-acme" in b.body]
    env = _env()
    proc = subprocess.run(
        ["bash", "-c", block.body], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "billing-acme: completed" in proc.stdout
    status = subprocess.run(
        ["phasegate", "status", "billing-acme", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    view = json.loads(status.stdout)
    assert view["status"] == "completed"
    assert [p["state"] for p in view["phases"]] == ["done"] * 5
    # Killed at the beacon, not by a timer: the three priced invoices came back from the store.
    assert (tmp_path / "paused.txt").read_text().split()[0] == "priced:INV-1003"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "python" and b.marker != "run"], ids=str)
def test_a_python_fragment_compiles(block: Block) -> None:
    compile(block.body, str(block), "exec")


def _commands(body: str) -> list[list[str]]:
    """Each `phasegate ...` command of a shell block, as its argument list."""
    found = []
    for line in body.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue  # a line of a multi-line string: not a command
        segment: list[str] = []
        for word in [*words, ";"]:
            if word in ("&&", "||", "|", ";", "&") or word.endswith(";"):
                if word.endswith(";") and word != ";":
                    segment.append(word[:-1])
                if "phasegate" in segment:
                    found.append(segment[segment.index("phasegate") + 1 :])
                segment = []
            else:
                segment.append(word.rstrip("&"))
    return found


SHOWN = [(b, args) for b in BLOCKS if b.lang in SHELLS and b.marker != "run" for args in _commands(b.body)]


def test_the_shown_commands_are_found() -> None:
    assert len(SHOWN) >= 8, SHOWN


@pytest.mark.parametrize(("block", "args"), SHOWN, ids=lambda v: str(v) if isinstance(v, Block) else " ".join(v))
def test_a_shown_command_parses(block: Block, args: list[str]) -> None:
    parser = build_parser()
    try:
        parser.parse_args(args)
    except UsageError as e:
        pytest.fail(f"{block}: phasegate {' '.join(args)}: {e}")
    # argparse takes a prefix of a flag for the flag: the page must spell it whole.
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    command = next(a for a in args if a in sub.choices)
    known = {o for p in (parser, sub.choices[command]) for a in p._actions for o in a.option_strings}
    unknown = [a.split("=")[0] for a in args if a.startswith("-") and a.split("=")[0] not in known]
    assert not unknown, f"{block}: phasegate {command} has no {unknown}"


def test_the_webhook_check_without_phasegate_agrees_with_phasegates() -> None:
    """docs/operating/monitoring.md's `verify`, for receivers without
    phasegate, accepts what `watch` signs and refuses a changed body or an old
    timestamp, as `phasegate.ops.verify_webhook` does."""
    import time

    from phasegate.alerts.signing import sign, standard_secret

    (block,) = [b for b in RUN if str(b.page) == "docs/operating/monitoring.md" and "def verify(" in b.body]
    names: dict[str, object] = {}
    exec(compile(block.body, str(block), "exec"), names)  # the page's own code, not stored data
    verify = names["verify"]
    key, body = b"k" * 32, b'{"run_id": "r1", "status": "blocked"}'
    secret = standard_secret(key)
    assert verify(secret, body, sign(key, body, "msg_1"))  # type: ignore[operator]
    assert not verify(secret, body + b" ", sign(key, body, "msg_1"))  # type: ignore[operator]
    assert not verify(secret, body, sign(key, body, "msg_1", now=time.time() - 600))  # type: ignore[operator]
    assert not verify(secret, body, {**sign(key, body, "msg_1"), "webhook-id": "msg_2"})  # type: ignore[operator]


def _complete(block: Block) -> bool:
    """A Python block that stands alone: it imports what it uses from
    phasegate, declares a workflow and runs it (or has a `__main__`)."""
    body = block.body
    runs = "Engine(" in body or 'if __name__ == "__main__"' in body
    return "import" in body and "Workflow(" in body and runs


def test_every_complete_example_is_marked_to_run() -> None:
    """An example a reader can paste and run is one the suite runs: marked
    `<!-- run -->` (or `<!-- run FILE -->`), its output in `<!-- prints -->`."""
    unmarked = [
        str(b) for b in BLOCKS if b.lang == "python" and _complete(b) and b.marker not in ("run", "api-example")
    ]
    assert not unmarked, f"complete examples not marked <!-- run -->: {unmarked}"
    assert sum(_complete(b) for b in RUN) >= 4  # the rule sees the marked ones
