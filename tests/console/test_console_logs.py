"""The files the console writes beside the store (issue #29, finding 9):
`e`'s resume logs in `DB.logs` are made as archives are, so a link planted
there, or a folder another account made, is refused in one line and nothing
is written through it. And `--show ''` (finding 13) is refused."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.detail import DetailScreen
from tests.console import fixtures as fx
from tests.console import wf as fixture_wf
from tests.console.pilot_helpers import settle
from tests.support import cli

RUN_ID = "inv-0009-resumable"
NOBODY = 65534


def notices(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]  # noqa: SLF001 - what the operator saw, by text


def interrupted(store: Path) -> None:
    """A run `e` would resume: interrupted inside its effect, with a stored target."""
    fixture_wf.HOOKS.update(interrupt="charge")
    try:
        with fx.quiet_engine(), Engine(store, clock=fx.Clock(fx.T0 + 100), lease_seconds=fx.LEASE) as eng:
            with pytest.raises(KeyboardInterrupt):
                eng.run(fixture_wf.wf, RUN_ID, {"invoices": 2}, target="tests.console.wf:wf")
    finally:
        fixture_wf.HOOKS.update(interrupt=None)


async def press_e(store: Path, make_app: Any) -> list[str]:
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, RUN_ID))
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        return notices(app)


def status(store: Path) -> str:
    with Engine(store, create=False, readonly=True) as eng:
        return str(eng.status(RUN_ID).status)


@pytest.mark.anyio
async def test_a_logs_folder_that_is_a_link_is_refused(store: Path, make_app: Any, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    interrupted(store)
    (store.parent / f"{store.name}.logs").symlink_to(elsewhere)
    said = await press_e(store, make_app)
    refused = [n for n in said if "symbolic link" in n]
    assert refused and "\n" not in refused[0], said
    assert not any(n.startswith("phasegate resume") for n in said), said
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    assert status(store) == "interrupted"  # and nothing started


@pytest.mark.anyio
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
async def test_a_logs_folder_of_another_account_is_refused_and_its_link_not_followed(
    store: Path, make_app: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """As the review did it: another account made `DB.logs/` in a shared
    folder and linked the run's log name to a root-owned 0600 file."""
    # pytest's tmp_path is under a folder only root can enter: the shared
    # folder (sticky, world-writable, as /tmp is) is made beside it.
    shared = Path(tempfile.mkdtemp(prefix="phasegate-shared-"))
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    shared.chmod(0o1777)
    db = shared / store.name
    shutil.move(store, db)
    interrupted(db)
    victim = tmp_path / "victim"
    victim.write_text("root's own\n")
    victim.chmod(0o600)
    logs = shared / f"{db.name}.logs"
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    subprocess.run([*as_nobody, "mkdir", "-m", "0777", str(logs)], check=True)
    for name in (f"resume-{RUN_ID}.log", "resume.log"):
        subprocess.run([*as_nobody, "ln", "-s", str(victim), str(logs / name)], check=True)
    said = await press_e(db, make_app)
    refused = [n for n in said if f"belongs to user id {NOBODY}" in n]
    assert refused and "\n" not in refused[0], said
    assert victim.read_text() == "root's own\n"
    assert status(db) == "interrupted"


@pytest.mark.anyio
async def test_resume_logs_are_private_and_new_each_time(store: Path, make_app: Any) -> None:
    interrupted(store)
    said = await press_e(store, make_app)
    started = [n for n in said if n.startswith(f"phasegate resume {RUN_ID} started")]
    assert started, said
    log = Path(started[0].split("its log: ")[1])
    logs = store.parent / f"{store.name}.logs"
    assert log.parent == logs
    assert logs.stat().st_mode & 0o777 == 0o700 and log.stat().st_mode & 0o777 == 0o600
    for _ in range(600):  # the resume it started, to its end (no child left behind)
        if status(store) == "completed":
            break
        await asyncio.sleep(0.1)
    assert f"{RUN_ID}: completed" in log.read_text()


def test_an_empty_show_is_refused_in_one_line(store: Path) -> None:
    p = cli.run(["console", "--db", str(store), "--show", ""], mode="exec", timeout=60)
    assert p.returncode == 2, p
    assert p.stderr.count("\n") == 1 and "--show ''" in p.stderr, p.stderr
