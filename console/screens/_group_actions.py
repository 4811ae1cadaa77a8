"""One decision for many runs, from any screen that has a group (a cause, or
the runs marked in the list): the preview read off the UI thread, the group
modal, and the worker that records what the operator confirmed.

A `GroupDecider` is owned by its screen (composed, not mixed in): the
screen forwards `GroupDecider.Ready` and `GroupDecider.Done` to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.message import Message
from textual.screen import Screen

from phasegate import PhasegateError

from .. import groups
from ..context import ConsoleContext
from ._run_actions import RunActions
from .group_modal import GroupModal


class GroupDecider:
    """Opens the group modal for a decision and records it, for one screen."""

    @dataclass
    class Ready(Message):
        """The group modal can open: every run's preview has been read."""

        request: groups.GroupRequest
        """What the modal shows."""

    @dataclass
    class Done(Message):
        """A group decision landed (the list clears its marks)."""

        count: int
        """How many runs were decided."""

    def __init__(self, screen: Screen[None], ctx: ConsoleContext) -> None:
        self.screen = screen
        """The screen it opens the modal over and posts to."""
        self.ctx = ctx
        """The engine, read-only and the clock."""

    def start(self, name: str, run_ids: tuple[str, ...], cause: str | None, what: str) -> None:
        """Read the per-run preview of `name` for these runs, then open the modal."""
        if self.ctx.read_only:
            self.screen.notify(
                "decisions: read-only (this console was opened with --read-only)",
                title="many runs",
                severity="warning",
                markup=False,
                timeout=4,
            )
            return
        self.screen.run_worker(
            partial(self._prepare, name, run_ids, cause, what),
            thread=True,
            exclusive=True,
            exit_on_error=False,
            group="group-prepare",
        )

    def _prepare(self, name: str, run_ids: tuple[str, ...], cause: str | None, what: str) -> None:
        try:
            request = groups.build_request(self.ctx.engine, name, run_ids, cause, what)
        except PhasegateError as exc:
            self.screen.app.post_message(RunActions.ActionFailed(exc.title, exc.message))
            return
        self.screen.post_message(self.Ready(request))

    def open(self, request: groups.GroupRequest) -> None:
        """Open the group modal for `request`; a confirmed decision is written off the UI thread."""
        self.screen.app.push_screen(GroupModal(request), callback=self._confirmed)

    def _confirmed(self, result: groups.GroupResult | None) -> None:
        if result is None:
            return
        # The worker belongs to the app, not to the screen: Esc right after
        # Enter must not cancel the decision's notice.
        self.screen.app.run_worker(
            partial(self._decide, result), thread=True, exclusive=False, exit_on_error=False, group="decide"
        )

    def _decide(self, result: groups.GroupResult) -> None:
        try:
            text = groups.apply(self.ctx.engine, result)
        except PhasegateError as exc:
            self.screen.app.post_message(RunActions.ActionFailed(exc.title, exc.message))
            return
        self.screen.app.post_message(RunActions.Decided("", text))
        self.screen.post_message(self.Done(len(result.run_ids)))
