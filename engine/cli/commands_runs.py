"""The commands that start and show runs: `run`, `resume`, `status`."""

from __future__ import annotations

import argparse
import json
import time

from .._dbpath import default_db
from ..errors import ExitCode, UsageError
from ..safetext import safe_json
from . import observing
from .args import open_engine, read_inputs
from .render import print_causes, print_diffs, print_outcome, print_patch, print_runs, print_view
from .signals import stop_at_next_step


def cmd_run(args: argparse.Namespace) -> int:
    from ..authoring.loader import load, normalise
    from ..ids import validate_run_id

    validate_run_id(args.run_id)  # before the store is created: bad usage changes nothing
    inputs = read_inputs(args)
    target = normalise(args.target)
    wf = load(target)
    undo = observing.start(args)  # PHASEGATE_OTEL=1: the run's attempt traced
    try:
        with open_engine(args, create=True) as eng, stop_at_next_step(eng):
            return print_outcome(eng.run(wf, args.run_id, inputs, target=target))
    finally:
        undo()


def cmd_resume(args: argparse.Namespace) -> int:
    from ..authoring.loader import load

    with open_engine(args) as eng:
        view = eng.status(args.run_id)
        if not view.target:
            raise UsageError(f"run {args.run_id!r} has no stored target; run it from code with Engine.run")
        wf = load(view.target)
        undo = observing.start(args)
        try:
            with stop_at_next_step(eng):
                return print_outcome(eng.run(wf, args.run_id, target=view.target, force=args.force))
        finally:
            undo()


def cmd_status(args: argparse.Namespace) -> int:
    if args.patch is not None:
        if args.run_id or args.diff or args.by_cause:
            raise UsageError("--patch lists the runs of one patch; it takes no run id, --diff or --by-cause")
        with open_engine(args) as eng:
            return print_patch(eng.patch_status(args.patch), as_json=args.json)
    if args.by_cause:
        if args.run_id or args.diff:
            raise UsageError("--by-cause lists every cause; it takes no run id and no --diff")
        with open_engine(args) as eng:
            return print_causes(eng.triage.causes(), as_json=args.json)
    if not (args.run_id or args.json or args.diff):
        from ..views.quickstatus import runs

        now = time.time()
        quick = runs(args.db or default_db(), now)
        if quick is not None:
            return print_runs(quick.runs, quick.claims, now)
    with open_engine(args) as eng:
        if args.run_id:
            view = eng.status(args.run_id)
            if args.json:
                # The diffs are always in the JSON (`code_diffs`); --diff is for the text.
                print(safe_json(json.dumps(view.to_json(), indent=2, ensure_ascii=False)))
            else:
                print_view(view)
                if args.diff:
                    print_diffs(view.code_diffs)
            return ExitCode.OK
        if args.diff:
            raise UsageError("--diff needs a run id: phasegate status RUN --diff")
        if args.json:
            print("[")
            first = True
            for rid in eng.run_ids():
                text = safe_json(json.dumps(eng.status(rid).to_json(), indent=2, ensure_ascii=False))
                print(("" if first else ",\n") + text, end="")
                first = False
            print("\n]")
            return ExitCode.OK
        return print_runs(eng.runs(), eng.oversight.claims(None), eng.clock())
