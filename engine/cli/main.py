"""The `phasegate` command line.

Exit codes (the contract scripts rely on):
  0  completed / ok
  1  the run failed (a phase raised)
  2  bad usage or an unusable database (one line, nothing changed)
  3  blocked for an operator (reasons printed one a line), or `verify` found damage
  4  the run is held by another live process, or its holder is stalled (alive
     on this host past its lease: `resume --force` / `decide --force`), or this
     process lost its lease, or someone else claimed the run (`--force`)
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import os
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .. import _json
from .._dbpath import default_db
from ..authoring.sources import CodeDiff, printable
from ..errors import PhasegateError, UsageError
from ..outcome import Outcome
from ..safetext import safe, safe_json, storable
from ..states import Action
from ..timefmt import iso
from ..views.models import ClaimView, RunSummary, RunView

if TYPE_CHECKING:
    from ..decide.causes import Cause
    from ..decide.fit import Preview
    from ..engine import Engine

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


def seconds(text: str) -> float:
    """A duration argument: a finite number > 0 (inf overflows a sleep, and
    0, a negative or nan would make a loop spin)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, not {text!r}")
    return value


def count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


#: Arguments that name files or commands: bytes the file system takes as
#: they are. Every other text argument is stored or compared, so it must be
#: valid Unicode (argv bytes that are not UTF-8 arrive as lone surrogates).
_BYTES_ARGS = frozenset({"target", "input_file", "exec_cmd", "fn"})


def _check_text_args(args: argparse.Namespace) -> None:
    for key, value in vars(args).items():
        if key in _BYTES_ARGS or not isinstance(value, str):
            continue
        if not storable(value):
            name = key if key == "run_id" else "--" + key.replace("_", "-")
            raise UsageError(f"{name} is not valid UTF-8 text (or holds a NUL)")


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=None, help="database path or URL (default: $PHASEGATE_DB, else ./phasegate.db)")


def _engine(args: argparse.Namespace, *, create: bool = False) -> Engine:
    # Imported here, not at the top: the engine loads SQLAlchemy, which most
    # of a command's start would otherwise be (quickstatus.py does without).
    from ..engine import Engine

    return Engine(args.db or default_db(), create=create)


def _print_outcome(o: Outcome) -> int:
    # Every value below may come from the store: shown through `safe`.
    rid = safe(o.run_id)
    if o.status == "completed":
        print(f"{rid}: completed" + (f" (degraded): {safe(o.degraded)}" if o.degraded else ""))
        return EXIT_OK
    if o.status == "blocked":
        print(f"{rid}: blocked")
        for r in o.blocked:
            print(f"  {r.kind}: {safe(r.detail)}")
        return EXIT_BLOCKED
    err = o.error or {}
    print(f"{rid}: failed in phase {safe(err.get('phase'))}: {safe(err.get('type'))}: {safe(err.get('message'))}")
    return EXIT_FAILED


def _parse_json(text: str, what: str) -> Any:
    """JSON given on the command line, checked to be storable as it is."""
    try:
        value = _json.loads(text)
        stored = _json.dumps(value)
    except RecursionError:
        raise UsageError(f"{what} nested too deeply") from None
    except ValueError as exc:
        raise UsageError(f"{what} are not JSON: {exc}" if what == "inputs" else f"{what} is not JSON: {exc}") from None
    if not storable(stored):
        raise UsageError(f"{what}: a lone surrogate (\\ud800-\\udfff) is not text that can be stored")
    return value


