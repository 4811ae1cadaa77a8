"""The pydantic-ai tests again, against the oldest pydantic-ai the extra
allows: `.ci/run` makes a second venv, `.ci/floor-venv`, with the project and
`pydantic-ai-slim==FLOOR` (the floor of pyproject's `pydantic-ai` extra), and
this test runs tests/integrations/test_pydantic_ai*.py there, in a child.

Without that venv it skips with the reason; under CI=true, where `.ci/run`
made it, a missing one fails."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib

import pytest

from tests.support.cli import ROOT, child_env

FLOOR_VENV = ROOT / ".ci" / "floor-venv"
INSIDE = "PHASEGATE_FLOOR_RUN"
"""Set in the floor run's child, so that this test does not start itself there."""


def floor() -> str:
    """The pydantic-ai floor: the version pyproject's `pydantic-ai` extra starts at."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (spec,) = extras["pydantic-ai"]
    found = re.fullmatch(r"pydantic-ai-slim>=([0-9.]+)", spec)
    assert found, spec
    return found.group(1)


def test_the_pydantic_ai_tests_pass_against_the_floor_release() -> None:
    if os.environ.get(INSIDE):
        pytest.skip("this is the floor run itself")
    python = FLOOR_VENV / "bin" / "python"
    if not python.exists():
        reason = f"no {FLOOR_VENV.relative_to(ROOT)} (.ci/run makes it, with pydantic-ai-slim=={floor()})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {reason}")
        pytest.skip(reason)
    version = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('pydantic-ai-slim'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert version.stdout.strip() == floor(), f"the floor venv has pydantic-ai-slim {version.stdout}{version.stderr}"
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "integrations").glob("test_pydantic_ai*.py"))
    out = subprocess.run(
        [str(python), "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "-q", *tests],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env({INSIDE: "1"}),
        check=False,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
