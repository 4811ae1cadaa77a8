"""The commands that keep a store sound and small: `verify`, `reseal`, `prune`."""

from __future__ import annotations

import argparse
import json

from ..errors import ExitCode, UsageError
from ..history.keys import KEY_FILE_ENV
from ..safetext import safe
from .args import open_engine


def cmd_verify(args: argparse.Namespace) -> int:
    from ..upkeep.reports import PolicyReport, UnknownSchema, UnmarkedStore, VerifyReport

    with open_engine(args) as eng:
        reports = eng.verify(deep=args.deep)
        seals = eng.seal_kind()
    bad = [r for r in reports if not r.ok]
    lost = [r for r in reports if isinstance(r, VerifyReport) and r.ok and r.lost]
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))  # ASCII: nothing in it acts on a terminal
    else:
        print(f"seals     {safe(seals)}")
        for r in reports:
            if isinstance(r, UnknownSchema):  # the store's, not a run's: no run id, no checkpoint
                print(f"DAMAGED   : checkpoint None: {safe(r.message)}")
            elif isinstance(r, UnmarkedStore):
                print(f"DAMAGED   store: {safe(r.message)}")
            elif isinstance(r, PolicyReport):
                for pd in r.damage:
                    print(f"DAMAGED   policy: {safe(pd.detail)}")
            elif not r.ok:
                if r.failure:
                    print(f"DAMAGED   {safe(r.run_id)}: checkpoint {r.failure.seq}: {safe(r.failure.message)}")
                for d in r.effects:
                    print(f"DAMAGED   {safe(r.run_id)}: {safe(d.detail)}")
                for dd in r.decisions:
                    print(f"DAMAGED   {safe(r.run_id)}: {safe(dd.detail)}")
            elif r.lost:
                for item in r.lost:
                    print(f"LOST      {safe(r.run_id)}: checkpoint {item.seq}: {safe(item.message)}")
            else:
                print(f"ok        {safe(r.run_id)} ({r.checkpoints} checkpoints)")
        print(
            f"{len(reports) - len(bad) - len(lost)} ok, {len(bad)} damaged"
            + (f", {len(lost)} with lost outputs" if lost else "")
        )
    return ExitCode.BLOCKED if bad or lost else ExitCode.OK


def cmd_reseal(args: argparse.Namespace) -> int:
    if (args.key_file is None) == (not args.unkeyed):
        raise UsageError(
            "phasegate reseal: give --key-file FILE (the new key) or --unkeyed (plain hashes), one of them"
        )
    with open_engine(args) as eng:
        done = eng.reseal(args.key_file)
    was = f"key {done.old}" if done.old else "plain hashes"
    now = f"key {done.new}" if done.new else "plain hashes (no key)"
    print(
        f"sealed {done.checkpoints} checkpoint(s), {done.effects} effect record(s), {done.decisions} decision(s)"
        f" and {done.policy} policy change(s) under {now} (was {was})"
    )
    if done.new:
        print(f"from now on run every phasegate process with {KEY_FILE_ENV}={safe(args.key_file)}")
    return ExitCode.OK


def cmd_prune(args: argparse.Namespace) -> int:
    with open_engine(args) as eng:
        cands = eng.prune(apply=args.apply, run_id=args.run_id, operator=args.operator, reason=args.reason)
    if args.json:
        print(json.dumps([c.as_dict() for c in cands], indent=2))
        return ExitCode.OK
    verb = "pruned" if args.apply else "candidate"
    for c in cands:
        print(f"{verb:<10} {safe(c.run_id)}: {safe(c.what)} ({c.bytes} B) - {safe(c.why_safe)}")
    total = sum(c.bytes for c in cands)
    print(
        f"{len(cands)} {'pruned' if args.apply else 'candidates'}, {total} bytes"
        + ("" if args.apply else "; --apply to prune")
    )
    return ExitCode.OK
