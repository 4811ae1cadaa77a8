"""Lint, format and types are part of the suite, so the README's one test
command checks them too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> list[str]:
    exe = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(exe).exists():
        pytest.skip(f"{name} is not installed (pip install '.[test]')")
    return [exe]


def test_ruff_lint() -> None:
    p = subprocess.run([*_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_ruff_format() -> None:
    p = subprocess.run([*_tool("ruff"), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_mypy_strict_engine() -> None:
    p = subprocess.run([*_tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
