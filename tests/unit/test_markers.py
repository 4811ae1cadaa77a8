"""Which markers a test gets (tests/support/markers.py), from where it lives
and what it uses; the collection itself is tests/test_markers.py's."""

from __future__ import annotations

import tomllib

from tests.support import markers
from tests.support.cli import ROOT


def test_a_unit_test_is_only_unit() -> None:
    assert markers.kinds("tests/unit/test_planner.py", ["tmp_path"]) == {"unit"}


def test_every_other_test_is_integration() -> None:
    for path in ("tests/engine/test_lease.py", "tests/test_quality.py", "tests/docs/test_site_builds.py"):
        assert markers.kinds(path) == {"integration"}, path
    assert markers.kinds("tests/unitary/test_x.py") == {"integration"}


def test_the_postgres_side_of_a_backend_fixture_is_a_postgres_test() -> None:
    for fixture in ("h", "two", "store"):
        assert markers.kinds("tests/engine/test_x.py", [fixture, "tmp_path"], {fixture: "postgres"}) == {
            "integration",
            "postgres",
        }
        assert markers.kinds("tests/engine/test_x.py", [fixture], {fixture: "sqlite"}) == {"integration"}
    # a "postgres" parameter of anything else is only a word
    assert markers.kinds("tests/engine/test_x.py", ["url"], {"url": "postgres"}) == {"integration"}
    assert markers.kinds("tests/web/test_serve_processes.py", ["pg_store"]) == {"integration", "browser", "postgres"}
    assert markers.kinds("tests/postgres/test_workers.py") == {"integration", "postgres"}
    assert markers.kinds("tests/engine/test_x.py", ["pg_url"]) == {"integration", "postgres"}


def test_browser_and_soak_tests_are_marked_by_their_folder_or_fixture() -> None:
    assert markers.kinds("tests/web/test_serve_browser.py") == {"integration", "browser"}
    assert markers.kinds("tests/console/test_x.py", ["_browser_paths"]) == {"integration", "browser"}
    assert markers.kinds("tests/reliability/test_torture_crash.py") == {"integration", "soak"}


def test_every_kind_is_registered_for_strict_markers() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--strict-markers" in conf["addopts"].split()
    registered = {line.split(":", 1)[0] for line in conf["markers"]}
    assert set(markers.KINDS) <= registered
