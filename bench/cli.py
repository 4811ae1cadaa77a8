"""`python -m bench [--quick | --smoke] [--json FILE]`: every figure, in one run."""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from pathlib import Path

from . import (
    agents,
    batch,
    checkpoint,
    cli_start,
    console,
    effects,
    frameworks,
    observing,
    postgres,
    progress,
    regress,
    resume,
    seals,
    trust,
    verify,
    waits,
)
from ._util import RUNS, Figure, _disk_tmp, scratch
from .report import machine, markdown, table, write_json

log = logging.getLogger("bench")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="CI-sized: small stores, no peers, under two minutes")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="the harness checked, not the figures: --quick with every figure measured once, on tiny stores",
    )
    ap.add_argument("--json", type=Path, default=None, help="write the figures as a list of JSON rows")
    ap.add_argument("--markdown", type=Path, default=None, help="write the machine and the table as Markdown")
    ap.add_argument("--rounds", type=int, default=RUNS, help=f"runs behind each median (at least {RUNS})")
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated groups: checkpoint,effects,agents,frameworks,seals,trust,observing,waits,resume,verify,console,live,cli,postgres,wire,batch",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=regress.BASELINE,
        help="after a --quick run, print every ratio more than 20%% worse than this baseline (a report, never a failure)",
    )
    ap.add_argument(
        "--write-baseline", type=Path, default=None, help="write this run's ratios as a baseline (bench/baseline.json)"
    )
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING, format="%(asctime)s %(message)s")
    # The engine logs every blocked and failed run; the fixtures make thousands.
    logging.getLogger("phasegate").setLevel(logging.CRITICAL)
    # --smoke is what tests/bench runs: every row of --quick, each from one
    # round on a tiny store, so a figure it prints means nothing.
    a.quick = a.quick or a.smoke
    rounds = 1 if a.smoke else max(a.rounds, RUNS)
    only = {x for x in a.only.split(",") if x}
    meta = machine(Path(_disk_tmp()))
    meta["mode"] = "smoke" if a.smoke else "quick" if a.quick else "full"
    meta["rounds"] = rounds
    started = time.time()
    figs: list[Figure] = []

    def group(name: str, fn: Callable[[], list[Figure]]) -> None:
        if only and name not in only:
            return
        t0 = time.perf_counter()
        figs.extend(fn())
        log.warning("%s done in %.1fs", name, time.perf_counter() - t0)

    group("checkpoint", lambda: checkpoint.run(a.quick, rounds))
    group("effects", lambda: effects.run(a.quick, rounds))
    group("agents", lambda: agents.run(a.quick, rounds))
    # Not in --smoke: tens of seconds on a loaded CI machine, for two rows.
    group(
        "frameworks",
        lambda: frameworks.skipped("not measured in --smoke") if a.smoke else frameworks.run(a.quick, rounds),
    )
    group("seals", lambda: seals.run(a.quick, rounds))
    group("trust", lambda: trust.run(a.quick, 1 if a.smoke else rounds))
    group("observing", lambda: observing.run(a.quick, rounds))
    group("waits", lambda: waits.run(a.quick, rounds))
    group("progress", lambda: progress.run(a.quick, rounds))
    group("postgres", lambda: postgres.run(a.quick, rounds))
    with scratch("pgbench-stores-") as d:
        if a.smoke:
            resume_sizes, console_sizes = [10, 100], [10, 100]
        elif a.quick:
            resume_sizes, console_sizes = [10, 1_000], [100, 20_000]
        else:
            resume_sizes, console_sizes = [10, 1_000, 100_000], [100, 10_000, 100_000, 1_000_000]
        live_commits = 2 if a.smoke else None
        needed = sorted(
            set(
                (resume_sizes if not only or "resume" in only else [])
                + (console_sizes if not only or "console" in only else [])
            )
        )
        stores, info = resume.build_stores(d, needed)
        meta["fixtures"] = {str(k): v for k, v in info.items()}
        group("resume", lambda: resume.run(a.quick, rounds, {n: stores[n] for n in resume_sizes}))

        def _console() -> list[Figure]:
            figs = console.run_scale(a.quick, rounds, {n: stores[n] for n in console_sizes})
            big = console_sizes[-1]
            return figs + console.run_live(a.quick, stores[big], runs=big, commits=live_commits)

        group("console", _console)

        def _verify() -> list[Figure]:
            path = d / "verify.db"
            verify.build(path, 2 if a.smoke else 8 if a.quick else 40, 64 * 1024)
            return verify.run(a.quick, rounds, path)

        group("verify", _verify)

        def _cli() -> list[Figure]:
            path = d / "cli.db"
            verify.build(path, 20, 1024)  # twenty finished runs for status to list
            return cli_start.run(a.quick, rounds, path)

        group("cli", _cli)

        def _live() -> list[Figure]:
            path = d / "live.db"
            from . import fixture

            fixture.build(path, 60 if a.smoke else 600)
            return console.run_live(a.quick, path, commits=live_commits)

        group("live", _live)

        group("batch", lambda: batch.run(a.quick, rounds, d, runs=10 if a.smoke else None))

        def _wire() -> list[Figure]:
            from . import wire

            return wire.run(d, idle=2.0 if a.smoke else 10.0, presses=2 if a.smoke else 5)

        group("wire", _wire)
    meta["seconds"] = round(time.time() - started, 1)
    print(table(figs))
    print(
        f"\n{meta['mode']} run, {rounds} runs per median, {meta['seconds']} s; {meta['cpu']} x{meta['cpus']}, "
        f"SQLite {meta['sqlite']}, Python {meta['python']}, {meta['filesystem']}"
    )
    if a.json is not None:
        write_json(a.json, figs, meta)
    rows = [f.as_json() for f in figs]
    if a.write_baseline is not None:
        regress.write_baseline(a.write_baseline, rows)
    elif meta["mode"] == "quick":
        # The baseline holds --quick ratios: a full run's stores are other
        # sizes, and a smoke run's figures mean nothing.
        print("\n" + regress.report(rows, a.baseline))
    if a.markdown is not None:
        a.markdown.write_text(markdown(figs, meta))
    return 0
