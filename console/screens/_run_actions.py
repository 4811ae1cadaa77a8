"""What the runs screen and the detail screen share: the operator's actions
on one run, each offered only where it fits why the run is stopped, and the
worker that writes the confirmed decision."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from textual import events, work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen

from phasegate import PhasegateError, RunView
from phasegate.ops import safe

from .. import service
from ..actions import ACTIONS, BY_KEY, BY_NAME, KEYED, ActionRequest, ActionResult
from ..context import ConsoleContext
from ._answering import Answerer
from .action_modal import ActionModal
from .copy_modal import CopyModal, copy_choices


class RunActions(Screen[None]):
    """A screen with a current run that the action keys act on."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # First, so the footer shows it whatever else is offered at 80 columns.
        Binding("question_mark", "app.help", "Help", id="app.help"),
        *(Binding(spec.key, f"decide('{spec.name}')", spec.word, id=spec.binding_id) for spec in ACTIONS),
        Binding("e", "resume", "Resume", id="run.resume"),
        # Not in the footer (it keeps to 80 columns); `?` lists it.
        Binding("m", "claim", "Claim or release (say you are looking at it)", show=False, id="run.claim"),
        # Not in the footer (it keeps to 80 columns): help and the palette list it.
        Binding("y", "copy", "Copy", show=False, id="run.copy"),
    ]

    @dataclass
    class RequestReady(Message):
        """The modal for an action can open: its preview has been read."""

        request: ActionRequest
        """What the modal shows."""

    @dataclass
    class Decided(Message):
        """An action landed in the store (posted to the app, which outlives
        the screen: the operator may have gone back by the time it lands)."""

        run_id: str
        """The run it landed on."""
        text: str
        """One line saying what landed."""
        title: str = "decision recorded"
        """The notice's title ("claim" for a claim or its release: not a decision)."""

    @dataclass
    class Resumed(Message):
        """`phasegate resume` was started for a run, detached (posted to the app)."""

        run_id: str
        """The run being resumed."""
        pid: int
        """The child's process id."""
        log: str
        """Where its output goes."""

    @dataclass
    class ResumeEnded(Message):
        """A resume the console started has ended (posted to the app)."""

        ended: service.ResumeEnded
        """How it ended: its exit status and its log's last line."""

    @dataclass
    class ActionFailed(Message):
        """The engine refused an action or a read, or the store could not be
        written (posted to the app, which shows it)."""

        title: str
        """The notice's title (the error's)."""
        text: str
        """The error, in one line."""

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx
        """The engine, read-only and the clock."""
        self.run_view: RunView | None = None
        """The run the action keys act on, as last read."""
        self.allowed: list[str] = []
        """The actions that fit it (read with it, so they always agree)."""
        self.answerer = Answerer(self, ctx, failed=self.ActionFailed, decided=self.Decided)
        """Opens the answer form for the run's question and writes the answer."""

    def set_target(self, view: RunView | None, allowed: list[str]) -> None:
        """Make `view` the run the keys act on, with the actions that fit it (read with it); the footer is
        redrawn only if the keys it shows change."""
        if view is not None:
            self.ctx.seen(view)
        before = self._offered()
        self.run_view, self.allowed = view, allowed
        # Keys that stay the same leave the footer alone: over a slow link a
        # redrawn footer is most of what a cursor move or a refresh sends.
        if self._offered() != before:
            self.refresh_bindings()

    def _offered(self) -> tuple[tuple[str, ...], bool]:
        """The keys the footer shows for the target (read or being read)."""
        view = self.run_view
        if self.ctx.read_only or view is None:
            return (), False
        return tuple(self.allowed), not service.can_resume(view)

    def acts_on(self, view: RunView) -> bool:
        """Whether `view` is still the run the keys act on (the runs list
        says no while the newly selected run is being read).

        Not `is_current`: that is Textual's `Screen` property (is this screen
        shown), which its refresh loop reads; a method of that name was
        always truthy there."""
        return True

    def action_fits(self, name: str) -> bool:
        """Whether the action `name` is offered on the target now: not read-only, a target read, the action among
        those that fit it."""
        view = self.run_view
        return not self.ctx.read_only and view is not None and name in self.allowed and self.acts_on(view)

    def resume_fits(self) -> bool:
        """Whether `e` may start `phasegate resume` for the target now."""
        view = self.run_view
        return not self.ctx.read_only and view is not None and not service.can_resume(view) and self.acts_on(view)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # False hides the binding; its key then reaches `on_key`, which says why.
        """Textual's guard: a key whose action does not fit is hidden from the footer (and `on_key` says why when
        pressed)."""
        if action == "decide":
            return bool(parameters) and self.action_fits(str(parameters[0]))
        if action == "resume":
            return self.resume_fits()
        if action == "claim":
            return self.claim_fits()
        return True

    def claim_fits(self) -> bool:
        """Whether `m` may claim or release the target now (not read-only, a target read)."""
        view = self.run_view
        return not self.ctx.read_only and view is not None and self.acts_on(view)

    def action_claim(self) -> None:
        """Claim the target for this operator, or release their claim (someone else's asks to be confirmed first)."""
        if self.run_view is None or not self.claim_fits():
            return
        if service.claimed_by_other(self.ctx.engine, self.run_view) and self.run_view.claim is not None:
            held = self.run_view.claim
            self.notify(
                safe(f"claimed by {held.operator}; to take it over: phasegate claim {self.run_view.run_id} --force"),
                title="claim",
                severity="warning",
                markup=False,
                timeout=6,
            )
            return
        self._claim(self.run_view.run_id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="claim")
    def _claim(self, run_id: str) -> None:
        try:
            text = service.toggle_claim(self.ctx.engine, run_id)
        except PhasegateError as exc:
            self.failed(exc)
            return
        self.app.post_message(self.Decided(run_id, text, title="claim"))

    def action_copy(self) -> None:
        """Open the copy modal: the run id or one of its hashes, whole, by OSC 52."""
        view = self.run_view
        if view is None or not self.acts_on(view):
            self.notify(
                "copy: no run selected (or it is still being read)", title="copy", severity="warning", timeout=4
            )
            return
        self.app.push_screen(CopyModal(view.run_id, copy_choices(view)))

    def action_resume(self) -> None:
        """Start `phasegate resume` for the target, detached; notices say it started and how it ended."""
        if self.run_view is not None and self.resume_fits():
            self._resume(self.run_view.run_id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="resume")
    def _resume(self, run_id: str) -> None:
        try:
            started = service.resume_now(self.ctx.engine, run_id)
        except (PhasegateError, OSError) as exc:
            title, text = ("resume", str(exc)) if isinstance(exc, OSError) else (exc.title, exc.message)
            self.app.post_message(self.ActionFailed(title, text))
            return
        self.app.post_message(self.Resumed(started.run_id, started.pid, str(started.log)))
        app = self.app  # the app outlives this screen: the child may end after the operator went back

        def ended(end: service.ResumeEnded) -> None:
            app.post_message(self.ResumeEnded(end))

        service.watch_resume(started, ended)

    def action_decide(self, name: str) -> None:
        """Open the modal of the action `name` on the target, its preview read fresh (answer: the question's form)."""
        if self.run_view is None or not self.action_fits(name):
            return
        if name == "answer":
            self.answerer.start(self.run_view.run_id)  # its own form, from the question's schema
            return
        self._prepare(self.run_view.run_id, name)

    def on_answerer_ready(self, message: Answerer.Ready) -> None:
        self.answerer.open(message.request)

    def on_key(self, event: events.Key) -> None:
        """An action key that does not apply here says why, in one line,
        instead of doing nothing (its binding is off, so the key lands here)."""
        if event.key == "e" and not self.resume_fits():
            event.stop()
            self.notify(self.why_not_resume(), title="resume", severity="warning", markup=False, timeout=4)
            return
        if event.key == "m" and not self.claim_fits():
            event.stop()
            why = "read-only (this console was opened with --read-only)" if self.ctx.read_only else "no run selected"
            self.notify(f"claim: {why}", title="claim", severity="warning", markup=False, timeout=4)
            return
        spec = BY_KEY.get(event.key)
        # A key of several actions (p: pause, unpause, prune) acts if any of them fits.
        if spec is None or any(self.action_fits(s.name) for s in KEYED[event.key]):
            return
        event.stop()
        self.notify(self.why_not(spec.name), title=spec.label, severity="warning", markup=False, timeout=4)

    def why_not_resume(self) -> str:
        """One line: why `e` does not resume the target now."""
        if self.ctx.read_only:
            return "resume: read-only (this console was opened with --read-only)"
        if self.run_view is None:
            return "resume: no run selected (or it is still being read)"
        return f"resume does not fit: {service.can_resume(self.run_view)}"

    def why_not(self, name: str) -> str:
        """One line: why the action `name` is not offered on this screen now."""
        spec = BY_NAME[name]
        if self.ctx.read_only:
            return f"{spec.label}: read-only (this console was opened with --read-only)"
        view = self.run_view
        if view is None:
            return f"{spec.label}: no run selected (or it is still being read)"
        state = "decided, waiting to be carried out" if view.pending_decisions else view.status.value
        if name == "prune":
            return f"prune does not fit: nothing of {view.run_id} is safe to prune"
        if name == "answer":
            return f"answer: this run asks no question now (it is {state})"
        if name == "second":
            if view.proposals:
                return "second: the proposals on this run came from your own account; another operator must second them"
            return "second: no decision on this run waits for a second operator"
        try:
            self.ctx.engine.preview(view, name)
        except PhasegateError as exc:
            return f"{spec.label} does not fit: this run is {state} ({exc.message})"
        return f"{spec.label} does not fit: this run is {state}"

    def failed(self, exc: PhasegateError) -> None:
        """Report a refused read or write (from any thread) to the app."""
        self.app.post_message(self.ActionFailed(exc.title, exc.message))

    @work(thread=True, exclusive=True, exit_on_error=False, group="prepare")
    def _prepare(self, run_id: str, name: str) -> None:
        try:
            request = service.build_request(self.ctx.engine, run_id, name, self.ctx.clock())
        except PhasegateError as exc:
            self.failed(exc)
            return
        self.post_message(self.RequestReady(request))

    def on_run_actions_request_ready(self, message: RequestReady) -> None:
        self.app.push_screen(ActionModal(message.request), callback=self._confirmed)

    def _confirmed(self, result: ActionResult | None) -> None:
        if result is None:
            return
        # The worker belongs to the app, not to this screen: Esc right after
        # Enter must not cancel the decision's notice.
        self.app.run_worker(
            partial(self._decide, result), thread=True, exclusive=False, exit_on_error=False, group="decide"
        )

    def _decide(self, result: ActionResult) -> None:
        """Write the operator's decision through the engine, off the UI thread."""
        try:
            text = service.apply(self.ctx.engine, result)
        except PhasegateError as exc:
            self.failed(exc)
            return
        self.app.post_message(self.Decided(result.run_id, text))

    stale = False
    """Changes landed while another screen covered this one."""

    def on_screen_resume(self) -> None:
        if self.stale:
            self.stale = False
            self.refresh_data()

    def refresh_data(self) -> None:
        """Re-read what the screen shows (another process may have changed it)."""
