"""Fixtures for the engine's tests; the harness itself is in engine_harness.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine_harness import Harness


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    yield Harness(tmp_path)
