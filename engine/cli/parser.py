"""The `phasegate` parser: every command's arguments, the types that check
them, and the commands registered from outside the engine (`EXTERNAL`)."""

from __future__ import annotations

import argparse
import importlib
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn

from .. import bounds
from ..errors import ExitCode, UsageError
from .commands_background import cmd_watch, cmd_worker, cmd_workers
from .commands_decide import cmd_claim, cmd_decide, cmd_hold, cmd_policy, cmd_send
from .commands_follow import cmd_follow
from .commands_runs import cmd_resume, cmd_run, cmd_status
from .commands_upkeep import cmd_prune, cmd_reseal, cmd_verify
from .observing import add_log_format, add_metrics_flags, cmd_metrics

#: Commands that live outside the engine (they need a screen), imported only
#: when invoked so `import engine` never loads a UI toolkit.
EXTERNAL: dict[str, str] = {
    "console": "phasegate.console.command:add_console",
    "demo": "phasegate.sample_runs.demo:add_demo",
    "serve": "phasegate.console.web.command:add_serve",
    # Argparse alone at import; the `mcp` SDK (an extra) only when it runs.
    "mcp": "phasegate.mcp.command:add_mcp",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


#: A duration flag (polls, heartbeats, backoffs, timeouts): nan, inf, 0 or a
#: negative would make a loop spin or a sleep overflow (bounds.INTERVAL_SECONDS).
seconds = bounds.INTERVAL_SECONDS.argtype()


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=None, help="database path or URL (default: $PHASEGATE_DB, else ./phasegate.db)")


#: What each exit code means, as `phasegate --help` ends; docs/reference/cli.md
#: and `ExitCode`'s docstrings say the same.
_EXIT_MEANINGS: dict[int, str] = {
    ExitCode.OK: "completed, or the command did what it was asked",
    ExitCode.FAILED: "the run failed (a phase raised); `demo`: a scenario did not reach its state",
    ExitCode.USAGE: "bad usage, an unusable database, or a refused decision: one line on stderr, nothing changed",
    ExitCode.BLOCKED: (
        "the run is blocked for an operator (reasons printed one a line), or `verify` found damage or a lost output"
    ),
    ExitCode.HELD: (
        "the run is held by another live process, or its holder is stalled (alive on this host, past its"
        " lease: --force); or this process lost its lease; or someone else claimed the run (--force)"
    ),
    ExitCode.WAITING: (
        "`run`/`resume`: the run is waiting (for an answer, a timer or a rate limit: a worker resumes it)"
        " or paused by an operator"
    ),
    ExitCode.CANCELLED: "`run`/`resume`: the run is cancelled (final)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); `worker`: stopped at once by a second signal, the current run left resumable",
}


def _exit_codes_help() -> str:
    """The epilog's table of exit codes, each meaning wrapped under itself."""
    lines = ["exit codes:"]
    for code, meaning in _EXIT_MEANINGS.items():
        wrapped = textwrap.wrap(meaning, width=72)
        lines.append(f"  {code:<5}{wrapped[0]}")
        lines.extend(f"       {line}" for line in wrapped[1:])
    return "\n".join(lines)


_FORCE_HELP = (
    "act even though the run's holder is stalled (alive on this host, past its lease); "
    "it may wake inside an effect's call and finish it, so an effect could happen twice"
)


