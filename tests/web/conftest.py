"""Fixtures for the served console: a copy of the console's fixture store,
`phasegate serve` as a real subprocess, and a headless chromium.

No browser: the tests skip with the reason, except under CI=true, where a
missing browser is a broken setup (.ci/run installs it) and fails them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.console import fixtures
from tests.web.browser import Terminal, browser_paths, start_browser

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def _fixture_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web-fixture")


@pytest.fixture
def store(tmp_path: Path, _fixture_cache: Path) -> Path:
    """A private copy of the console's fixture store: one run in every state."""
    return fixtures.fixture_db(tmp_path, _fixture_cache)


@pytest.fixture(scope="session")
def _browser_paths() -> tuple[str, str]:
    found = browser_paths()
    if found is None:
        reason = "no chromium and chromedriver installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {reason}")
        pytest.skip(reason)
    return found


@pytest.fixture
def browser(_browser_paths: tuple[str, str]) -> Iterator[object]:
    driver = start_browser(*_browser_paths)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def open_console(browser: object) -> Callable[[str], Terminal]:
    def open_(url: str) -> Terminal:
        browser.get(url)  # type: ignore[attr-defined]
        return Terminal(browser)  # type: ignore[arg-type]

    return open_


@dataclass
class Served:
    """A running `phasegate serve`."""

    proc: subprocess.Popen[str]
    url: str
    """With the token."""
    stderr: list[str] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return self.url.split("/", 3)[0] + "//" + self.url.split("/", 3)[2]

    @property
    def hostport(self) -> str:
        return self.url.split("/", 3)[2]

    @property
    def token(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[1]

    def children(self) -> list[int]:
        return children(self.proc.pid)

    def log(self) -> str:
        return "".join(self.stderr)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(db: Path, *args: str, **env: str) -> Served:
        full = {k: v for k, v in os.environ.items() if k != "PHASEGATE_OPERATOR"}
        full.update(env)
        full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")])
        proc = subprocess.Popen(
            [sys.executable, "-m", "phasegate", "serve", "--db", str(db), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=full,
            cwd=ROOT,
        )
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        served = Served(proc, line.rsplit(" ", 1)[-1].strip())
        err = proc.stderr

        def drain() -> None:
            for chunk in err:
                served.stderr.append(chunk)

        threading.Thread(target=drain, daemon=True).start()
        assert served.url.startswith("http://"), f"serve printed {line!r}; stderr: {served.log()}"
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()
