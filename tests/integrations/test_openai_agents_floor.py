"""The OpenAI Agents SDK adapter on the oldest release the `openai-agents`
extra allows (.ci/floors-openai-agents.txt), not only the newest this venv
has: the adapter's tests again, all of them, the kill sweep included, in
`.ci/floor-venv` (which `.ci/run` makes).
Without that venv it skips, saying how to make one; under CI=true a
missing floor venv is a failure, as a missing browser is for tests/web."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.cli import ROOT

FLOOR_PIN = ROOT / ".ci" / "floors-openai-agents.txt"
FLOOR_PY = ROOT / ".ci" / "floor-venv" / "bin" / "python"
#: The adapter's tests whole: the names, and the full kill sweep (SIGKILL before and after every
#: model call and every tool call, then resumed; the approval approved and denied; verify clean),
#: on the floor release as on the newest (41 tests: 172 s on 2 workers of a loaded machine).
FLOOR_TESTS = [
    "tests/integrations/test_openai_agents_names.py",
    "tests/integrations/test_openai_agents.py",
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
