"""`mkdocs build --strict` succeeds: no broken link or anchor, no page left
out of the nav, no API entry that cannot be collected, no warning.

mkdocs comes with the `test` extra (and the `docs` extra); the site is built
into this test's own folder, never into the repository's `site/`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install '.[test]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    for page in ("index.html", "getting-started.html", "reference/cli.html", "reference/api/engine.html"):
        assert (site / page).is_file(), page
    # The API reference was generated from the docstrings, not left empty.
    engine = (site / "reference" / "api" / "engine.html").read_text()
    assert "Engine.decide" in engine or 'id="phasegate.Engine.decide"' in engine
