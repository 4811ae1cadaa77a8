"""One error hierarchy: every failure a user can cause or meet has a title,
a one-line message and the exit code the command line gives it (`ExitCode`)."""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """What the `phasegate` command's exit status means: the contract scripts
    rely on. An `IntEnum`, so a member is the number `sys.exit` is given."""

    OK = 0
    """Completed, or the command did what it was asked."""
    FAILED = 1
    """The run failed (a phase raised)."""
    USAGE = 2
    """Bad usage, an unusable database, or a refused decision: one line on
    stderr, nothing changed."""
    BLOCKED = 3
    """The run is blocked for an operator (reasons printed one a line), or
    `verify` found damage or a lost output, or `send` was refused: the run is
    completed or cancelled and takes no message (nothing recorded)."""
    HELD = 4
    """The run is held by another live process, or its holder is stalled
    (alive on this host past its lease: `resume --force` / `decide --force`),
    or this process lost its lease, or someone else claimed the run
    (`--force`)."""
    WAITING = 5
    """`run`/`resume`: the run is waiting (for an answer, a message, a timer
    or a rate limit; a worker resumes it) or paused by an operator."""
    CANCELLED = 6
    """`run`/`resume`: the run is cancelled (final)."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (Python's own code for SIGINT); for `worker`, stopped
    at once by a second signal, the current run left resumable."""


class PhasegateError(Exception):
    """Base of every error phasegate reports to a person."""

    title: ClassVar[str] = "phasegate error"
    """A few words naming the kind of error (the console's notification title)."""
    exit_code: ClassVar[ExitCode] = ExitCode.USAGE
    """What the command line exits with when this error ends it."""

    def __init__(self, message: str, title: str | None = None, *, options: tuple[str, ...] = ()) -> None:
        """An error with its one-line message.

        Args:
            message: What went wrong and, where it helps, what to do: one line,
                in words that name no command-line flag (the console and the
                API show it as it is).
            title: A title for this error instead of its class's.
            options: The request's options the error is about, by the names the
                API takes them (`phase`, `effect`, `result`): what is missing,
                not taken or wrong, as data.
        """
        super().__init__(message)
        self.message = message
        """The one line the console shows; the command line adds its flags (`options`)."""
        self.options = options
        """The options the error is about, by their API names (`phase`, `effect`,
        `result`, `force`...); the command line names each as its flag (`--phase NAME`)."""
        if title is not None:
            self.title = title  # type: ignore[misc]

    def __str__(self) -> str:
        return self.message


class UsageError(PhasegateError):
    """Bad arguments, a target that is not a workflow, inputs that are not JSON."""

    title = "bad usage"


class StoreError(PhasegateError):
    """The database cannot be opened, is not a phasegate store, or cannot be written."""

    title = "unusable database"


class StoreMissing(StoreError):
    """No store exists there yet (no file, or a database without phasegate's
    tables): the long-lived commands wait for one to appear."""


class ConnectionLost(StoreError):
    """The database server dropped the connection (a restart, a failover,
    `pg_terminate_backend`): what was committed stands, nothing more was
    written, and trying again may well work."""


class WorkflowError(UsageError):
    """A workflow is declared wrongly (unknown need, floor outside needs...)."""

    title = "workflow declaration"


class DecisionError(PhasegateError):
    """A decision that does not fit why the run is stopped, or came too late."""

    title = "decision refused"


class AlreadyDecided(DecisionError):
    """A decision on top of one that is recorded and not yet carried out."""

    title = "already decided"


class RunNotFound(UsageError):
    """No run with that id in the store."""

    title = "no such run"


class CauseNotFound(UsageError):
    """A cause id that names no group of runs needing attention now (it may
    have been decided already, or never existed)."""

    title = "no such cause"


class RunHeld(PhasegateError):
    """Another live process holds the run's lease."""

    title = "run held"
    exit_code = ExitCode.HELD

    def __init__(self, run_id: str, holder: str, expires_in: float) -> None:
        """The run and who holds it.

        Args:
            run_id: The run that is held.
            holder: Its lease's owner (`host:pid`).
            expires_in: Seconds until the lease expires unrenewed.
        """
        super().__init__(f"run {run_id!r} is held by {holder} (lease expires in {max(expires_in, 0):.0f}s)")
        self.run_id = run_id
        """The run that is held."""
        self.holder = holder
        """Its lease's owner (`host:pid`)."""


class HolderStalled(PhasegateError):
    """The run's holder is alive on this host but past its lease: frozen,
    starved or stuck on a lock. Taking the run over, or deciding on it while
    it might wake, needs an explicit `force`."""

    title = "holder stalled"
    exit_code = ExitCode.HELD

    def __init__(self, run_id: str, holder: str, what: str, risk: str) -> None:
        """The run, its stalled holder, and what forcing would risk.

        Args:
            run_id: The run whose holder is stalled.
            holder: The holder (`host:pid`).
            what: What the refused request would do if forced ("resume").
            risk: What could go wrong if it did ("an effect could happen twice").
        """
        super().__init__(
            f"run {run_id!r} is held by {holder}, alive on this host but past its lease (stalled); "
            f"wait for it, or {what} by force, which risks this: {risk}",
            options=("force",),
        )
        self.run_id = run_id
        """The run whose holder is stalled."""
        self.holder = holder
        """The holder (`host:pid`)."""


class RunPaused(PhasegateError):
    """The run is paused by an operator: only `phasegate unpause` lets it go on."""

    title = "run paused"
    exit_code = ExitCode.WAITING


class RunCancelled(PhasegateError):
    """The run is cancelled: final, nothing runs it again."""

    title = "run cancelled"
    exit_code = ExitCode.CANCELLED


class MessageRefused(PhasegateError):
    """A message sent to a run that takes none: completed or cancelled."""

    title = "message refused"
    exit_code = ExitCode.BLOCKED


class LeaseLost(PhasegateError):
    """This process's lease was taken over; it must stop writing at once."""

    title = "lease lost"
    exit_code = ExitCode.HELD


class ClaimedByOther(PhasegateError):
    """Someone else claimed the run (`phasegate claim`): acting on it anyway
    must be meant (`--force`; a typed confirmation in the console)."""

    title = "run claimed"
    exit_code = ExitCode.HELD


class SameOperator(DecisionError):
    """A second by the operator who proposed the decision (the same OS
    account): a proposal needs another person."""

    title = "needs another operator"
