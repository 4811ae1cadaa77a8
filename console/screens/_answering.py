"""Answering a run's question from any screen that has one (a run, or a
question cause): the form's request read off the UI thread, the answer form,
and the worker that records what the operator confirmed.

An `Answerer` is owned by its screen (composed, not mixed in), as a
`GroupDecider` is: the screen forwards `Answerer.Ready` to it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from textual.message import Message
from textual.screen import Screen

from phasegate import PhasegateError

from .. import waits
from ..context import ConsoleContext
from .answer_modal import AnswerModal


class Answerer:
    """Opens the answer form for a run or a cause, and records the answer."""

    @dataclass
    class Ready(Message):
        """The answer form can open: its question has been read."""

        request: waits.AnswerRequest
        """What the form shows."""

    def __init__(
        self,
        screen: Screen[None],
        ctx: ConsoleContext,
        *,
        failed: Callable[[str, str], Message],
        decided: Callable[[str, str], Message],
    ) -> None:
        """
        Args:
            screen: the screen that owns it (it forwards `Ready`).
            ctx: the console's context.
            failed: makes the app's message for a refusal (title, text).
            decided: makes the app's message for an answer recorded (run id, text).
        """
        self.screen = screen
        """The screen it opens the form over and posts to."""
        self.ctx = ctx
        """The engine, read-only and the clock."""
        # Given by the owner, not imported: the owner's module imports this one.
        self._failed = failed
        self._decided = decided

    def start(self, run_id: str | None = None, cause: tuple[str, tuple[str, ...]] | None = None) -> None:
        """Read the question `run_id` waits on (or a cause's, with its runs), then open the form."""
        self.screen.run_worker(
            partial(self._prepare, run_id, cause), thread=True, exclusive=True, exit_on_error=False, group="answer"
        )

    def _prepare(self, run_id: str | None, cause: tuple[str, tuple[str, ...]] | None) -> None:
        engine = self.ctx.engine
        try:
            if cause is not None:
                request = waits.build_group_answer(engine, cause[0], cause[1])
            else:
                request = waits.build_answer(engine, str(run_id), self.ctx.clock())
        except PhasegateError as exc:
            self.screen.app.post_message(self._failed(exc.title, exc.message))
            return
        self.screen.post_message(self.Ready(request))

    def open(self, request: waits.AnswerRequest) -> None:
        """Open the answer form for `request`; a confirmed answer is written off the UI thread."""
        check = partial(waits.check_answer, self.ctx.engine, request)
        self.screen.app.push_screen(AnswerModal(request, check), callback=self._confirmed)

    def _confirmed(self, result: waits.AnswerResult | None) -> None:
        if result is None:
            return
        # The app's worker: Esc right after Enter must not cancel the answer's notice.
        self.screen.app.run_worker(
            partial(self._record, result), thread=True, exclusive=False, exit_on_error=False, group="decide"
        )

    def _record(self, result: waits.AnswerResult) -> None:
        try:
            text = waits.apply_answer(self.ctx.engine, result)
        except PhasegateError as exc:
            self.screen.app.post_message(self._failed(exc.title, exc.message))
            return
        self.screen.app.post_message(self._decided(result.request.run_id, text))
