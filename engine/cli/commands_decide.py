"""The operators' commands: `decide` (one run or every run of a cause, and
`second`), `claim`, `policy`, and `send` (a message into a run)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..errors import ExitCode, UsageError
from ..safetext import safe, safe_json
from ..states import Action
from ..timefmt import iso
from .args import open_engine, parse_json
from .render import overrides, print_preview, with_flags


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
    from ..decide.fit import CONFIRM_NEEDS_RESULT, NO_RESULT, NO_VALUE
    from ..oversight.identity import whoami

    _decide_args(args)
    _no_web_identity("decide")
    if args.action == "second":
        if args.cause is not None:
            raise UsageError("second is for one proposal: phasegate decide RUN second --decision N")
        return _second(args)
    if args.decision is not None:
        raise UsageError("--decision is for second: the proposal to second (phasegate decide RUN second --decision N)")
    result: Any = NO_RESULT
    if args.result is not None:
        result = parse_json(args.result, "--result")
    if args.value is not None:
        args.answer_value = parse_json(args.value, "--value")
    else:
        args.answer_value = NO_VALUE
    if args.cause is not None:
        return _decide_cause(args, result)
    with open_engine(args) as eng:
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
                question=args.question,
                value=args.answer_value,
            )
            if pv.action is Action.CONFIRM_EFFECT and result is NO_RESULT:
                raise UsageError(CONFIRM_NEEDS_RESULT, options=("result",))  # refused as the decision itself would be
            # Then the claim rule, as the decision applies it: someone else's
            # claim refuses it (exit 4) unless --force overrides it.
            held = eng.oversight.overridden_claim(
                eng.status(args.run_id), pv.action, whoami(args.operator), override_claim=args.force
            )
            print_preview(pv)
            if held is not None:
                print(overrides(held, eng.clock(), "  "))
            return ExitCode.OK
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
            question=args.question,
            value=args.answer_value,
        )
    return _said(args.run_id, d)


def _said(run_id: str, d: Any) -> int:
    """The line a recorded decision prints."""
    if d.state == "proposed":
        print(
            f"{safe(run_id)}: {d.action} by {safe(d.operator)} proposed (decision {d.id}); the store's policy"
            " needs a second operator (another account):"
            f" phasegate decide {safe(run_id)} second --decision {d.id} --reason ..."
        )
        return ExitCode.OK
    if d.state == "applied":
        when = "applied"
    elif d.action in (Action.PAUSE, Action.CANCEL):
        when = "asked; the run stops at its next step"
    elif d.action is Action.ANSWER:
        when = "recorded; the run goes on with it at its next start (a worker takes it up)"
    else:
        when = "recorded; it applies at the next run"
    print(f"{safe(run_id)}: {d.action} by {safe(d.operator)} {when} (decision {d.id})")
    return ExitCode.OK


def cmd_hold(args: argparse.Namespace) -> int:
    """`phasegate pause|unpause|cancel RUN --reason TEXT`: the decision of that name."""
    _no_web_identity(args.command)
    with open_engine(args) as eng:
        d = eng.decide(args.run_id, args.command, reason=args.reason, operator=args.operator, override_claim=args.force)
    return _said(args.run_id, d)


def cmd_send(args: argparse.Namespace) -> int:
    """`phasegate send RUN TOPIC --value JSON --reason TEXT`: a message for the run's `ctx.recv(TOPIC)`."""
    _no_web_identity("send")
    value = parse_json(args.value, "--value")
    with open_engine(args) as eng:
        sent = eng.send(args.run_id, args.topic, value, reason=args.reason, operator=args.operator)
    if args.json:
        body = {
            "id": sent.id,
            "run_id": sent.run_id,
            "topic": sent.topic,
            "operator": sent.operator,
            "woke": sent.woke,
            "checked": sent.checked,
        }
        print(safe_json(json.dumps(body)))
        return ExitCode.OK
    then = "the run waits for it: a worker resumes it" if sent.woke else "queued until the run receives it"
    print(f"{safe(sent.run_id)}: message {sent.id} on {safe(sent.topic)} from {safe(sent.operator)}; {then}")
    return ExitCode.OK


