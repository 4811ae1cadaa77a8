"""What the runs screen and the detail screen share: the operator's actions
on one run, each offered only where it fits why the run is stopped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, cast

from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen

from phasegate import PhasegateError, RunView

from .. import service
from ..actions import ACTIONS, ActionRequest, ActionResult

if TYPE_CHECKING:
    from ..app import ConsoleApp


class RunActions(Screen[None]):
    """A screen with a current run that the action keys act on."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(spec.key, f"decide('{spec.name}')", spec.label.capitalize(), id=spec.binding_id) for spec in ACTIONS
    ]

    @dataclass
    class RequestReady(Message):
        """The modal for an action can open: its preview has been read."""

        request: ActionRequest

    def __init__(self) -> None:
        super().__init__()
        self.run_view: RunView | None = None
        """The run the action keys act on, as last read."""
        self.allowed: list[str] = []
        """The actions that fit it (read with it, so they always agree)."""

    @property
    def console(self) -> ConsoleApp:
        return cast("ConsoleApp", self.app)

    def set_target(self, view: RunView | None, allowed: list[str]) -> None:
        self.run_view, self.allowed = view, allowed
        self.refresh_bindings()

    def action_fits(self, name: str) -> bool:
        return not self.console.read_only and self.run_view is not None and name in self.allowed

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "decide":
            # False hides the binding and makes its key do nothing.
            return bool(parameters) and self.action_fits(str(parameters[0]))
        return True

    def action_decide(self, name: str) -> None:
        if self.run_view is None or not self.action_fits(name):
            return
        self._prepare(self.run_view.run_id, name)

    @work(thread=True, exclusive=True, exit_on_error=False, group="prepare")
    def _prepare(self, run_id: str, name: str) -> None:
        try:
            request = service.build_request(self.console.engine, run_id, name)
        except PhasegateError as exc:
            self.console.post_message(self.console.ActionFailed(exc.title, exc.message))
            return
        self.post_message(self.RequestReady(request))

    def on_run_actions_request_ready(self, message: RequestReady) -> None:
        from .action_modal import ActionModal

        self.app.push_screen(ActionModal(message.request), callback=self._confirmed)

    def _confirmed(self, result: ActionResult | None) -> None:
        if result is not None:
            self.console.submit(result)

    def refresh_data(self) -> None:
        """Re-read what the screen shows (another process may have changed it)."""
