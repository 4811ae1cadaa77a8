"""Fixtures for the engine's tests; the harness itself is in engine_harness.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_harness import Harness


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    yield Harness(tmp_path)


@pytest.fixture(scope="session")
def clean_report_hash(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The hash of an uninterrupted run's result, to compare resumed runs with."""
    h = Harness(tmp_path_factory.mktemp("clean"))
    p = h.run("clean")
    assert p.returncode == 0, p
    return h.report_hash("clean")
