"""`python -m tests.torture [--kills N] [--seed S] [--corruptions N] [--decision-damage N]`: the soak.

Crash torture until N kills have landed, then N corruption cases, then N
cases of decision and policy damage (decisions.py, with and without a seal
key; needs root and setpriv); prints every
seed (a run's `run-seed` replays that run alone with `--run-seed`) and a
summary, and exits 1 when any invariant broke. The seed is fixed by default
(tests/support/seeds.py); pass another to explore.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.support import seeds

from . import corrupt, crash, decisions, fanout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.torture", description=__doc__.splitlines()[0])
    p.add_argument("--kills", type=int, default=200, help="SIGKILLs to land in total (default 200)")
    p.add_argument("--corruptions", type=int, default=100, help="corruption cases (default 100)")
    p.add_argument(
        "--pauses",
        type=int,
        default=0,
        help="SIGSTOP/SIGCONT pauses at pause points with a 1 s lease, beside the kills (default 0)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"master seed (default: ${seeds.ENV}, else {seeds.DEFAULT}; printed either way)",
    )
    p.add_argument(
        "--fanout",
        type=int,
        default=0,
        help="SIGKILLs to land in fan-out runs (gather, ctx.map and threads; tests/torture/fanout.py) (default 0)",
    )
    p.add_argument(
        "--fanout-db", default=None, help="the fan-out runs' store (default: a SQLite file); a URL for PostgreSQL"
    )
    p.add_argument(
        "--decision-damage",
        type=int,
        default=0,
        help="cases of decision and policy damage, with and without a seal key (default 0; needs root and setpriv)",
    )
    p.add_argument(
        "--decision-backend",
        choices=("sqlite", "postgres", "both"),
        default="sqlite",
        help="where the decision damage lands: a SQLite file, a PostgreSQL schema ($PHASEGATE_TEST_PG), or both",
    )
    p.add_argument("--run-seed", type=int, default=None, help="replay one tortured run by its printed run-seed")
    p.add_argument("--only", default=None, help="one corruption kind, e.g. delete-effect")
    p.add_argument(
        "--exec",
        action="store_true",
        help="spawn `python -m phasegate` for every run and resume (slower, as a deploy runs it)",
    )
    p.add_argument(
        "--redeploys",
        type=float,
        default=0.0,
        help="the share of resumes a code change precedes (a comment in a random phase, a new code version; default 0)",
    )
    p.add_argument("--items", type=int, default=4, help="items per tortured run (more items, more kills per run)")
    p.add_argument("--dir", default=None, help="work folder (default: a new temporary one, removed when all is well)")
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else seeds.test_seed()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="phasegate-torture-"))
    work.mkdir(parents=True, exist_ok=True)  # a --dir that does not exist yet
    print(f"phasegate torture: seed {seed}; work folder {work}", flush=True)
    t0 = time.monotonic()
    failed = 0
    if args.kills > 0 or args.pauses > 0 or args.run_seed is not None:
        reps = crash.torture(
            args.kills if (args.kills > 0 or args.pauses > 0) else 1,
            seed,
            work / "crash",
            mode="exec" if args.exec else "fork",
            items=args.items,
            run_seed=args.run_seed,
            pauses=args.pauses,
            redeploy_share=args.redeploys,
            log=lambda s: print(s, flush=True),
        )
        kills = sum(r.kills for r in reps)
        bad = [r for r in reps if not r.ok]
        failed += len(bad)
        dec: Counter[str] = Counter()
        paused: Counter[str] = Counter()
        for r in reps:
            dec.update(r.decisions)
            paused.update(r.pauses)
        print(
            f"torture: {len(reps)} runs, {kills} kills ({sum(r.point_kills for r in reps)} at kill points), "
            f"{sum(paused.values())} pauses {dict(paused) or ''}, "
            f"{sum(r.attempts for r in reps)} attempts, decisions {dict(dec) or '-'}; "
            f"{len(reps) - len(bad)} completed with every invariant, {len(bad)} failed",
            flush=True,
        )
    if args.fanout > 0 and args.run_seed is None:
        (work / "fanout").mkdir(parents=True, exist_ok=True)
        freps = fanout.torture(
            args.fanout, seed, work / "fanout", db=args.fanout_db, log=lambda s: print(s, flush=True)
        )
        fbad = [r for r in freps if not r.ok]
        failed += len(fbad)
        by_mode = Counter(r.mode for r in freps)
        print(
            f"fan-out torture: {len(freps)} runs {dict(by_mode)}, {sum(r.kills for r in freps)} kills, "
            f"{sum(r.attempts for r in freps)} attempts, {sum(r.answered for r in freps)} in-doubt effects "
            f"answered; {len(freps) - len(fbad)} completed with every invariant, {len(fbad)} failed",
            flush=True,
        )
    if args.corruptions > 0 and args.run_seed is None:
        creps = corrupt.fuzz(
            args.corruptions, seed, work / "corrupt", only=args.only, log=lambda s: print(s, flush=True)
        )
        failed += sum(1 for r in creps if r.violations)
    if args.decision_damage > 0 and args.run_seed is None:
        os.chmod(work, 0o777)  # the second operator (nobody) reaches the store through it
        backends = decisions.BACKENDS if args.decision_backend == "both" else (args.decision_backend,)
        dreps = [
            c
            for b in backends
            for c in decisions.soak(
                args.decision_damage, seed, work / f"decisions-{b}", backend=b, log=lambda s: print(s, flush=True)
            )
        ]
        print(decisions.summary(dreps), flush=True)
        failed += sum(1 for r in dreps if not r.ok)
    print(
        f"phasegate torture: seed {seed}: {'FAILED' if failed else 'all invariants held'} "
        f"({time.monotonic() - t0:.0f} s)",
        flush=True,
    )
    if not failed and not args.dir:
        crash.cleanup(work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
