"""Archives are written only into folders phasegate made or checked are its
own, never through a link, and stored with absolute paths (#16, finding 12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from engine_harness import Harness, one_line_error

from phasegate.history.archive import safe_name
from tests.support import cli

PHASES = ("load", "price", "charge", "report")


def _root(h: Harness) -> Path:
    return Path(str(h.db) + ".archive")


def _plant_links(folder: Path, victim: Path) -> None:
    """A link at every name an archive write of r1 could use, to a file the
    user can write: following one would overwrite it."""
    folder.mkdir(parents=True, exist_ok=True)
    for epoch in range(3):
        for seq in range(1, 9):
            for phase in PHASES:
                for suffix in (".json", ".tmp"):
                    (folder / f"{epoch}.{seq}-{phase}{suffix}").symlink_to(victim)


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    return victim


def test_a_folder_others_can_write_is_refused_and_nothing_is_followed(h: Harness, tmp_path: Path) -> None:
    assert h.run("r1").returncode == 0
    victim = _victim(tmp_path)
    root = _root(h)
    root.mkdir()
    os.chmod(root, 0o777)
    _plant_links(root / safe_name("r1"), victim)
    os.chmod(root / safe_name("r1"), 0o777)
    before = h.dump()
    p = h.cli("prune", "--apply")
    assert "can be written by others" in one_line_error(p)
    assert victim.read_text() == "precious\n"
    assert h.dump() == before


def test_a_planted_link_in_its_own_folder_is_replaced_not_followed(h: Harness, tmp_path: Path) -> None:
    assert h.run("r1").returncode == 0
    victim = _victim(tmp_path)
    root = _root(h)
    root.mkdir(mode=0o700)
    _plant_links(root / safe_name("r1"), victim)
    os.chmod(root / safe_name("r1"), 0o700)
    p = h.cli("prune", "--apply")
    assert p.returncode == 0, p
    assert victim.read_text() == "precious\n"
    (path,) = h.sql("SELECT archive_path FROM phasegate_checkpoints WHERE run_id='r1' AND phase='load'")[0:1]
    assert not Path(path[0]).is_symlink() and Path(path[0]).is_file()


def test_an_archive_root_that_is_a_link_is_refused(h: Harness, tmp_path: Path) -> None:
    assert h.run("r1").returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    _root(h).symlink_to(elsewhere)
    before = h.dump()
    assert "symbolic link" in one_line_error(h.cli("prune", "--apply"))
    assert h.dump() == before and list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_folder_of_another_user_is_refused(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    root = _root(h)
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    before = h.dump()
    assert "belongs to user id 65534" in one_line_error(h.cli("prune", "--apply"))
    assert h.dump() == before


def test_a_relative_archive_dir_is_stored_absolute(h: Harness, tmp_path: Path) -> None:
    assert h.run("r1").returncode == 0
    expected = h.report_hash("r1")
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    env = {**h.env, "PHASEGATE_ARCHIVE_DIR": "arch"}
    p = cli.run(["prune", "--apply", "--db", h.target], env=env, cwd=here)
    assert p.returncode == 0, p
    (path,) = h.sql("SELECT archive_path FROM phasegate_checkpoints WHERE run_id='r1' AND phase='load'")[0]
    assert Path(path).is_absolute() and Path(path).is_relative_to(here / "arch"), path
    # A rewind resumed from another folder still finds load's archive: load is not re-run.
    assert h.decide("r1", "rewind", "--phase", "price", reason="re-price").returncode == 0
    h.clear_trace()
    p = cli.run(["resume", "r1", "--db", h.target], env=env, cwd=there)
    assert p.returncode == 0, p
    assert h.trace() == ["start:price", "start:charge", "start:report"]
    assert h.report_hash("r1") == expected