def build_parser() -> argparse.ArgumentParser:
    """Every command's arguments, with the external commands that are installed.

    Returns:
        The parser; a bad argument raises `UsageError` instead of exiting.
    """
    p = _Parser(
        prog="phasegate",
        description="Resumable long-running jobs, and their operators' tools.",
        epilog=_exit_codes_help(),
        # Keeps the epilog's table as it is written (the one-line description
        # reads the same either way); the commands' own parsers are unchanged.
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    add_log_format(s)
    _db_arg(s)
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("resume", help="run again with the stored target and inputs")
    s.add_argument("run_id")
    s.add_argument("--force", action="store_true", help=_FORCE_HELP)
    add_log_format(s)
    _db_arg(s)
    s.set_defaults(fn=cmd_resume)

    s = sub.add_parser("status", help="show runs, or one run")
    s.add_argument("run_id", nargs="?")
    s.add_argument("--json", action="store_true")
    s.add_argument("--diff", action="store_true", help="show the code diff behind a drift (saved vs current)")
    s.add_argument("--by-cause", action="store_true", help="group the runs that need attention by why they stopped")
    s.add_argument(
        "--patch",
        default=None,
        metavar="ID",
        help="list the live runs that still take the old path of a patch (ctx.patched)",
    )
    _db_arg(s)
    s.set_defaults(fn=cmd_status)

    s = sub.add_parser("follow", help="print a run's steps, effects, progress, waits and decisions as they commit")
    s.add_argument("run_id")
    s.add_argument("--json", action="store_true", help="one JSON object a line")
    s.add_argument(
        "--since",
        default=None,
        metavar="WHEN",
        help="only what happened since a time (2026-12-07T15:00:00Z) or that long ago (30s, 5m, 2h, 1d)",
    )
    _db_arg(s)
    s.set_defaults(fn=cmd_follow)

    s = sub.add_parser("decide", help="record an operator's decision on a stopped run, or on every run of a cause")
    # Both optional to argparse: with --cause the one positional is the action (`_decide_args`).
    s.add_argument("run_id", nargs="?")
    s.add_argument(
        "action",
        nargs="?",
        help="approve, degrade, rewind, reset, confirm_effect, retry_effect, answer, pause, unpause or cancel;"
        " second seconds a proposal",
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
    s.add_argument("--question", default=None, help="for answer: the question's name (or PHASE/NAME)")
    s.add_argument(
        "--value", default=None, help="for answer (required): the answer as JSON, checked against the question's schema"
    )
    s.add_argument("--operator", default=None, help="who decides (default: $PHASEGATE_OPERATOR or the login name)")
    s.add_argument("--dry-run", action="store_true", help="say what the decision would do; record nothing")
    s.add_argument(
        "--decision",
        type=bounds.ROW_ID.argtype(),
        default=None,
        metavar="N",
        help="for second: the proposed decision to second (another operator's account)",
    )
    s.add_argument("--force", action="store_true", help=_FORCE_HELP + "; also: decide on a run someone else claimed")
    _db_arg(s)
    s.set_defaults(fn=cmd_decide)

    for name, said in (
        ("pause", "pause a run: a running one stops at its next step; nothing resumes it until unpaused"),
        ("unpause", "let a paused run go on from where it was (a due timer fires then)"),
        ("cancel", "cancel a run for good: a running one stops at its next step"),
    ):
        s = sub.add_parser(name, help=said)
        s.add_argument("run_id")
        s.add_argument("--reason", required=True)
        s.add_argument("--operator", default=None, help="who decides (default: $PHASEGATE_OPERATOR or the login name)")
        s.add_argument("--force", action="store_true", help="decide on a run someone else claimed")
        _db_arg(s)
        s.set_defaults(fn=cmd_hold)

    s = sub.add_parser("send", help="send a message into a run, for its ctx.recv(TOPIC) (a webhook's receiver, say)")
    s.add_argument("run_id")
    s.add_argument("topic", help="the topic the run receives it on")
    s.add_argument(
        "--value", required=True, help="the message as JSON, checked against the schema the run gave the topic"
    )
    s.add_argument("--reason", required=True, help="why it is sent (kept with it)")
    s.add_argument("--operator", default=None, help="who sends it (default: $PHASEGATE_OPERATOR or the login name)")
    s.add_argument("--json", action="store_true", help="print the message recorded as one JSON object")
    _db_arg(s)
    s.set_defaults(fn=cmd_send)

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
    s.add_argument("--all", action="store_true", help="show every change of the policy, not a page of them")
    s.add_argument(
        "--limit", type=bounds.PAGE.argtype(), default=None, metavar="N", help="changes shown per page (default 20)"
    )
    s.add_argument(
        "--before",
        type=bounds.ROW_ID.argtype(),
        default=None,
        metavar="ID",
        help="the page of changes older than change ID",
    )
    s.add_argument(
        "--require-second",
        default=None,
        metavar="ACTIONS",
        help="comma-separated actions only proposed until another operator seconds them; '' clears the list",
    )
    s.add_argument(
        "--proposal-seconds",
        type=bounds.WAIT_SECONDS.argtype(),
        default=None,
        help="how long a proposal waits for its second (1 s to a year; default 86400)",
    )
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

    s = sub.add_parser(
        "reseal",
        help="seal every record anew under a new key (PHASEGATE_SEAL_KEY_FILE: the current one), or without a key",
    )
    s.add_argument("--key-file", default=None, metavar="FILE", help="the new key file (0600, yours, outside the store)")
    s.add_argument("--unkeyed", action="store_true", help="seal with plain hashes again (no key)")
    _db_arg(s)
    s.set_defaults(fn=cmd_reseal)

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
    s.add_argument("--jobs", type=bounds.JOBS.argtype(), default=1, help="runs to resume at once (default 1)")
    s.add_argument(
        "--heartbeat",
        type=seconds,
        default=5.0,
        metavar="SECONDS",
        help="seconds between this worker's heartbeats in the store (default 5; alive within 3 of them)",
    )
    add_metrics_flags(s)
    add_log_format(s)
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
    s.add_argument(
        "--messages",
        action="store_true",
        help="also announce a run parked waiting for a message (ctx.recv): its topic and the send command",
    )
    s.add_argument(
        "--webhook-secret-file",
        default=None,
        metavar="FILE",
        help="sign each POST with HMAC-SHA256 under this file's secret (0600, yours, 32 bytes or more)",
    )
    s.add_argument(
        "--retries", type=bounds.RETRIES.argtype(), default=4, help="attempts after the first, per hook (default 4)"
    )
    s.add_argument("--backoff", type=seconds, default=1.0, help="seconds before the first retry, doubled each time")
    s.add_argument("--timeout", type=seconds, default=10.0, help="seconds one attempt may take (default 10)")
    s.add_argument("--poll", type=seconds, default=2.0, help="seconds between looks when no change event arrives")
    s.add_argument("--no-events", action="store_true", help="poll only (no file events)")
    s.add_argument("--once", action="store_true", help="announce what is waiting, then exit")
    add_metrics_flags(s)
    add_log_format(s)
    _db_arg(s)
    s.set_defaults(fn=cmd_watch)

    s = sub.add_parser("metrics", help="serve the store-wide gauges to Prometheus (one process per store)")
    s.add_argument(
        "--listen",
        default="127.0.0.1:9464",
        metavar="ADDR",
        help="HOST:PORT to serve /metrics on (default 127.0.0.1:9464; port 0 picks one; needs the metrics extra)",
    )
    s.add_argument("--allow-remote", action="store_true", help="allow listening on an address other than loopback")
    add_log_format(s)
    _db_arg(s)
    s.set_defaults(fn=cmd_metrics)

    for _name, ref in EXTERNAL.items():
        mod, _, fn = ref.partition(":")
        try:
            adder: Callable[[Any], None] = getattr(importlib.import_module(mod), fn)
        except ImportError:
            continue  # that part of phasegate is not installed
        adder(sub)
    for command in sub.choices.values():
        _global_flags(command)
    return p


def _global_flags(command: argparse.ArgumentParser) -> None:
    # -v and --debug go anywhere on the line (`phasegate status -v` as well
    # as `phasegate -v status`), as the README says. SUPPRESS: a command that
    # was not given the flag leaves the value the top level set alone.
    flags = command._option_string_actions
    if "--debug" not in flags:
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    if "-v" not in flags and "--verbose" not in flags:
        command.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log what the engine does"
        )
