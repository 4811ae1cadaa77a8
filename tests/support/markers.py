"""Which kind of test a test is: the markers `pytest -m` selects on.

tests/conftest.py's collection hook marks every test from where it lives and
what it uses, so no test file has to remember to, and a new test is marked
the day it is written:

- `unit`: under tests/unit, pure code in this process (the inner loop,
  `pytest -m unit`);
- `integration`: every other test (child processes, Pilot, a server, a build);
- `browser`: under tests/web, or using the `_browser_paths` fixture, which
  finds the system's chromium and its driver;
- `postgres`: under tests/postgres, or on the PostgreSQL side of a backend
  fixture (`h`, `two`, `store` with the param "postgres"), or using a fixture
  that makes a schema (`pg_url`, `pg_store`); a test that makes its own
  schema inline carries `pytest.mark.postgres` itself;
- `soak`: under tests/reliability, the torture runs.

The names and their one-line meanings are registered in pyproject's pytest
options, which run with `--strict-markers`: a misspelt mark is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

UNIT, INTEGRATION, BROWSER, POSTGRES, SOAK = "unit", "integration", "browser", "postgres", "soak"
KINDS = (UNIT, INTEGRATION, BROWSER, POSTGRES, SOAK)

#: Fixtures parametrised over the two backends; the "postgres" param is a PostgreSQL test.
BACKEND_FIXTURES = frozenset({"h", "two", "store"})
#: Fixtures that make a PostgreSQL schema for the test.
PG_FIXTURES = frozenset({"pg_url", "pg_store"})
#: Fixtures that start the system's chromium.
BROWSER_FIXTURES = frozenset({"_browser_paths"})


def kinds(path: str, fixtures: Iterable[str] = (), params: Mapping[str, object] | None = None) -> set[str]:
    """The markers of a test.

    Args:
        path: the test file, relative to the repository root, with `/`.
        fixtures: every fixture the test uses, directly or through others.
        params: the test's parametrisation (pytest's `callspec.params`).

    Returns:
        The names among `KINDS` that apply.
    """
    used = set(fixtures)
    out = {UNIT} if path.startswith("tests/unit/") else {INTEGRATION}
    if path.startswith("tests/web/") or used & BROWSER_FIXTURES:
        out.add(BROWSER)
    on_pg = any(params.get(name) == "postgres" for name in BACKEND_FIXTURES & used) if params else False
    if path.startswith("tests/postgres/") or on_pg or used & PG_FIXTURES:
        out.add(POSTGRES)
    if path.startswith("tests/reliability/"):
        out.add(SOAK)
    return out
