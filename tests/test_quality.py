"""Lint, format and types are part of the suite, so the README's one test
command checks them too."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
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


def test_mypy_strict_over_the_engine_and_the_console() -> None:
    """`mypy` as a developer runs it, from pyproject's [tool.mypy]: strict, and
    over both folders (the console against the engine's public API only)."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert conf["strict"] is True and {"engine", "console", "tests/typed"} <= set(conf["files"])
    p = subprocess.run([*_tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
