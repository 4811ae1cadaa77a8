"""The answer form: the question a run asked (its prompt and payload, as
stored, made safe), one field per part of the answer built from the
question's JSON Schema, a reason, and for a run someone else claimed its id
typed out. Enter in a text field confirms; the value is checked by the
engine (its preview) before anything is recorded, and a refusal names the
failing field and keeps the form open. Esc cancels."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Select, Static

from phasegate import PhasegateError
from phasegate.ops import safe

from .._format import tone
from ..answers import Entry, EntryError, Field, choice_label, initial_text, value_of
from ..waits import AnswerRequest, AnswerResult

#: Where the engine's refusal says the value fails: "at amount: ..." or "at details.size: ...".
_AT = re.compile(r"\bat ([^:]+): ")

Check = Callable[[Any], str]
"""The engine's check of a value (`waits.check_answer`): its preview's
sentence, or the error `decide` would raise. Blocking: run in a thread."""


def _ticked(on: bool) -> str:
    """A checkbox's words: its state said, not only drawn in colour (NO_COLOR)."""
    return "true (space: false)" if on else "false (space: true)"


def _widget(i: int, f: Field) -> Widget:
    wid = f"field-{i}"
    if f.kind == "boolean":
        return Checkbox(_ticked(bool(f.default)), bool(f.default), id=wid, compact=True)
    if f.kind == "choice":
        options = [(Text(safe(choice_label(v))), str(n)) for n, v in enumerate(f.options)]
        start = next((str(n) for n, v in enumerate(f.options) if f.default is not None and v == f.default), None)
        if start is None:
            return Select(options, prompt="choose one (Enter opens the list)", id=wid, compact=True)
        return Select(options, value=start, allow_blank=False, id=wid, compact=True)
    kind = {"integer": "integer", "number": "number"}.get(f.kind, "text")
    placeholder = safe(f.hint) + ("" if f.required else " (optional: empty leaves it out)")
    return Input(initial_text(f), placeholder=placeholder, type=kind, id=wid, compact=True)  # type: ignore[arg-type]


