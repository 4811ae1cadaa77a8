"""The `phasegate` command line.

Exit codes (the contract scripts rely on):
  0  completed / ok
  1  the run failed (a phase raised)
  2  bad usage or an unusable database (one line, nothing changed)
  3  blocked for an operator (reasons printed one a line), or `verify` found damage
  4  the run is held by another live process
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import _json
from ._states import Action
from .decisions import CONFIRM_NEEDS_RESULT, NO_RESULT
from .engine import Engine, default_db
from .errors import PhasegateError, UsageError
from .outcome import Outcome
from .sources import CodeDiff, printable
from .views import RunView, iso

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BLOCKED, EXIT_HELD = 0, 1, 2, 3, 4

#: Commands that live outside the engine (they need a screen), imported only
#: when invoked so `import engine` never loads a UI toolkit.
EXTERNAL: dict[str, str] = {
    "console": "phasegate.console.cli:add_console",
    "demo": "phasegate.sample_runs.demo:add_demo",
    "serve": "phasegate.console.web.cli:add_serve",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=None, help="database path or URL (default: $PHASEGATE_DB, else ./phasegate.db)")


def _engine(args: argparse.Namespace, *, create: bool = False) -> Engine:
    return Engine(args.db or default_db(), create=create)


def _print_outcome(o: Outcome) -> int:
    if o.status == "completed":
        print(f"{o.run_id}: completed")
        return EXIT_OK
    if o.status == "blocked":
        print(f"{o.run_id}: blocked")
        for r in o.blocked:
            print(f"  {r.kind}: {r.detail}")
        return EXIT_BLOCKED
    err = o.error or {}
    print(f"{o.run_id}: failed in phase {err.get('phase')}: {err.get('type')}: {err.get('message')}")
    return EXIT_FAILED


def _read_inputs(args: argparse.Namespace) -> Any:
    if args.input is not None and args.input_file is not None:
        raise UsageError("give --input or --input-file, not both")
    if args.input_file is not None:
        try:
            text = Path(args.input_file).read_text()
        except OSError as exc:
            raise UsageError(f"cannot read {args.input_file}: {exc.strerror}") from None
    elif args.input is not None:
        text = args.input
    else:
        # None, not {}: an existing run then continues with its stored inputs
        # instead of being refused for "other inputs".
        return None
    try:
        return _json.loads(text)
    except ValueError as exc:
        raise UsageError(f"inputs are not JSON: {exc}") from None


def cmd_run(args: argparse.Namespace) -> int:
    from .loader import load, normalise

    inputs = _read_inputs(args)
    target = normalise(args.target)
    wf = load(target)
    with _engine(args, create=True) as eng:
        return _print_outcome(eng.run(wf, args.run_id, inputs, target=target))


def cmd_resume(args: argparse.Namespace) -> int:
    from .loader import load

    with _engine(args) as eng:
        view = eng.status(args.run_id)
        if not view.target:
            raise UsageError(f"run {args.run_id!r} has no stored target; run it from code with Engine.run")
        wf = load(view.target)
        return _print_outcome(eng.run(wf, args.run_id, target=view.target))


def cmd_status(args: argparse.Namespace) -> int:
    with _engine(args) as eng:
        if args.run_id:
            view = eng.status(args.run_id)
            if args.json:
                # The diffs are always in the JSON (`code_diffs`); --diff is for the text.
                print(json.dumps(view.to_json(), indent=2, ensure_ascii=False))
            else:
                _print_view(view)
                if args.diff:
                    _print_diffs(view.code_diffs)
            return EXIT_OK
        if args.diff:
            raise UsageError("--diff needs a run id: phasegate status RUN --diff")
        if args.json:
            print("[")
            first = True
            for rid in eng.run_ids():
                text = json.dumps(eng.status(rid).to_json(), indent=2, ensure_ascii=False)
                print(("" if first else ",\n") + text, end="")
                first = False
            print("\n]")
            return EXIT_OK
        rows = eng.runs()
        if not rows:
            print("no runs")
        for r in rows:
            fr = f"{r.frontier_index}/{r.phase_count} {r.frontier_phase or '-'}"
            print(f"{r.run_id:<32} {r.workflow:<16} {r.status.value:<12} {fr:<20} {r.reason}")
        return EXIT_OK


def _print_view(v: RunView) -> None:
    print(f"run       {v.run_id}  ({v.workflow})")
    print(f"status    {v.status.value}" + (f"  - {v.attention}" if v.attention else ""))
    fr = v.frontier
    print(f"frontier  {fr.index}/{fr.of} {fr.phase} ({fr.steps_done} steps done)")
    print("phases    " + "  ".join(f"{p.name}:{p.state}" for p in v.phases))
    for b in v.blocked:
        print(f"blocked   {b['kind']}: {b['detail']}")
    if v.error:
        # The status line above is shortened; the error is shown whole.
        print(f"error     in {v.error.get('phase')}: {v.error.get('type')}: {v.error.get('message')}")
    for e in v.effects:
        if e.state != "done":
            print(f"effect    {e.state:<9} {e.key}")
            if e.reconcile is not None:
                said = f"{e.reconcile.get('answer')}: {e.reconcile.get('why', '')}"
                print(f"reconcile {printable(said)}")
    for c in v.prune_candidates:
        print(f"prunable  {c.what} ({c.bytes} B): {c.why_safe}")
    for d in v.decisions:
        print(f"decision  {d.at} {d.operator} {d.action} [{d.state}]: {d.reason}")
    for r in v.runbooks:
        where = f" in {r['phase']}" if r.get("phase") else ""
        print(f"runbook   {r['kind']}{where}: {printable(r['runbook'])}")


def _print_diffs(diffs: Sequence[CodeDiff]) -> None:
    if not diffs:
        print("no code change blocks this run")
    for d in diffs:
        print()
        print(f"code of {d.phase} changed; ran the old code: {', '.join(d.ran_old_code)}")
        if d.missing:
            print(f"  no stored source for {', '.join(d.missing)} (written before phasegate kept sources)")
        for line in d.lines:
            print(line)


def cmd_decide(args: argparse.Namespace) -> int:
    result: Any = NO_RESULT
    if args.result is not None:
        try:
            result = _json.loads(args.result)
        except ValueError as exc:
            raise UsageError(f"--result is not JSON: {exc}") from None
    with _engine(args) as eng:
        if args.dry_run:
            pv = eng.preview(args.run_id, args.action, phase=args.phase, effect=args.effect)
            if pv.action is Action.CONFIRM_EFFECT and result is NO_RESULT:
                raise UsageError(CONFIRM_NEEDS_RESULT)  # refused as the decision itself would be
            print(pv.summary)
            for label, items in (
                ("re-runs", pv.rerun),
                ("may call again", pv.effects_again),
                ("sets aside", pv.discarded),
                ("keeps", pv.kept),
            ):
                if items:
                    print(f"  {label}: {', '.join(items)}")
            return EXIT_OK
        d = eng.decide(
            args.run_id,
            args.action,
            reason=args.reason,
            operator=args.operator,
            phase=args.phase,
            effect=args.effect,
            result=result,
        )
    when = "applied" if d.state == "applied" else "recorded; it applies at the next run"
    print(f"{args.run_id}: {d.action} by {d.operator} {when} (decision {d.id})")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    with _engine(args) as eng:
        reports = eng.verify()
    bad = [r for r in reports if not r["ok"]]
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        for r in reports:
            if r["ok"]:
                print(f"ok        {r['run_id']} ({r['checkpoints']} checkpoints)")
            else:
                f = r["failure"]
                if f:
                    print(f"DAMAGED   {r['run_id']}: checkpoint {f.get('seq')}: {f.get('message')}")
                for d in r.get("effects", []):
                    print(f"DAMAGED   {r['run_id']}: {printable(d['detail'])}")
        print(f"{len(reports) - len(bad)} ok, {len(bad)} damaged")
    return EXIT_BLOCKED if bad else EXIT_OK


def cmd_prune(args: argparse.Namespace) -> int:
    with _engine(args) as eng:
        cands = eng.prune(apply=args.apply, run_id=args.run_id, operator=args.operator, reason=args.reason)
    if args.json:
        print(json.dumps([c.as_dict() for c in cands], indent=2))
        return EXIT_OK
    verb = "pruned" if args.apply else "candidate"
    for c in cands:
        print(f"{verb:<10} {c.run_id}: {c.what} ({c.bytes} B) - {c.why_safe}")
    total = sum(c.bytes for c in cands)
    print(
        f"{len(cands)} {'pruned' if args.apply else 'candidates'}, {total} bytes"
        + ("" if args.apply else "; --apply to prune")
    )
    return EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    from .worker import Worker

    # A worker's log is its output (what it picked up, how each run ended), so
    # it is shown without -v; -v adds the engine's own lines.
    if not args.verbose:
        logging.getLogger("phasegate.worker").setLevel(logging.INFO)
    with _engine(args) as eng:
        return Worker(eng, poll=args.poll, jobs=args.jobs).serve(once=args.once)


def cmd_watch(args: argparse.Namespace) -> int:
    import signal
    import threading

    from .hooks import Hooks
    from .watch import run_watch

    hooks = Hooks(
        command=args.exec_cmd,
        webhook=args.webhook,
        retries=args.retries,
        backoff=args.backoff,
        timeout=args.timeout,
    )
    if args.poll <= 0:
        raise UsageError("--poll must be > 0")
    # Its log is its output (what it announced, which hook failed), as a worker's.
    logging.getLogger("phasegate.watch").setLevel(logging.INFO)
    if not args.verbose:
        logging.getLogger("phasegate.watch.skip").setLevel(logging.WARNING)
    stop = threading.Event()
    # SIGTERM (a service manager) and SIGINT (Ctrl-C) both end the watch
    # cleanly: a send in progress finishes or is left for the next watch.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with _engine(args) as eng:
        return run_watch(eng, hooks, stop, poll=args.poll, use_events=not args.no_events, once=args.once)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="phasegate", description="Resumable long-running jobs, and their operators' tools.")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("-v", "--verbose", action="store_true", help="log what the engine does")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("run", help="start or continue a run of a workflow")
    s.add_argument("target", help="path/to/file.py:NAME or package.module:NAME")
    s.add_argument("--run-id", required=True)
    s.add_argument("--input", default=None, help="the run's inputs as JSON")
    s.add_argument("--input-file", default=None, help="a file holding the inputs as JSON")
    _db_arg(s)
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("resume", help="run again with the stored target and inputs")
    s.add_argument("run_id")
    _db_arg(s)
    s.set_defaults(fn=cmd_resume)

    s = sub.add_parser("status", help="show runs, or one run")
    s.add_argument("run_id", nargs="?")
    s.add_argument("--json", action="store_true")
    s.add_argument("--diff", action="store_true", help="show the code diff behind a drift (saved vs current)")
    _db_arg(s)
    s.set_defaults(fn=cmd_status)

    s = sub.add_parser("decide", help="record an operator's decision on a stopped run")
    s.add_argument("run_id")
    s.add_argument("action", help="approve, degrade, rewind, reset, confirm_effect or retry_effect")
    s.add_argument("--reason", required=True)
    s.add_argument("--phase", default=None, help="for rewind: the phase to re-run from")
    s.add_argument("--effect", default=None, help="for confirm_effect/retry_effect: the effect's key or name")
    s.add_argument(
        "--result",
        default=None,
        help="for confirm_effect (required): the effect's result as JSON; null when it returned nothing",
    )
    s.add_argument("--operator", default=None, help="who decides (default: $PHASEGATE_OPERATOR or the login name)")
    s.add_argument("--dry-run", action="store_true", help="say what the decision would do; record nothing")
    _db_arg(s)
    s.set_defaults(fn=cmd_decide)

    s = sub.add_parser("verify", help="verify every run's checkpoints")
    s.add_argument("--json", action="store_true")
    _db_arg(s)
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("prune", help="list what is safe to prune, or prune it")
    s.add_argument("--apply", action="store_true")
    s.add_argument("--run-id", default=None)
    s.add_argument("--json", action="store_true")
    s.add_argument("--reason", default="routine prune")
    s.add_argument("--operator", default=None)
    _db_arg(s)
    s.set_defaults(fn=cmd_prune)

    s = sub.add_parser("worker", help="resume runs that have a decision waiting or whose process died")
    s.add_argument("--once", action="store_true", help="handle what is waiting, then exit")
    s.add_argument("--poll", type=float, default=1.0, help="seconds between looks at the store")
    s.add_argument("--jobs", type=int, default=1, help="runs to resume at once (default 1)")
    _db_arg(s)
    s.set_defaults(fn=cmd_worker)

    s = sub.add_parser("watch", help="alert when a run stops (blocked or failed): a command and/or a webhook")
    s.add_argument(
        "--exec",
        dest="exec_cmd",
        default=None,
        metavar="CMD",
        help="run CMD (a shell command) per stop, the event as JSON on stdin",
    )
    s.add_argument("--webhook", default=None, metavar="URL", help="POST each stop's event as JSON to URL")
    s.add_argument("--retries", type=int, default=4, help="attempts after the first, per hook (default 4)")
    s.add_argument("--backoff", type=float, default=1.0, help="seconds before the first retry, doubled each time")
    s.add_argument("--timeout", type=float, default=10.0, help="seconds one attempt may take (default 10)")
    s.add_argument("--poll", type=float, default=2.0, help="seconds between looks when no change event arrives")
    s.add_argument("--no-events", action="store_true", help="poll only (no file events)")
    s.add_argument("--once", action="store_true", help="announce what is waiting, then exit")
    _db_arg(s)
    s.set_defaults(fn=cmd_watch)

    for _name, ref in EXTERNAL.items():
        mod, _, fn = ref.partition(":")
        try:
            adder: Callable[[Any], None] = getattr(importlib.import_module(mod), fn)
        except ImportError:
            continue  # that part of phasegate is not installed
        adder(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    logging.basicConfig(
        level=logging.INFO if ("-v" in argv or "--verbose" in argv) else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if not ("-v" in argv or "--verbose" in argv):
        logging.getLogger("phasegate").setLevel(logging.ERROR)
    try:
        args = build_parser().parse_args(argv)
        return int(args.fn(args))
    except PhasegateError as exc:
        if debug:
            raise
        print(f"phasegate: {exc.title}: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("phasegate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


__all__ = ["main", "build_parser", "iso"]