def _decide_cause(args: argparse.Namespace, result: Any) -> int:
    from ..decide.batch import GroupRefused

    opts: dict[str, Any] = {
        "cause": args.cause,
        "phase": args.phase,
        "effect": args.effect,
        "result": result,
        "force": args.force,
        "expect_env": args.expect_env,
        "question": args.question,
        "value": args.answer_value,
    }
    with open_engine(args) as eng:
        if args.dry_run:
            lines = eng.triage.preview_many(
                [], args.action, reason=args.reason, operator=args.operator, override_claim=args.force, **opts
            )
            unfit = [ln for ln in lines if ln.preview is None]
            print(f"{args.action} for the {len(lines)} run(s) of cause {args.cause} would do this (nothing recorded):")
            now = eng.clock()
            for ln in lines:
                if ln.preview is not None:
                    print_preview(ln.preview, head=f"{safe(ln.run_id)}: ", indent="    ")
                    if ln.overrides is not None:
                        print(overrides(ln.overrides, now, "    "))
                else:
                    print(f"{safe(ln.run_id)}: does not fit: {safe(with_flags(str(ln.unfit), ln.unfit_options))}")
            if unfit and not args.skip_unfit:
                print(
                    f"phasegate: decision refused: {len(unfit)} of {len(lines)} run(s) do not fit; nothing would be"
                    " recorded (--skip-unfit records the rest)",
                    file=sys.stderr,
                )
                return ExitCode.USAGE
            return ExitCode.OK
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
                print(f"{safe(u.run_id)}: does not fit: {safe(with_flags(u.why, u.options))}", file=sys.stderr)
            if "skip_unfit" not in exc.options or getattr(args, "debug", False):
                raise
            # The group's refusal in the command line's words: the flag that records the rest.
            print(f"phasegate: {exc.title}: {safe(exc.message)} (--skip-unfit records the rest)", file=sys.stderr)
            return exc.exit_code
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
            print(f"  {safe(u.run_id)}: {safe(with_flags(u.why, u.options))}")
    return ExitCode.OK


def _second(args: argparse.Namespace) -> int:
    if args.decision is None:
        raise UsageError("second needs --decision N: the proposal to second (phasegate status RUN lists it)")
    keys = ("phase", "effect", "result", "expect_env", "question", "value")
    extra = [f"--{k.replace('_', '-')}" for k in keys if getattr(args, k)]
    if extra or args.dry_run:
        raise UsageError(f"{(extra or ['--dry-run'])[0]} is not for second: it seconds the proposal as proposed")
    with open_engine(args) as eng:
        d = eng.oversight.second(
            args.run_id, args.decision, reason=args.reason, operator=args.operator, override_claim=args.force
        )
    when = "applied" if d.state == "applied" else "takes effect; it applies at the next run"
    print(f"{safe(args.run_id)}: {d.action} by {safe(d.operator)} seconded, {when} (decision {d.id})")
    return ExitCode.OK


def cmd_claim(args: argparse.Namespace) -> int:
    _no_web_identity("claim")
    with open_engine(args) as eng:
        held = eng.oversight.claim(args.run_id, operator=args.operator, release=args.release, force=args.force)
    if held is None:
        print(f"{safe(args.run_id)}: released")
    else:
        print(
            f"{safe(args.run_id)}: claimed by {safe(held.operator)} (account {safe(held.account)})"
            f" until {held.expires_at}"
        )
    return ExitCode.OK


def cmd_policy(args: argparse.Namespace) -> int:
    change = any(v is not None for v in (args.require_second, args.proposal_seconds, args.web_account))
    if change and args.show:
        raise UsageError("give --show or a change (--require-second, --proposal-seconds, --web-account), not both")
    if not change and args.reason is not None:
        raise UsageError("--reason is for a change of the policy (--require-second, --proposal-seconds, --web-account)")
    if args.all and (args.limit is not None or args.before is not None):
        raise UsageError("--all shows every change; --limit and --before page through them: give one or the other")
    _no_web_identity("policy")
    limit = None if args.all else (args.limit or 20)
    with open_engine(args) as eng:  # a policy for a store not made yet is a mistyped --db
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
        # One more than the page: whether older changes remain (keyset by id).
        history = eng.oversight.policy_history(None if limit is None else limit + 1, before=args.before)
        now = eng.oversight.policy()
    more = limit is not None and len(history) > limit
    history = history[:limit] if limit is not None else history
    next_before = history[-1].id if more and history else None
    if args.json:
        body = {**now.to_json(), "history": [p.to_json() for p in history], "next_before": next_before}
        print(safe_json(json.dumps(body, indent=2)))
        return ExitCode.OK
    listed = ", ".join(str(a) for a in now.require_second) or "nothing (no decision needs a second operator)"
    print(f"require second  {listed}")
    print(f"proposals lapse after {now.proposal_seconds:g} s")
    print(f"web account     {safe(now.web_account or '-')}")
    for p in history:
        acts = ",".join(str(a) for a in p.require_second) or "-"
        print(
            f"changed   {iso(p.at)} {safe(p.operator)} (account {safe(p.account)}): require {acts},"
            f" lapse {p.proposal_seconds:g} s, web account {safe(p.web_account or '-')}: {safe(p.reason)}"
            f" (change {p.id})"
        )
    if next_before is not None:
        print(f"older changes: phasegate policy --show --before {next_before} (or --all)")
    return ExitCode.OK


def _no_web_identity(command: str) -> None:
    """A web identity is `phasegate serve`'s to give the console it starts
    for a session (oversight/identity.py); the command line never takes one:
    under the web account's own shell it would let one person be two.

    Raises:
        UsageError: `PHASEGATE_WEB_USER` is set.
    """
    from ..oversight.identity import WEB_USER_ENV

    if os.environ.get(WEB_USER_ENV):
        raise UsageError(
            f"{WEB_USER_ENV} is set: a web identity is given by `phasegate serve` to its consoles, never claimed"
            f" on the command line ({command}); nothing was recorded"
        )
