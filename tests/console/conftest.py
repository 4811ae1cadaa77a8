"""Fixtures for the console's tests: a copy of the fixture store per test,
an app over it with a frozen clock, and a way to wait until the app is idle."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phasegate import Engine
from phasegate.console.app import ConsoleApp
from tests.console import fixtures


@pytest.fixture
def anyio_backend() -> str:
    # anyio (a dependency of watchfiles) runs the async Pilot tests; asyncio only.
    return "asyncio"


@pytest.fixture(autouse=True)
def _operator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHASEGATE_OPERATOR", fixtures.OPERATOR)


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    # A resume the console starts has nothing of the console's folder on its
    # path (`-P`, #28): the fixture's module target (`tests.console.wf`) is
    # importable from PYTHONPATH, as a user's own package would be.
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))


@pytest.fixture(scope="session")
def _fixture_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("console-fixture")


@pytest.fixture
def store(tmp_path: Path, _fixture_cache: Path) -> Path:
    """A private copy of the fixture store (tests write to it)."""
    return fixtures.fixture_db(tmp_path, _fixture_cache)


@pytest.fixture
def make_app() -> Iterator[Callable[..., ConsoleApp]]:
    engines: list[Engine] = []

    def make(
        db: Path, *, read_only: bool = False, poll_interval: float = 0, live_events: bool = True, page_size: int = 200
    ) -> ConsoleApp:
        clock = fixtures.frozen()
        engine = Engine(db, clock=clock, lease_seconds=fixtures.LEASE, create=False, readonly=read_only)
        engines.append(engine)
        return ConsoleApp(
            engine,
            read_only=read_only,
            clock=clock,
            poll_interval=poll_interval,
            live_events=live_events,
            page_size=page_size,
        )

    yield make
    for e in engines:
        e.close()
