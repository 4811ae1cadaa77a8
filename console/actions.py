"""The operator's actions: one table that the bindings, the help screen, the
command palette and the modals all read, so they cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ConsoleActionName = Literal[
    "answer",
    "approve",
    "degrade",
    "rewind",
    "reset",
    "confirm_effect",
    "retry_effect",
    "pause",
    "unpause",
    "cancel",
    "prune",
    "second",
]


@dataclass(frozen=True)
class ActionSpec:
    """One of the console's actions on a run: its key, its words and its command-line twin."""

    name: ConsoleActionName
    """The action's name: a decision (`Action`), a hold, "second" or "prune"."""
    key: str
    """The key that opens its modal (its binding is `binding_id`, so it can be rebound)."""
    label: str
    """As the command palette names it, after "run: "."""
    help: str
    """One line on what it does, for help and the palette."""
    cli: str
    """The command-line twin, so nothing can only be done in the console."""

    @property
    def word(self) -> str:
        """The footer's one word for it ("Confirm"), so the footer fits 80 columns."""
        return self.label.split()[0].capitalize()

    @property
    def binding_id(self) -> str:
        """The id of its key binding ("run.NAME"), by which a user rebinds it."""
        return f"run.{self.name}"


ACTIONS: tuple[ActionSpec, ...] = (
    # First: a run that asked a question is waiting for a person.
    ActionSpec(
        "answer",
        "i",
        "answer question",
        "answer the question the run waits on (a form from its schema; checked before it is recorded)",
        "phasegate decide RUN answer --question NAME --value JSON --reason ...",
    ),
    ActionSpec(
        "approve",
        "a",
        "approve resume",
        "accept the changed environment and resume",
        "phasegate decide RUN approve --reason ...",
    ),
    ActionSpec(
        "degrade",
        "d",
        "degrade",
        "continue without what is lost or untrusted",
        "phasegate decide RUN degrade --reason ...",
    ),
    ActionSpec(
        "rewind",
        "w",
        "rewind",
        "re-run from a phase you choose",
        "phasegate decide RUN rewind --phase NAME --reason ...",
    ),
    ActionSpec(
        "reset", "r", "reset", "archive every checkpoint and start over", "phasegate decide RUN reset --reason ..."
    ),
    ActionSpec(
        "confirm_effect",
        "c",
        "confirm effect",
        "record an in-doubt effect as done (it happened), with its result",
        "phasegate decide RUN confirm_effect --effect KEY --result JSON --reason ...",
    ),
    ActionSpec(
        "retry_effect",
        "t",
        "retry effect",
        "call an in-doubt effect again with its idempotency key",
        "phasegate decide RUN retry_effect --effect KEY --reason ...",
    ),
    ActionSpec(
        "second",
        "2",
        "second proposal",
        "second another operator's proposed decision (the store's policy needs two accounts)",
        "phasegate decide RUN second --decision N --reason ...",
    ),
    # pause, unpause and prune share `p`: one fits a run at a time in the
    # common case (pause a run that goes on, unpause a paused one, prune a
    # finished one); where pause and prune both fit, `p` pauses and the
    # command palette prunes.
    ActionSpec(
        "pause",
        "p",
        "pause",
        "pause the run: a running one stops at its next step; only unpause resumes it",
        "phasegate pause RUN --reason ...",
    ),
    ActionSpec(
        "unpause",
        "p",
        "unpause",
        "put a paused run back where it was (a worker takes it up again)",
        "phasegate unpause RUN --reason ...",
    ),
    ActionSpec(
        "cancel",
        "x",
        "cancel run",
        "cancel the run, for good (a running one stops at its next step); the run id typed to confirm",
        "phasegate cancel RUN --reason ...",
    ),
    ActionSpec(
        "prune",
        "p",
        "prune",
        "remove what is safe to prune from this run",
        "phasegate prune --apply --run-id RUN --reason ...",
    ),
)

BY_NAME: dict[str, ActionSpec] = {a.name: a for a in ACTIONS}
KEYED: dict[str, tuple[ActionSpec, ...]] = {
    k: tuple(a for a in ACTIONS if a.key == k) for k in dict.fromkeys(a.key for a in ACTIONS)
}
"""Each key's actions, in the order its bindings are tried (the first that fits acts)."""
BY_KEY: dict[str, ActionSpec] = {k: specs[0] for k, specs in KEYED.items()}
"""Each key's first action (`p`: pause), named when none of its actions fits."""


@dataclass(frozen=True)
class Choice:
    """One option of an action (a phase to rewind to, an effect to confirm),
    with what choosing it would do."""

    value: str | None
    """What choosing it passes to the engine (a phase, an effect key), or None."""
    label: str
    """How the modal names it."""
    summary: str
    """What the decision would do, in a sentence (the engine's preview)."""
    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(heading, items) pairs: "accepts", "re-runs", "may call again", "sets aside", "keeps"."""
    expect_env: str | None = None
    """For an approval: the hash of the values shown, so the engine refuses
    it if the run was blocked on other values since the modal was read."""
    template: str = ""
    """For a confirmation: the result a sibling effect recorded (JSON text),
    offered as the shape of this one's (`service.sibling_result`)."""
    template_from: str = ""
    """Which effect recorded it (its name and key), said beside the field."""


@dataclass(frozen=True)
class ActionRequest:
    """Everything the confirmation modal shows; built off the UI thread."""

    spec: ActionSpec
    """The action."""
    run_id: str
    """The run it acts on."""
    choices: tuple[Choice, ...]
    """The options, each with what it would do (one when there is nothing to choose)."""
    choose: str = ""
    """What the operator picks among `choices` ("phase", "effect"); empty when there is one."""
    default: int = 0
    """The index of the option selected first."""
    type_run_id: bool = False
    """The operator types the run id to confirm: a reset (it discards work),
    a retry against a target that does not deduplicate, and any decision on
    top of a pending one. Enter alone does the rest."""
    typed_why: str = "this discards work"
    """Why typing is asked, said beside the field."""
    ask_result: bool = False
    """A confirmation records the effect's result: the operator gives it as JSON."""
    result_hint: str = ""
    """What the result field starts with (what the outside system reported, when known)."""
    override_claim: bool = False
    """Someone else claimed the run: confirming (the run id typed) acts anyway."""
    proposal: str = ""
    """Said when the store's policy makes this decision a proposal that waits
    for a second operator; empty when it applies as decided."""


@dataclass(frozen=True)
class ActionResult:
    """What the operator confirmed."""

    spec: ActionSpec
    """The action confirmed."""
    run_id: str
    """The run it acts on."""
    reason: str
    """Why, in the operator's words (stored forever with the decision)."""
    choice: str | None = None
    """The phase (rewind) or effect key (confirm/retry) chosen, if any."""
    result_json: str | None = None
    """A confirmation's result, as the JSON text the operator typed."""
    expect_env: str | None = None
    """For an approval: the env hash of the preview the operator confirmed."""
    override_claim: bool = False
    """The operator confirmed acting on a run someone else claimed."""
