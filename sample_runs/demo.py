"""`phasegate demo`: build a database with a run in every state an operator
triages, then open the console on it.

This module is imported by every `phasegate` invocation (to register the
subcommand), so it imports nothing heavy until the command runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from phasegate import ExitCode

DEFAULT_DB = "phasegate-demo.db"


def add_demo(subparsers: Any) -> None:
    s = subparsers.add_parser(
        "demo",
        help="build a demo database with a run in every triage state, then open the console",
        description=(
            "Run the sample workflows (billing, pipeline, research, approvals) and really interrupt them, so the "
            "database holds one run in each state an operator triages: interrupted, integrity failure, "
            "environment mismatch, in-doubt effect, below floor, failed, prunable, completed, waiting for an "
            "answer, waiting on a timer and on a rate limit, paused, cancelled, and one "
            "still running in the background for a few minutes. Then open the console on it."
        ),
    )
    s.add_argument(
        "--db",
        default=None,
        help=f"where to build it (default: ./{DEFAULT_DB}, never $PHASEGATE_DB); "
        "its working files (ledgers, configs, folders) go beside it in ./phasegate-demo.work/",
    )
    s.add_argument("--no-console", action="store_true", help="build only; do not open the console")
    s.add_argument("--force", action="store_true", help="replace an existing demo database without asking")
    s.set_defaults(fn=cmd_demo)


def paths(db: str | Path) -> tuple[Path, Path]:
    """The database and its working folder beside it (`x.db` -> `x.work/`)."""
    path = Path(db).expanduser().absolute()
    return path, path.with_name(path.stem + ".work")


def cmd_demo(args: argparse.Namespace) -> int:
    from phasegate import UsageError

    from ._build import MARKER

    db, work = paths(args.db or DEFAULT_DB)
    if not db.parent.is_dir():
        raise UsageError(f"folder {db.parent} does not exist")
    if db.exists() or work.exists():
        if not (work / MARKER).exists():
            raise UsageError(f"{db} exists and was not built by phasegate demo; choose another --db")
        if not args.force:
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise UsageError(f"{db} already exists; pass --force to replace it (there is no terminal to ask on)")
            answer = input(f"{db} holds an earlier demo. Replace it? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print(f"kept {db}")
                return open_console(db, args.no_console)
        _remove(db, work)
    _build_with_progress(db, work)
    return open_console(db, args.no_console)


def _remove(db: Path, work: Path) -> None:
    """Delete an earlier demo, stopping its background run first."""
    from ._build import LIVE_PID
    from ._spare import kill_if_same

    pid_file = work / LIVE_PID
    if pid_file.exists():
        lines = pid_file.read_text().split("\n")
        if len(lines) >= 2 and lines[0].strip().isdigit():
            kill_if_same(int(lines[0]), lines[1].strip())
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(db.with_name(db.name + ".archive"), ignore_errors=True)


def _build_with_progress(db: Path, work: Path) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ._build import MARKER, Demo, build

    work.mkdir(parents=True, exist_ok=True)
    (work / MARKER).write_text(f"built by phasegate demo for {db}\n")
    live_seconds = float(os.environ.get("PHASEGATE_DEMO_LIVE_SECONDS", "180"))
    demo = Demo(db=db, work=work, live_seconds=live_seconds)
    demo.prefork()  # before the progress display starts its thread
    console = Console(stderr=True)
    console.print(f"Building a demo database at [bold]{db}[/] (working files in {work})")
    columns = (
        TextColumn("{task.fields[label]:<26}"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    )
    finishers: list[Any] = []
    with Progress(*columns, console=console, transient=False) as progress:

        def factory(label: str, total: int) -> Any:
            task = progress.add_task("waiting", total=total, label=label)
            started = [False]

            def step(text: str) -> None:
                if started[0]:
                    progress.advance(task)
                started[0] = True
                progress.update(task, description=text)

            finishers.append(lambda: progress.update(task, completed=total))
            return step

        # The runs blocked and failed on purpose; their log lines would only
        # scribble over the progress bars.
        quiet = logging.getLogger("phasegate")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
        try:
            seconds = build(demo, factory)
        finally:
            quiet.setLevel(level)
        for finish in finishers:
            finish()
    _summary(console, db, seconds)


def _summary(console: Any, db: Path, seconds: float) -> None:
    from rich.table import Table

    from phasegate import Engine

    with Engine(db, create=False) as eng:
        rows = eng.runs(limit=100)
        superseded = {c.run_id for c in eng.prune_candidates() if c.kind == "superseded_output"}
    table = Table(title=f"{len(rows)} runs, built in {seconds:.1f} s", title_justify="left", expand=True)
    table.add_column("run", no_wrap=True, min_width=26)
    table.add_column("status", no_wrap=True, min_width=11)
    table.add_column("why", no_wrap=True, overflow="ellipsis", ratio=1)
    for r in rows:
        if r.status.value == "running":
            why = f"live: phase {r.frontier_phase} ({r.frontier_index + 1}/{r.phase_count}), still checkpointing"
        else:
            why = r.reason or (
                "rewound and re-run: its old outputs are prune candidates" if r.run_id in superseded else ""
            )
        table.add_row(r.run_id, r.status.value, why)
    console.print(table)
    rel = os.path.relpath(db)
    console.print(
        "Next:\n"
        f"  phasegate console --db {rel}   triage: approve, degrade, confirm an effect\n"
        f"  phasegate worker --db {rel}    (another terminal) carries out decisions\n"
        f"  phasegate status --db {rel}    the same list as text; --json for tools",
        highlight=False,
    )


def open_console(db: Path, no_console: bool) -> int:
    if no_console:
        return ExitCode.OK
    hint = f"open the console later with: phasegate console --db {os.path.relpath(db)}"
    try:
        from phasegate.console import run_console
    except ImportError:
        print(f"the console is not installed in this environment; {hint}", file=sys.stderr)
        return ExitCode.OK
    if not sys.stdout.isatty():
        print(f"not a terminal, so no console; {hint}", file=sys.stderr)
        return ExitCode.OK
    return int(run_console(str(db)))
