"""Shared fixtures: a real database file per test, and the real command line
run in a subprocess (the way an operator or a deploy script uses it)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli as support
from tests.support import cpu, markers, parallel, seeds

ROOT = support.ROOT
WORKFLOWS = Path(__file__).resolve().parent / "workflows"
BILLING = f"{WORKFLOWS / 'billing.py'}:wf"


def cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
    mode: support.Mode | None = None,
) -> support.Result:
    """Run the `phasegate ARGS` command line in a child and return how it ended.

    By default (`mode=None`) the child is a forked warm one (the same argv,
    parser, store and exit code, without half a second of interpreter start
    and imports), or an exec'd `python -m phasegate` where the test gives a
    `cwd`, holds the child's SQLite database open itself (a Pilot test's
    console), or `PHASEGATE_TEST_CLI_MODE=exec` asks for every child exec'd,
    the way an operator's shell starts it (tests/README.md, "Children"). A
    test about the command's own start passes `mode="exec"`."""
    return support.run(args, env=env, timeout=timeout, cwd=cwd, mode=mode or support.default_mode(args, cwd=cwd))


def status_json(db: Path, run_id: str | None = None) -> Any:
    args = ["status", "--json", "--db", str(db)]
    if run_id:
        args.insert(1, run_id)
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--seed",
        type=int,
        default=None,
        help=f"seed of the randomised (torture) tests; default ${seeds.ENV}, else {seeds.DEFAULT}",
    )


def pytest_configure(config: pytest.Config) -> None:
    seeds.set_option(config.getoption("seed"))


def pytest_report_header(config: pytest.Config) -> str:
    return f"phasegate test seed: {seeds.test_seed()} (--seed N or {seeds.ENV}=N to change it)"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """What `-n auto` (pyproject's addopts) means here: see tests/support/parallel.py."""
    args = [_from_root(config, a) for a in config.args]
    return parallel.workers(args, os.environ, os.cpu_count(), config.getoption("markexpr") or "")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`pytest -m unit` collects tests/unit alone: only its tests can carry
    the mark (tests/support/markers.py), and importing the rest of the suite
    to deselect it would take longer than the unit tests take to run."""
    if (config.getoption("markexpr") or "").strip() != markers.UNIT:
        return None
    tests = config.rootpath / "tests"
    unit = tests / "unit"
    path = collection_path.resolve()
    if not path.is_relative_to(tests) or path == tests or path.is_relative_to(unit):
        return None
    return True


def _from_root(config: pytest.Config, arg: str) -> str:
    """A command-line argument (path, or path::test) relative to the repository root."""
    path, sep, rest = arg.partition("::")
    full = (config.invocation_params.dir / path).resolve()
    rel = full.relative_to(config.rootpath).as_posix() if full.is_relative_to(config.rootpath) else path
    return rel + sep + rest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every test is marked by where it lives and what it uses (tests/support/markers.py),
    # first, so that `-m` (pytest's own hook, after this one) selects on the marks.
    for item in items:
        rel = Path(str(item.path)).resolve()
        path = rel.relative_to(config.rootpath).as_posix() if rel.is_relative_to(config.rootpath) else str(rel)
        callspec = getattr(item, "callspec", None)
        for kind in sorted(markers.kinds(path, getattr(item, "fixturenames", ()), callspec and callspec.params)):
            item.add_marker(kind)
    # Only a worker reorders (all workers the same way, as xdist requires):
    # the longest parts are handed out first. A serial run keeps file order.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: parallel.heavy_rank(item.nodeid))


@pytest.fixture
def seed() -> int:
    """The run's seed (see tests/support/seeds.py): fixed unless overridden."""
    return seeds.test_seed()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def run_cli() -> Callable[..., support.Result]:
    return cli


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With PHASEGATE_TEST_CPU_LOG set, each test's CPU (its own and its
    children's) goes to that file (tests/support/cpu.py)."""
    path = os.environ.get(cpu.ENV)
    meter = cpu.Meter(path) if path else None
    yield
    if meter is not None:
        meter.record(item.nodeid)
