"""The OpenAI Agents SDK adapter on the oldest release the `openai-agents`
extra allows (.ci/floors-openai-agents.txt), not only the newest this venv
has: the adapter's tests again, in `.ci/floor-venv` (which `.ci/run` makes).
Without that venv it skips, saying how to make one; under CI=true a
missing floor venv is a failure, as a missing browser is for tests/web."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.cli import ROOT

FLOOR_PIN = ROOT / ".ci" / "floors-openai-agents.txt"
FLOOR_PY = ROOT / ".ci" / "floor-venv" / "bin" / "python"
#: The quick part of the adapter's tests, and one kill of the sweep (the one next to an effect):
#: the floor run is kept cheap; the whole sweep runs on the newest release.
FLOOR_TESTS = [
    "tests/integrations/test_openai_agents_names.py",
    "tests/integrations/test_openai_agents.py::test_the_agent_runs_parks_for_approval_and_completes_through_the_command_line",
    "tests/integrations/test_openai_agents.py::test_killed_at_each_call_and_resumed_approved[after:tool:c3]",
    "tests/integrations/test_openai_agents.py::test_killed_at_each_call_and_resumed_denied[before:model:final]",
]


def _pinned() -> str:
    lines = [ln.strip() for ln in FLOOR_PIN.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith("openai-agents=="), lines
    return lines[0].split("==", 1)[1]


def test_the_floor_pin_is_the_extras_floor() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert f'openai-agents = ["openai-agents>={_pinned()}"]' in text
    assert f'"openai-agents>={_pinned()}",' in text  # the test extra's


def test_the_adapter_passes_on_the_floor_release() -> None:
    if not FLOOR_PY.exists():
        message = (
            f"no floor venv at {FLOOR_PY.parent.parent}: make it with `python3 -m venv .ci/floor-venv && "
            ".ci/floor-venv/bin/pip install -e '.[test]' -r .ci/floors-openai-agents.txt` (.ci/run does)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    version = subprocess.run(
        [str(FLOOR_PY), "-c", "import importlib.metadata as m; print(m.version('openai-agents'))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert version.stdout.strip() == _pinned(), (version.stdout, version.stderr)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PHASEGATE_TEST_WORKERS"))}
    r = subprocess.run(
        [str(FLOOR_PY), "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "-q", *FLOOR_TESTS],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