class AnswerModal(ModalScreen[AnswerResult | None]):
    """Answer one question (for one run, or every run of a question cause)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="answer.cancel"),
    ]

    @dataclass
    class Checked(Message):
        """The engine's check of the value came back."""

        value: Any
        """The answer, as checked."""
        reason: str
        """Why, in the operator's words."""
        refused: str | None
        """Why the engine refused it (the failing field's path said); None: it fits."""

    def __init__(self, request: AnswerRequest, check: Check) -> None:
        super().__init__()
        self.request = request
        """What to answer; read from the store before the form opened."""
        self._check = check
        self._checking = False

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="dialog", classes="answer") as box:
            box.border_title = "answer question (i)"
            title = Text("answer ", style="bold")
            title.append(safe(req.question), style="bold")
            if req.cause is None:
                title.append(": ")
                title.append(safe(req.run_id))
            else:
                title.append(f": {len(req.asked)} run(s) of cause {safe(req.cause)}")
            yield Static(title, id="modal-title")
            first = req.asked[0]
            yield Static(Text(safe(first.prompt), style="bold"), id="prompt")
            if req.deadline:
                yield Static(Text(req.deadline, style="italic"), id="deadline")
            with VerticalScroll(id="answer-payload"):
                yield Static(self._payload(), id="payload")
            for i, f in enumerate(req.form.fields):
                with Horizontal(classes="answer-row"):
                    label = safe(f.label) + ("" if f.required or not req.form.whole_object else " (optional)")
                    yield Label(Text(f"{label}:"), classes="answer-label")  # Text: never parsed as markup
                    yield _widget(i, f)
            with Horizontal(classes="answer-row", id="answer-reason"):
                yield Label("reason:", classes="answer-label")
                yield Input(placeholder="required, kept in the decision log", id="reason", compact=True)
            if req.typed_why:
                yield Label(Text(f"{safe(req.typed_why)}: type the run id to confirm"))
                with Horizontal(classes="answer-row"):
                    yield Label("run id:", classes="answer-label")
                    yield Input(placeholder="run id", id="typed", compact=True)
            if req.proposal:
                yield Static(
                    Text(
                        "the store's policy lists answer: this is recorded as a proposal,"
                        " and takes effect once another account seconds it",
                        style="bold",
                    ),
                    id="policy",
                )
            yield Static(id="problem")
            yield Static(Text(f"Enter (in a text field) answer   Esc cancel   or: {req.cli}", style="dim"), id="hint")

    def _payload(self) -> Text:
        req = self.request
        text = Text()
        if req.cause is None:
            a = req.asked[0]
            text.append("payload: ", style="bold")
            # One line (it wraps): the form must fit 80x24 with its fields.
            text.append(a.payload_line or "none")
            return text
        for i, a in enumerate(req.asked):
            if i:
                text.append("\n")
            text.append(safe(a.run_id), style="bold")
            text.append(": " + (a.payload_line or "no payload"))
            if a.prompt != req.asked[0].prompt:
                text.append(f" ({safe(a.prompt)})")
        return text

    def on_mount(self) -> None:
        for box in self.query(Input):
            box.cursor_blink = False  # no animation; stable snapshots
        first = self.query("#field-0")
        (first.first() if first else self.query_one("#reason", Input)).focus()

    def _entries(self) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for i, f in enumerate(self.request.form.fields):
            w = self.query_one(f"#field-{i}")
            if isinstance(w, Checkbox):
                out[f.path] = w.value
            elif isinstance(w, Select):
                out[f.path] = None if w.is_blank() else str(w.value)
            elif isinstance(w, Input):
                out[f.path] = w.value
        return out

    def _failing(self, refused: str) -> str:
        """The field the engine's refusal names ("at details.size: ..."), else the first."""
        m = _AT.search(refused)
        top = m.group(1).split(".")[0].split("[")[0] if m else ""
        return self._field_of(top)

    def _field_of(self, path: str) -> str:
        index = next((i for i, f in enumerate(self.request.form.fields) if f.path == path), 0)
        return f"#field-{index}"

    @on(Checkbox.Changed)
    def _toggled(self, event: Checkbox.Changed) -> None:
        event.checkbox.label = _ticked(event.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.action_confirm()

    def action_confirm(self) -> None:
        """Turn the entries into an answer and have the engine check it against the question, off the UI thread;
        a refusal is shown at its field."""
        if self._checking:
            return
        req = self.request
        try:
            value = value_of(req.form, self._entries())
        except EntryError as exc:
            self._problem(f"! {exc}", self._field_of(exc.path))
            return
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            self._problem("! a reason is required", "#reason")
            return
        if req.typed_why and self.query_one("#typed", Input).value != req.run_id:
            self._problem("! type the run id exactly to confirm the answer", "#typed")
            return
        self._checking = True
        self.query_one("#problem", Static).update(Text("checking the answer against the question's schema..."))
        self.run_worker(partial(self._check_in_thread, value, reason), thread=True, exclusive=True, exit_on_error=False)

    def _check_in_thread(self, value: Any, reason: str) -> None:
        try:
            self._check(value)
        except PhasegateError as exc:
            self.post_message(self.Checked(value, reason, exc.message))
            return
        self.post_message(self.Checked(value, reason, None))

    def on_answer_modal_checked(self, message: Checked) -> None:
        self._checking = False
        if message.refused is not None:
            # Nothing is recorded: the form stays open on the first field.
            self._problem(f"! refused, nothing recorded: {safe(message.refused)}", self._failing(message.refused))
            return
        self.dismiss(AnswerResult(self.request, message.value, message.reason))

    def _problem(self, text: str, focus: str) -> None:
        self.query_one("#problem", Static).update(Text(text, style=tone("bold red")))
        found = self.query(focus)
        (found.first() if found else self.query_one("#reason", Input)).focus()

    def action_cancel(self) -> None:
        """Dismiss with nothing answered."""
        self.dismiss(None)
