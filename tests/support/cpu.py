"""Where the suite's CPU goes, test by test, whatever the machine's load.

Wall time lies on a shared machine; CPU time does not (much). With
`PHASEGATE_TEST_CPU_LOG=FILE` set, every test appends one JSON line to FILE:
its node id, the CPU seconds this process spent on it (setup, call and
teardown) and the CPU seconds of the children it reaped meanwhile (the
`phasegate` command lines it ran, their workers). `python -m
tests.support.cpu FILE` sums them by file and prints the costliest.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ENV = "PHASEGATE_TEST_CPU_LOG"


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class Meter:
    """Measures one test; `record` appends its line (O_APPEND: xdist workers share the file)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.own = _cpu(resource.RUSAGE_SELF)
        self.children = _cpu(resource.RUSAGE_CHILDREN)

    def record(self, nodeid: str) -> None:
        line = {
            "id": nodeid,
            "own": round(_cpu(resource.RUSAGE_SELF) - self.own, 3),
            "children": round(_cpu(resource.RUSAGE_CHILDREN) - self.children, 3),
        }
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
        finally:
            os.close(fd)


def lines(path: Path) -> Iterator[dict[str, object]]:
    for raw in path.read_text().splitlines():
        if raw.strip():
            yield json.loads(raw)


def main(argv: list[str]) -> int:
    path, top = Path(argv[0]), int(argv[1]) if len(argv) > 1 else 40
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    tests = list(lines(path))
    for t in tests:
        f = by_file[str(t["id"]).split("::", 1)[0]]
        f[0] += float(t["own"])  # type: ignore[arg-type]
        f[1] += float(t["children"])  # type: ignore[arg-type]
        f[2] += 1
    total_own = sum(v[0] for v in by_file.values())
    total_children = sum(v[1] for v in by_file.values())
    print(f"{len(tests)} tests: {total_own:.0f} s own + {total_children:.0f} s children")
    for name, (own, children, n) in sorted(by_file.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:top]:
        print(f"{own + children:8.1f} s  {own:7.1f} own {children:7.1f} children  {int(n):4d} tests  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
