"""What the two phase contexts share: `PhaseContext` (sync phases) and
`AsyncPhaseContext` (async phases) are one face, with steps and effects
called in one and awaited in the other.

The base holds what a phase reads (`run_id`, `phase`, `inputs`, `missing`,
`degraded`, `steps_done`, `last_step`), the calls that are never awaited
(`patched`, `deprecated_patch`: run/patches.py; `progress`: run/progress.py), and the hook the runner
ends an execution with. tests/unit/test_context_parity.py holds the two
classes to the same public methods and parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..authoring.retry import Attempt
from ..errors import UsageError
from . import patches
from .parking import Parking, made_by_a_run
from .progress import Progress, checked
from .stepcalls import StepCalls
from .stopping import StopRequest

if TYPE_CHECKING:
    from .ledger import EffectLedger
    from .mailbox import Mailbox, Receiving
    from .steplog import StepLog


class PhaseContextBase:
    """The part of a phase's context that is the same for sync and async phases."""

    def __init__(
        self,
        run_id: str,
        phase: str,
        inputs: Any,
        missing: frozenset[str],
        *,
        steps: StepLog,
        effects: EffectLedger,
        attempts: list[Attempt] | None,
        stop: StopRequest | None,
        parking: Parking | None,
        here: Callable[[], object],
        mailbox: Mailbox | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Made by the runner for each execution of a phase; a phase only uses it.

        Args:
            run_id: The run's id.
            phase: The phase's name.
            inputs: A fresh copy of the run's inputs.
            missing: Needed outputs that are lost and accepted as gaps.
            steps: The run's durable-step log.
            effects: The run's effect ledger.
            attempts: Where failed attempts of retried steps are recorded.
            stop: The request that stops the run at its next step.
            parking: What the run knows of its waits (answers, a retry it parked for).
            here: Who is calling now (the thread, or the asyncio task).
            mailbox: The run's messages, as `recv` receives them.
            progress: Where the run's progress reports go (None: kept nowhere).
        """
        self._progress = progress
        self._steps = steps
        self._effects = effects
        self._parking = parking
        self._mailbox = mailbox
        self._stop = stop
        self._attempts: list[Attempt] = attempts if attempts is not None else []
        """Where failed attempts of retried steps are recorded (the runner's list)."""
        self._calls = StepCalls(phase, stop, here)
        self.phase = phase
        """The name of the phase being run."""
        self.run_id = run_id
        """The run's id."""
        self.inputs = inputs
        """The run's original inputs, exactly as given to its first `run`."""
        self.missing: frozenset[str] = missing
        """Needed outputs that are lost and were accepted as gaps (degraded run)."""

    @property
    def degraded(self) -> bool:
        """Whether the phase runs without some of the outputs it needs (`missing`)."""
        return bool(self.missing)

    @property
    def steps_done(self) -> int:
        """Steps (of any kind) completed in this execution of the phase."""
        return self._calls.steps_done

    @property
    def last_step(self) -> str | None:
        """The step or effect that finished last in this execution of the phase."""
        return self._calls.last

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Say how far the phase has got, for an operator (`status`, the console, `follow`).

        Cheap and not a checkpoint: the latest report is kept in memory and
        written at most about twice a second, with the run's next step where
        there is one (run/progress.py). The store keeps the last one written as
        the run's last-known progress, through a kill; the phase's checkpoint
        clears it. Never awaited, in an async phase too. A resumed phase starts
        over, so it reports from where it really is, not from the stored value.

        Args:
            done: How much is done: a count of items, or any unit `total` is in.
            total: How much there is in all, or None when not known (no bar, no estimate).
            message: A short line about where it is (cut to 200 characters;
                shown escaped, never as markup).

        Raises:
            UsageError: `done` negative or not a finite number, `total` not above 0,
                or `message` not a string.
        """
        done, total, message = checked(done, total, message)
        progress = self._progress
        if progress is not None:
            progress.report(self.phase, done, total, message)

    def patched(self, patch_id: str) -> bool:
        """Whether this run takes the new path of a code change (run/patches.py).

        True when the run reaches this call for the first time under code that
        has it; False when its saved steps or effects show it went past this
        point under code without it (a run that was waiting when the new code
        was deployed). Recorded in the run's step log on the first call: the
        answer never changes for a run. Never awaited, in an async phase too:
        it is decided here, with at most one commit.

        Args:
            patch_id: The patch's name, unique to the change it guards.

        Returns:
            True for the patched path, False for the old one.

        Raises:
            UsageError: a bad name, or a call from a thread or task other than the phase's own.
            Interrupted: a stop was requested.
        """
        return patches.patched(self._steps, self._calls, patch_id)

    def deprecated_patch(self, patch_id: str) -> None:
        """Mark where a patch was, once only its new path is left in the code.

        A run that took the old path (or went past this point without the patch)
        stops here for an operator (`env_mismatch`, `replay_diverged`) instead of
        going on with results the new code never made; `phasegate status --patch
        ID` lists the live runs that would.

        Args:
            patch_id: The patch's name, as `patched` was called with.

        Raises:
            Stop: this run took the old path.
            UsageError: a bad name, or a call from another thread or task.
            Interrupted: a stop was requested.
        """
        patches.deprecated_patch(self._steps, self._calls, patch_id)

    def _parked(self) -> Parking:
        return made_by_a_run(self._parking)

    def _receiving(self, topic: str, schema: Any, timeout: float | None) -> Receiving:
        """One `recv` call's look at the run's messages (run/mailbox.py).

        Raises:
            UsageError: the context was made by hand, not by a run; or a bad argument.
            Interrupted: a stop was requested.
        """
        parking = made_by_a_run(self._parking)
        if self._mailbox is None:
            raise UsageError("this context cannot receive messages: it was not made by a run")
        return self._mailbox.begin(self._steps, self._calls, topic, schema, timeout, parking.park_seconds)

    def _close(self) -> None:
        """(the runner) The phase returned: a thread or task it left running stops at its next step."""
        self._calls.closed = True
