"""CHANGELOG.md keeps up with what it must record: every schema version of the
store, and the version pyproject.toml gives the package."""

from __future__ import annotations

import re
import tomllib

from phasegate.store.version import SCHEMA_VERSION
from tests.support.cli import ROOT

CHANGELOG = (ROOT / "CHANGELOG.md").read_text()


def _releases() -> dict[str, str]:
    """Version (or "Unreleased") -> the text of its section."""
    parts = re.split(r"^## \[([^\]]+)\].*$", CHANGELOG, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_schema_version_has_an_entry() -> None:
    """A change of `SCHEMA_VERSION` (engine/store/version.py) needs its line:
    `**Schema version N**` under the release (or Unreleased) that brings it."""
    entries = {int(n) for text in _releases().values() for n in re.findall(r"\*\*Schema version (\d+)\*\*", text)}
    assert set(range(1, SCHEMA_VERSION + 1)) - entries == set(), "schema versions without a CHANGELOG.md entry"
    assert max(entries) == SCHEMA_VERSION, "CHANGELOG.md names a schema version this engine does not write"


def test_the_package_version_has_a_section() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    releases = _releases()
    assert version in releases, f"CHANGELOG.md has no section for {version}"
    assert "Unreleased" in releases and list(releases)[0] == "Unreleased"
    dated = [v for v in releases if v != "Unreleased"]
    assert dated == sorted(dated, key=lambda v: tuple(int(x) for x in v.split(".")), reverse=True), "newest first"
