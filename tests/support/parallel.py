"""How a `pytest` run is spread over processes (pytest-xdist).

Most of the suite waits: on child processes it starts and kills, on leases
that must lapse, on polls of a store, on a browser. Run one after another, the
whole suite used barely one of CI's two cores and took about 19 minutes; four
workers keep both cores busy. pyproject's `addopts` say `-n auto --dist
loadgroup`, and xdist asks `workers()` (through tests/conftest.py's
`pytest_xdist_auto_num_workers`) how many "auto" is:

- `PHASEGATE_TEST_WORKERS=N` decides (0: no workers, everything in this process);
- a run of named tests only (every argument has `::`) gets none, so running
  one test to debug it costs no worker start-up (and `--pdb` works);
- so does a run of tests/unit only, or of the `unit` mark only
  (`pytest -m unit`): pure code that takes seconds, where starting workers
  would cost more than it saves (11 s alone, 22 s in four);
- otherwise twice the CPUs, between 2 and 8.

`-n 0` (or `-p no:xdist`) on the command line runs serially whatever this says.

`--dist loadgroup` hands each test to whichever worker is free, except tests
marked `xdist_group(NAME)`, which all go to one worker: the modules whose
module-scoped fixture is expensive (a demo store, a wheel in a venv) carry one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ENV = "PHASEGATE_TEST_WORKERS"
MAX_WORKERS = 8
IN_PROCESS = ("tests/unit",)
"""Folders whose tests are faster run here than handed to workers."""
IN_PROCESS_MARK = "unit"
"""The `-m` expression whose tests are those folders' (tests/support/markers.py)."""

HEAVY_FIRST = (
    "tests/bench/",
    "tests/test_packaging.py",
    "tests/test_quality.py",
    "tests/reliability/",
    "tests/demo/",
    "tests/integrations/",
    "tests/web/",
    "tests/postgres/",
)
"""Where the longest tests and groups are. Under xdist they are handed out
first, so no worker is left with a two-minute test while the others are idle
at the end; the order of tests inside each part is kept."""


def workers(args: Sequence[str], environ: Mapping[str, str], cpus: int | None, marks: str = "") -> int:
    """The number of xdist workers for a run with these command-line
    arguments (pytest's `config.args`, relative to the repository root),
    environment, CPU count and `-m` expression."""
    raw = environ.get(ENV, "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            raise ValueError(f"{ENV} must be a whole number, not {raw!r}") from None
        if n < 0:
            raise ValueError(f"{ENV} must be 0 or more, not {n}")
        return n
    if args and all("::" in a or _in_process(a) for a in args):
        return 0
    if marks.strip() == IN_PROCESS_MARK:
        return 0
    return max(2, min(MAX_WORKERS, 2 * (cpus or 1)))


def _in_process(arg: str) -> bool:
    path = arg.split("::", 1)[0].rstrip("/")
    return any(path == f or path.startswith(f + "/") for f in IN_PROCESS)


def heavy_rank(nodeid: str) -> int:
    """Sort key: the position of the first HEAVY_FIRST part `nodeid` is in,
    after all of them for any other test."""
    for i, prefix in enumerate(HEAVY_FIRST):
        if nodeid.startswith(prefix):
            return i
    return len(HEAVY_FIRST)