def _read_inputs(args: argparse.Namespace) -> Any:
    if args.input is not None and args.input_file is not None:
        raise UsageError("give --input or --input-file, not both")
    if args.input_file is not None:
        try:
            text = Path(args.input_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {args.input_file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UsageError(f"{args.input_file} is not UTF-8 text") from None
    elif args.input is not None:
        text = args.input
    else:
        # None, not {}: an existing run then continues with its stored inputs
        # instead of being refused for "other inputs".
        return None
    return _parse_json(text, "inputs")


def cmd_run(args: argparse.Namespace) -> int:
    from ..authoring.loader import load, normalise
    from ..ids import validate_run_id

    validate_run_id(args.run_id)  # before the store is created: bad usage changes nothing
    inputs = _read_inputs(args)
    target = normalise(args.target)
    wf = load(target)
    with _engine(args, create=True) as eng:
        return _print_outcome(eng.run(wf, args.run_id, inputs, target=target))


def cmd_resume(args: argparse.Namespace) -> int:
    from ..authoring.loader import load

    with _engine(args) as eng:
        view = eng.status(args.run_id)
        if not view.target:
            raise UsageError(f"run {args.run_id!r} has no stored target; run it from code with Engine.run")
        wf = load(view.target)
        return _print_outcome(eng.run(wf, args.run_id, target=view.target, force=args.force))


def cmd_status(args: argparse.Namespace) -> int:
    if args.by_cause:
        if args.run_id or args.diff:
            raise UsageError("--by-cause lists every cause; it takes no run id and no --diff")
        with _engine(args) as eng:
            return _print_causes(eng.triage.causes(), as_json=args.json)
    if not (args.run_id or args.json or args.diff):
        from ..views.quickstatus import runs

        now = time.time()
        quick = runs(args.db or default_db(), now)
        if quick is not None:
            return _print_runs(quick.runs, quick.claims, now)
    with _engine(args) as eng:
        if args.run_id:
            view = eng.status(args.run_id)
            if args.json:
                # The diffs are always in the JSON (`code_diffs`); --diff is for the text.
                print(safe_json(json.dumps(view.to_json(), indent=2, ensure_ascii=False)))
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
                text = safe_json(json.dumps(eng.status(rid).to_json(), indent=2, ensure_ascii=False))
                print(("" if first else ",\n") + text, end="")
                first = False
            print("\n]")
            return EXIT_OK
        return _print_runs(eng.runs(), eng.oversight.claims(None), eng.clock())


#: How much of a claimer's name the list shows (escaped first): a claim note
#: stays short whatever name was stored.
_CLAIMER_WIDTH = 24


def _print_runs(rows: Sequence[RunSummary], held: Mapping[str, ClaimView], now: float) -> int:
    if not rows:
        print("no runs")
    for r in rows:
        fr = f"{r.frontier_index}/{r.phase_count} {r.frontier_phase or '-'}"
        fr = safe(fr)
        reason = safe(r.reason)
        claim = held.get(r.run_id)
        if claim is not None:
            # First in the reason, as the console's runs list says it.
            said = claim.said(now, name_width=_CLAIMER_WIDTH)
            reason = f"{said}; {reason}" if reason else said
        print(f"{safe(r.run_id):<32} {safe(r.workflow):<16} {r.status_label:<12} {fr:<20} {reason}")
    return EXIT_OK


#: Runs named per cause in the text listing; `--json` names them all.
_RUNS_SHOWN = 5


def _print_causes(causes: Sequence[Cause], *, as_json: bool) -> int:
    if as_json:
        print(safe_json(json.dumps([c.to_json() for c in causes], indent=2, ensure_ascii=False)))
        return EXIT_OK
    if not causes:
        print("no runs need attention")
        return EXIT_OK
    for c in causes:
        n = len(c.runs)
        print(f"{c.cause}  {c.kind.value:<15} {n:>5} run{'s' if n != 1 else ' '}  {safe(', '.join(c.workflows))[:30]}")
        for line in textwrap.wrap(safe(c.summary), width=76) or [""]:
            print(f"    {line}")
        shown = ", ".join(safe(r) for r in c.runs[:_RUNS_SHOWN]) + (
            f", and {n - _RUNS_SHOWN} more" if n > _RUNS_SHOWN else ""
        )
        for i, line in enumerate(textwrap.wrap(shown, width=70)):
            print(f"    {'runs: ' if i == 0 else '      '}{line}")
        acts = ", ".join(a.value for a in c.allowed_actions) or "none (nothing fits every run)"
        print(f"    fits: {acts}")
    total = sum(len(c.runs) for c in causes)
    print(f"{len(causes)} cause{'s' if len(causes) != 1 else ''}, {total} run{'s' if total != 1 else ''}")
    print("decide one: phasegate decide --cause CAUSE ACTION --reason TEXT [--dry-run]")
    return EXIT_OK


def _print_view(v: RunView) -> None:
    # Everything here was read from the store: each value goes through `safe`.
    print(f"run       {safe(v.run_id)}  ({safe(v.workflow)})")
    print(f"status    {v.status.value}" + (f"  - {safe(v.attention)}" if v.attention else ""))
    fr = v.frontier
    print(f"frontier  {fr.index}/{fr.of} {safe(fr.phase)} ({fr.steps_done} steps done)")
    print("phases    " + "  ".join(f"{safe(p.name)}:{p.state}" for p in v.phases))
    for b in v.blocked:
        print(f"blocked   {safe(b['kind'])}: {safe(b['detail'])}")
    if v.error:
        # The status line above is shortened; the error is shown whole.
        e = v.error
        print(f"error     in {safe(e.get('phase'))}: {safe(e.get('type'))}: {safe(e.get('message'))}")
    for n in v.notes:
        print(f"note      {safe(n)}")
    for ef in v.effects:
        if ef.state != "done":
            print(f"effect    {ef.state:<9} {safe(ef.key)}")
            if ef.reconcile is not None:
                print(f"reconcile {safe(ef.reconcile.get('answer'))}: {safe(ef.reconcile.get('why', ''))}")
    for c in v.prune_candidates:
        print(f"prunable  {safe(c.what)} ({c.bytes} B): {safe(c.why_safe)}")
    held = v.claim
    if held is not None:
        print(
            f"claimed   by {safe(held.operator)} (account {safe(held.account)}) since {held.claimed_at},"
            f" until {held.expires_at}"
        )
    for d in v.decisions:
        batch = f" (batch {safe(d.batch_id)})" if d.batch_id else ""
        print(f"decision  {d.at} {safe(d.operator)} {d.action} [{d.state}]{batch}: {safe(d.reason)}")
        if d.proposed:
            print(
                f"          waiting for a second operator (another account) until {d.expires_at}:"
                f" phasegate decide {safe(v.run_id)} second --decision {d.id} --reason ..."
            )
    for ev in v.claims:
        print(f"claim     {ev.at} {ev.kind} by {safe(ev.operator)} (account {safe(ev.account)})")
    for r in v.runbooks:
        where = f" in {safe(r['phase'])}" if r.get("phase") else ""
        print(f"runbook   {safe(r['kind'])}{where}: {printable(r['runbook'])}")


def _print_diffs(diffs: Sequence[CodeDiff]) -> None:
    if not diffs:
        print("no code change blocks this run")
    for d in diffs:
        print()
        print(f"code of {safe(d.phase)} changed; ran the old code: {safe(', '.join(d.ran_old_code))}")
        if d.missing:
            print(f"  no stored source for {safe(', '.join(d.missing))} (written before phasegate kept sources)")
        for line in d.lines:
            print(line)


def _print_preview(pv: Preview, head: str = "", indent: str = "  ") -> None:
    print(head + safe(pv.summary))
    for label, items in (
        ("accepts", pv.accepts),
        ("re-runs", pv.rerun),
        ("may call again", pv.effects_again),
        ("sets aside", pv.discarded),
        ("keeps", pv.kept),
    ):
        if items:
            print(f"{indent}{label}: {safe(', '.join(items))}")
    if pv.env_hash:
        print(f"{indent}env hash: {pv.env_hash} (decide ... --expect-env {pv.env_hash} refuses if the world moved)")


def _overrides(held: ClaimView, now: float, indent: str) -> str:
    """A dry run's word on someone else's claim that --force overrides."""
    return f"{indent}--force overrides: {held.said(now, name_width=_CLAIMER_WIDTH)}"


def _decide_args(args: argparse.Namespace) -> None:
    """`decide RUN ACTION` or `decide --cause CAUSE ACTION`: with --cause the
    one positional is the action."""
    if args.cause is not None:
        if args.action is not None:
            raise UsageError("give a run id or --cause, not both: phasegate decide --cause CAUSE ACTION")
        if args.run_id is None:
            raise UsageError("phasegate decide --cause CAUSE ACTION: name the action")
        args.run_id, args.action = None, args.run_id
    elif args.run_id is None or args.action is None:
        raise UsageError("phasegate decide: the following arguments are required: run_id, action (or --cause CAUSE)")
    elif args.skip_unfit:
        raise UsageError("--skip-unfit is for a group: phasegate decide --cause CAUSE ACTION --skip-unfit")


def cmd_decide(args: argparse.Namespace) -> int:
    from ..decide.fit import CONFIRM_NEEDS_RESULT, NO_RESULT
    from ..oversight.identity import whoami

    _decide_args(args)
    if args.action == "second":
        if args.cause is not None:
            raise UsageError("second is for one proposal: phasegate decide RUN second --decision N")
        return _second(args)
    if args.decision is not None:
        raise UsageError("--decision is for second: the proposal to second (phasegate decide RUN second --decision N)")
    result: Any = NO_RESULT
    if args.result is not None:
        result = _parse_json(args.result, "--result")
    if args.cause is not None:
        return _decide_cause(args, result)
    with _engine(args) as eng:
        if args.dry_run:
            pv = eng.preview(
                args.run_id,
                args.action,
                phase=args.phase,
                effect=args.effect,
                result=result,
                reason=args.reason,
                force=args.force,
                expect_env=args.expect_env,
            )
            if pv.action is Action.CONFIRM_EFFECT and result is NO_RESULT:
                raise UsageError(CONFIRM_NEEDS_RESULT)  # refused as the decision itself would be
            # Then the claim rule, as the decision applies it: someone else's
            # claim refuses it (exit 4) unless --force overrides it.
            held = eng.oversight.overridden_claim(
                eng.status(args.run_id), pv.action, whoami(args.operator), override_claim=args.force
            )
            _print_preview(pv)
            if held is not None:
                print(_overrides(held, eng.clock(), "  "))
            return EXIT_OK
        d = eng.decide(
            args.run_id,
            args.action,
            reason=args.reason,
            operator=args.operator,
            phase=args.phase,
            effect=args.effect,
            result=result,
            force=args.force,
            expect_env=args.expect_env,
            override_claim=args.force,
        )
    if d.state == "proposed":
        print(
            f"{safe(args.run_id)}: {d.action} by {safe(d.operator)} proposed (decision {d.id}); the store's policy"
            " needs a second operator (another account):"
            f" phasegate decide {safe(args.run_id)} second --decision {d.id} --reason ..."
        )
        return EXIT_OK
    when = "applied" if d.state == "applied" else "recorded; it applies at the next run"
    print(f"{safe(args.run_id)}: {d.action} by {safe(d.operator)} {when} (decision {d.id})")
    return EXIT_OK


def _decide_cause(args: argparse.Namespace, result: Any) -> int:
    from ..decide.batch import GroupRefused

    opts: dict[str, Any] = {
        "cause": args.cause,
        "phase": args.phase,
        "effect": args.effect,
        "result": result,
        "force": args.force,
        "expect_env": args.expect_env,
    }
    with _engine(args) as eng:
        if args.dry_run:
            lines = eng.triage.preview_many(
                [], args.action, reason=args.reason, operator=args.operator, override_claim=args.force, **opts
            )
            unfit = [ln for ln in lines if ln.preview is None]
            print(f"{args.action} for the {len(lines)} run(s) of cause {args.cause} would do this (nothing recorded):")
            now = eng.clock()
            for ln in lines:
                if ln.preview is not None:
                    _print_preview(ln.preview, head=f"{safe(ln.run_id)}: ", indent="    ")
                    if ln.overrides is not None:
                        print(_overrides(ln.overrides, now, "    "))
                else:
                    print(f"{safe(ln.run_id)}: does not fit: {safe(ln.unfit)}")
            if unfit and not args.skip_unfit:
                print(
                    f"phasegate: decision refused: {len(unfit)} of {len(lines)} run(s) do not fit; nothing would be"
                    " recorded (--skip-unfit records the rest)",
                    file=sys.stderr,
                )
                return EXIT_USAGE
            return EXIT_OK
        try:
            res = eng.triage.decide_many(
                [],
                args.action,
                reason=args.reason,
                operator=args.operator,
                skip_unfit=args.skip_unfit,
                override_claim=args.force,
                **opts,
            )
        except GroupRefused as exc:
            for u in exc.unfit:
                print(f"{safe(u.run_id)}: does not fit: {safe(u.why)}", file=sys.stderr)
            raise
    first = res.decided[0]
    when = {
        "applied": "applied",
        "proposed": "proposed: the store's policy needs a second operator (another account) for each run,"
        " phasegate decide RUN second --decision N",
    }.get(first.state, "recorded; it applies at each run's next start")
    print(
        f"{first.action} by {safe(first.operator)} {when}: {len(res.decided)} run(s) of cause {args.cause},"
        f" batch {res.batch_id}"
    )
    for d in res.decided:
        print(f"  {safe(d.run_id)}: decision {d.id}")
    if res.skipped:
        print(f"skipped {len(res.skipped)} run(s) that do not fit:")
        for u in res.skipped:
            print(f"  {safe(u.run_id)}: {safe(u.why)}")
    return EXIT_OK


def _second(args: argparse.Namespace) -> int:
    if args.decision is None:
        raise UsageError("second needs --decision N: the proposal to second (phasegate status RUN lists it)")
    extra = [f"--{k.replace('_', '-')}" for k in ("phase", "effect", "result", "expect_env") if getattr(args, k)]
    if extra or args.dry_run:
        raise UsageError(f"{(extra or ['--dry-run'])[0]} is not for second: it seconds the proposal as proposed")
    with _engine(args) as eng:
        d = eng.oversight.second(
            args.run_id, args.decision, reason=args.reason, operator=args.operator, override_claim=args.force
        )
    when = "applied" if d.state == "applied" else "takes effect; it applies at the next run"
    print(f"{safe(args.run_id)}: {d.action} by {safe(d.operator)} seconded, {when} (decision {d.id})")
    return EXIT_OK


def cmd_claim(args: argparse.Namespace) -> int:
    with _engine(args) as eng:
        held = eng.oversight.claim(args.run_id, operator=args.operator, release=args.release, force=args.force)
    if held is None:
        print(f"{safe(args.run_id)}: released")
    else:
        print(
            f"{safe(args.run_id)}: claimed by {safe(held.operator)} (account {safe(held.account)})"
            f" until {held.expires_at}"
        )
    return EXIT_OK


def cmd_policy(args: argparse.Namespace) -> int:
    change = any(v is not None for v in (args.require_second, args.proposal_seconds, args.web_account))
    if change and args.show:
        raise UsageError("give --show or a change (--require-second, --proposal-seconds, --web-account), not both")
    if not change and args.reason is not None:
        raise UsageError("--reason is for a change of the policy (--require-second, --proposal-seconds, --web-account)")
    with _engine(args) as eng:  # a policy for a store not made yet is a mistyped --db
        if change:
            if args.reason is None:
                raise UsageError("a policy change needs --reason TEXT (it is kept in the audit)")
            eng.oversight.set_policy(
                reason=args.reason,
                operator=args.operator,
                require_second=args.require_second,
                proposal_seconds=args.proposal_seconds,
                web_account=args.web_account,
            )
        history = eng.oversight.policy_history()
        now = eng.oversight.policy()
    if args.json:
        print(safe_json(json.dumps({**now.to_json(), "history": [p.to_json() for p in history]}, indent=2)))
        return EXIT_OK
    listed = ", ".join(str(a) for a in now.require_second) or "nothing (no decision needs a second operator)"
    print(f"require second  {listed}")
    print(f"proposals lapse after {now.proposal_seconds:g} s")
    print(f"web account     {safe(now.web_account or '-')}")
    for p in history:
        acts = ",".join(str(a) for a in p.require_second) or "-"
        print(
            f"changed   {iso(p.at)} {safe(p.operator)} (account {safe(p.account)}): require {acts},"
            f" lapse {p.proposal_seconds:g} s, web account {safe(p.web_account or '-')}: {safe(p.reason)}"
        )
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    with _engine(args) as eng:
        reports = eng.verify(deep=args.deep)
    bad = [r for r in reports if not r["ok"]]
    lost = [r for r in reports if r["ok"] and r.get("lost")]
    if args.json:
        print(json.dumps(reports, indent=2))  # ASCII: nothing in it acts on a terminal
    else:
        for r in reports:
            if not r["ok"]:
                f = r["failure"]
                if f:
                    print(f"DAMAGED   {safe(r['run_id'])}: checkpoint {f.get('seq')}: {safe(f.get('message'))}")
                for d in r.get("effects", []):
                    print(f"DAMAGED   {safe(r['run_id'])}: {safe(d['detail'])}")
            elif r.get("lost"):
                for item in r["lost"]:
                    print(f"LOST      {safe(r['run_id'])}: checkpoint {item['seq']}: {safe(item['message'])}")
            else:
                print(f"ok        {safe(r['run_id'])} ({r['checkpoints']} checkpoints)")
        print(
            f"{len(reports) - len(bad) - len(lost)} ok, {len(bad)} damaged"
            + (f", {len(lost)} with lost outputs" if lost else "")
        )
    return EXIT_BLOCKED if bad or lost else EXIT_OK


def cmd_prune(args: argparse.Namespace) -> int:
    with _engine(args) as eng:
        cands = eng.prune(apply=args.apply, run_id=args.run_id, operator=args.operator, reason=args.reason)
    if args.json:
        print(json.dumps([c.as_dict() for c in cands], indent=2))
        return EXIT_OK
    verb = "pruned" if args.apply else "candidate"
    for c in cands:
        print(f"{verb:<10} {safe(c.run_id)}: {safe(c.what)} ({c.bytes} B) - {safe(c.why_safe)}")
    total = sum(c.bytes for c in cands)
    print(
        f"{len(cands)} {'pruned' if args.apply else 'candidates'}, {total} bytes"
        + ("" if args.apply else "; --apply to prune")
    )
    return EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    from .daemon import Worker

    # A worker's log is its output (what it picked up, how each run ended), so
    # it is shown without -v; -v adds the engine's own lines.
    if not args.verbose:
        logging.getLogger("phasegate.worker").setLevel(logging.INFO)
    with _engine(args) as eng:
        return Worker(eng, poll=args.poll, jobs=args.jobs, heartbeat=args.heartbeat).serve(once=args.once)


def cmd_workers(args: argparse.Namespace) -> int:
    from ..views.workers import ALIVE_BEATS

    with _engine(args) as eng:
        found = eng.workers()
    if args.json:
        print(safe_json(json.dumps([w.to_json() for w in found], indent=2, ensure_ascii=False)))
        return EXIT_OK
    if not found:
        print("no worker has recorded a heartbeat in this store: start one with `phasegate worker`")
        return EXIT_OK
    for w in found:
        state = "alive" if w.alive else ("stopped" if w.state == "stopped" else "not alive")
        busy = f"  resuming {safe(', '.join(w.resuming))}" if w.resuming else ""
        print(
            f"{state:<10} {safe(w.host)}:{w.pid}  started {iso(w.started_at)}  last seen {w.seen_ago:.0f}s ago"
            f"  jobs {w.jobs}  resumed {w.resumed}{busy}"
        )
    alive = sum(w.alive for w in found)
    print(
        f"{alive} alive of {len(found)}; alive = a heartbeat within {ALIVE_BEATS} of its intervals, its process not dead"
    )
    return EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    import signal
    import threading

    from ..alerts.hooks import Hooks
    from ..alerts.watch import run_watch

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


_FORCE_HELP = (
    "act even though the run's holder is stalled (alive on this host, past its lease); "
    "it may wake inside an effect's call and finish it, so an effect could happen twice"
)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="phasegate", description="Resumable long-running jobs, and their operators' tools.")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("-v", "--verbose", action="store_true", help="log what the engine does")
    # Accepted before the command too (`phasegate --db X status`); the
    # command's own --db wins when both are given.
    p.add_argument("--db", dest="global_db", default=None, help="database path or URL, for any command")
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
    s.add_argument("--force", action="store_true", help=_FORCE_HELP)
    _db_arg(s)
    s.set_defaults(fn=cmd_resume)

    s = sub.add_parser("status", help="show runs, or one run")
    s.add_argument("run_id", nargs="?")
    s.add_argument("--json", action="store_true")
    s.add_argument("--diff", action="store_true", help="show the code diff behind a drift (saved vs current)")
    s.add_argument("--by-cause", action="store_true", help="group the runs that need attention by why they stopped")
    _db_arg(s)
    s.set_defaults(fn=cmd_status)

    s = sub.add_parser("decide", help="record an operator's decision on a stopped run, or on every run of a cause")
    # Both optional to argparse: with --cause the one positional is the action (`_decide_args`).
    s.add_argument("run_id", nargs="?")
    s.add_argument(
        "action",
        nargs="?",
        help="approve, degrade, rewind, reset, confirm_effect or retry_effect; second seconds a proposal",
    )
    s.add_argument(
        "--cause",
        default=None,
        help="decide every run of this cause (an id from `status --by-cause`), in one transaction",
    )
    s.add_argument(
        "--skip-unfit",
        action="store_true",
        help="with --cause: record the runs the decision fits and list the others (default: refuse them all)",
    )
    s.add_argument("--reason", required=True)
    s.add_argument("--phase", default=None, help="for rewind: the phase to re-run from")
    s.add_argument(
        "--effect",
        default=None,
        help="for confirm_effect/retry_effect: the effect's key, phase/name or name (exactly one)",
    )
    s.add_argument(
        "--expect-env",
        default=None,
        metavar="HASH",
        help="for approve: the env hash --dry-run showed; refused if the run's changed values differ now",
    )
    s.add_argument(
        "--result",
        default=None,
        help="for confirm_effect (required): the effect's result as JSON; null when it returned nothing",
    )
    s.add_argument("--operator", default=None, help="who decides (default: $PHASEGATE_OPERATOR or the login name)")
    s.add_argument("--dry-run", action="store_true", help="say what the decision would do; record nothing")
    s.add_argument(
        "--decision",
        type=count(1),
        default=None,
        metavar="N",
        help="for second: the proposed decision to second (another operator's account)",
    )
    s.add_argument("--force", action="store_true", help=_FORCE_HELP + "; also: decide on a run someone else claimed")
    _db_arg(s)
    s.set_defaults(fn=cmd_decide)

    s = sub.add_parser("claim", help="say you are looking at a run (others then need --force to decide on it)")
    s.add_argument("run_id")
    s.add_argument("--release", action="store_true", help="give the claim up")
    s.add_argument("--force", action="store_true", help="take over (or release) someone else's claim")
    s.add_argument("--operator", default=None, help="who claims (default: $PHASEGATE_OPERATOR or the login name)")
    _db_arg(s)
    s.set_defaults(fn=cmd_claim)

    s = sub.add_parser("policy", help="show or change the store-wide policy (decisions that need a second operator)")
    s.add_argument("--show", action="store_true", help="show the policy and its changes (the default)")
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--require-second",
        default=None,
        metavar="ACTIONS",
        help="comma-separated actions only proposed until another operator seconds them; '' clears the list",
    )
    s.add_argument("--proposal-seconds", type=seconds, default=None, help="how long a proposal waits (default 86400)")
    s.add_argument(
        "--web-account",
        default=None,
        metavar="ACCOUNT",
        help="the OS account of `phasegate serve`: its authenticated users count as different operators ('' clears)",
    )
    s.add_argument("--reason", default=None, help="why the policy changes (required for a change; audited)")
    s.add_argument("--operator", default=None, help="who changes it (default: $PHASEGATE_OPERATOR or the login name)")
    _db_arg(s)
    s.set_defaults(fn=cmd_policy)

    s = sub.add_parser("verify", help="verify every run's checkpoints")
    s.add_argument("--json", action="store_true")
    s.add_argument("--deep", action="store_true", help="also parse every stored output (slower)")
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
    s.add_argument("--poll", type=seconds, default=1.0, help="seconds between looks at the store")
    s.add_argument("--jobs", type=count(1), default=1, help="runs to resume at once (default 1)")
    s.add_argument(
        "--heartbeat",
        type=seconds,
        default=5.0,
        metavar="SECONDS",
        help="seconds between this worker's heartbeats in the store (default 5; alive within 3 of them)",
    )
    _db_arg(s)
    s.set_defaults(fn=cmd_worker)

    s = sub.add_parser("workers", help="list the workers and whether each is alive (by its heartbeat)")
    s.add_argument("--json", action="store_true")
    _db_arg(s)
    s.set_defaults(fn=cmd_workers)

    s = sub.add_parser("watch", help="alert when a run stops (blocked or failed): a command and/or a webhook")
    s.add_argument(
        "--exec",
        dest="exec_cmd",
        default=None,
        metavar="CMD",
        help="run CMD (a shell command) per stop, the event as JSON on stdin",
    )
    s.add_argument("--webhook", default=None, metavar="URL", help="POST each stop's event as JSON to URL")
    s.add_argument("--retries", type=count(0), default=4, help="attempts after the first, per hook (default 4)")
    s.add_argument("--backoff", type=seconds, default=1.0, help="seconds before the first retry, doubled each time")
    s.add_argument("--timeout", type=seconds, default=10.0, help="seconds one attempt may take (default 10)")
    s.add_argument("--poll", type=seconds, default=2.0, help="seconds between looks when no change event arrives")
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


class SafeFormatter(logging.Formatter):
    """Log lines carry run ids, errors and reasons read from the store: each
    line is made safe (`safetext.safe`) before it reaches the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(safe(line) for line in super().format(record).split("\n"))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(
        level=logging.INFO if ("-v" in argv or "--verbose" in argv) else logging.WARNING,
        handlers=[handler],
    )
    if not ("-v" in argv or "--verbose" in argv):
        logging.getLogger("phasegate").setLevel(logging.ERROR)
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "db", None) is None and args.global_db is not None:
            args.db = args.global_db
        _check_text_args(args)
        return int(args.fn(args))
    except PhasegateError as exc:
        if debug:
            raise
        print(f"phasegate: {exc.title}: {safe(exc.message)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("phasegate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


__all__ = ["main", "build_parser", "iso"]
