"""What an action's modal says, from a fresh read of the run: each choice
with what the decision would do (the engine's preview), what to check first,
why the run id must be typed, and whether the store's policy makes it a
proposal. Nothing is written here (`deciding.py` writes)."""

from __future__ import annotations

import re
from dataclasses import replace

from phasegate import Action, DecisionView, Engine, PhasegateError, Preview, RunView, UsageError
from phasegate.ops import correctable_effects

from ._format import size
from .actions import BY_NAME, ActionRequest, Choice
from .offered import claimed_by_other, secondable


def proposal_line(d: DecisionView) -> str:
    """The console's words for a proposal: "waiting for a second operator:
    reset proposed by ada, decision 7, until ...: reason" (the account is in
    `phasegate status`)."""
    what = d.action + (f" {d.effect}" if d.effect else "") + (f" from {d.phase}" if d.phase else "")
    if d.assistant:
        # An AI assistant's (`phasegate mcp`): only a person's second makes it take effect.
        return (
            f"waiting for a person's second: {what} proposed by an AI assistant ({d.operator}),"
            f" decision {d.id}, until {str(d.expires_at or '-').replace('T', ' ').rstrip('Z')}: {d.reason}"
        )
    return (
        f"waiting for a second operator: {what} proposed by {d.operator},"
        f" decision {d.id}, until {str(d.expires_at or '-').replace('T', ' ').rstrip('Z')}: {d.reason}"
    )


def _sections(pv: Preview, view: RunView, effect: str | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    out = []
    if view.pending_decisions:
        # What this decision comes on top of: the operator must see it before overriding it.
        out.append(("already decided, pending", tuple(_pending(d) for d in view.pending_decisions)))
    if effect is not None and pv.action in ("confirm_effect", "retry_effect"):
        out.append(("check first", _check_first(view, effect)))
    confirmed = {d.effect for d in view.pending_decisions if d.action == "confirm_effect" and d.effect}
    again = [k for k in pv.effects_again if k not in confirmed]
    for label, items in (
        ("accepts", pv.accepts),
        ("re-runs", pv.rerun),
        ("may call again", again),
        ("sets aside", pv.discarded),
        ("keeps", pv.kept),
    ):
        if items:
            out.append((label, tuple(items)))
    if pv.env_hash:
        out.append(("env hash", (pv.env_hash,)))
    return tuple(out)


def _pending(d: DecisionView) -> str:
    what = d.action + (f" {d.effect}" if d.effect else "") + (f" from {d.phase}" if d.phase else "")
    return f"{what} by {d.operator} (decision {d.id}): {d.reason}"


def _check_first(view: RunView, key: str) -> tuple[str, ...]:
    """How to find out whether the effect happened, before answering for it:
    its key in the outside system, and the workflow's runbook for it."""
    eff = next((e for e in view.effects if e.key == key), None)
    lines = [f"look key {key} up in the target system"]
    if eff is not None and eff.reconcile is not None:
        answer = eff.reconcile
        why = f": {answer.get('why')}" if answer.get("why") else ""
        lines.append(f"its reconcile hook last answered {answer.get('answer')}{why}")
    if eff is not None and not eff.idempotent:
        lines.append("its target does not deduplicate: a retry of a charge that happened charges twice")
    lines += [str(b.get("runbook")) for b in view.runbooks if b.get("kind") == "in_doubt_effect" and b.get("runbook")]
    return tuple(lines)


def _typed_why(view: RunView, name: str, effect: str | None, claim: str = "") -> str:
    """Why the operator must type the run id to confirm; empty when Enter will do.
    `claim`: someone else's claim on the run, as the console says it."""
    if claim:
        return claim
    if name == "reset":
        return "this discards work"
    if name == "cancel":
        return "a cancel is final"
    if name == "retry_effect":
        eff = next((e for e in view.effects if e.key == effect), None)
        if eff is not None and not eff.idempotent:
            return "the target does not deduplicate"
    if view.pending_decisions:
        return "a decision is already pending"
    return ""


#: The console's actions that are decisions (a policy can ask a second for them).
DECISIONS: dict[str, Action] = {str(a): a for a in Action}


def proposal_words(engine: Engine, name: str, runs: int = 1) -> str:
    """What a modal says when the store's policy makes the decision `name` a
    proposal (empty when it applies as decided): before Enter, not after."""
    if name not in DECISIONS or not engine.oversight.policy().needs_second(DECISIONS[name]):
        return ""
    them = "it" if runs == 1 else "them"
    return (
        f"the store's policy needs a second operator for {name}: Enter records a PROPOSAL;"
        f" nothing happens to the run until another account seconds {them} (key 2 there)"
    )


def name_pattern(name: str) -> str:
    """An effect name with its varying part taken out: digits become "#" and
    what follows its last ":" or "/" goes ("charge:inv-7" -> "charge:")."""
    cut = max(name.rfind(":"), name.rfind("/"))
    return name[: cut + 1] if cut > 0 else re.sub(r"[0-9]+", "#", name)


def sibling_result(view: RunView, key: str) -> tuple[str, str] | None:
    """The result a sibling of effect `key` recorded (same phase, same name
    pattern, done), the latest first: what a confirmation's result usually
    looks like. (its name, JSON text), or None when no sibling recorded one."""
    eff = next((e for e in view.effects if e.key == key), None)
    if eff is None:
        return None
    pattern = name_pattern(eff.name)
    done = [
        e
        for e in view.effects
        if e.key != key
        and e.phase == eff.phase
        and e.state == "done"
        and e.result_text is not None
        and name_pattern(e.name) == pattern
    ]
    if not done:
        return None
    last = max(done, key=lambda e: e.done_at or "")
    return last.name, str(last.result_text)


def build_request(engine: Engine, run_id: str, name: str, now: float = 0.0) -> ActionRequest:
    """What the modal for `name` on `run_id` will say, from a fresh read
    (`now`: the console's clock, for how long ago someone claimed the run)."""
    request = _build_request(engine, run_id, name, now)
    proposal = proposal_words(engine, name)
    return replace(request, proposal=proposal) if proposal else request


def _build_request(engine: Engine, run_id: str, name: str, now: float) -> ActionRequest:
    spec = BY_NAME[name]
    view = engine.status(run_id)
    override = claimed_by_other(engine, view)
    held = view.claim
    claim = held.said(now) if override and held is not None else ""
    if name == "second":
        return _second_request(engine, view, claim)
    if name == "prune":
        cands = view.prune_candidates
        total = sum(c.bytes for c in cands)
        items = tuple(f"{c.what} ({size(c.bytes)}): {c.why_safe}" for c in cands)
        summary = f"Prune {len(cands)} item(s), {size(total)}, from this run. Archived items are read back and hash-matched first."
        return ActionRequest(spec, run_id, (Choice(None, "", summary, (("removes", items),)),))
    if name == "rewind":
        phases = [p.name for p in view.phases if p.done]
        choices = tuple(_choice(view, engine.preview(view, name, phase=p), p, p) for p in phases)
        why = _typed_why(view, name, None, claim)
        return ActionRequest(
            spec,
            run_id,
            choices,
            choose="phase",
            default=max(len(choices) - 1, 0),
            type_run_id=bool(why),
            typed_why=why,
            override_claim=override,
        )
    if name in ("confirm_effect", "retry_effect"):
        keys = [e.key for e in view.effects if e.state == "in_doubt"]
        # a damaged record the operator answers, and a person's confirmation
        # to correct (confirm) or take back (retry)
        keys += [
            str(b.get("effect"))
            for b in view.blocked
            if b["kind"] == "integrity" and b.get("what") == "effect" and b.get("effect", "?") != "?"
        ]
        keys += [k for k in correctable_effects(view) if k not in keys]
        ask = name == "confirm_effect"
        if len(keys) > 1:
            choices = tuple(_choice(view, engine.preview(view, name, effect=k), k, k, effect=k) for k in keys)
            # One typed confirmation covers every choice: ask it if any choice needs it.
            why = next((w for w in (_typed_why(view, name, k, claim) for k in keys) if w), "")
            return ActionRequest(
                spec,
                run_id,
                choices,
                choose="effect",
                type_run_id=bool(why),
                typed_why=why,
                ask_result=ask,
                override_claim=override,
            )
        only = keys[0] if keys else None
        why = _typed_why(view, name, only, claim)
        pv = engine.preview(view, name, effect=only)
        return ActionRequest(
            spec,
            run_id,
            (_choice(view, pv, only, only or "", effect=only),),
            type_run_id=bool(why),
            typed_why=why,
            ask_result=ask,
            override_claim=override,
        )
    pv = engine.preview(view, name)
    why = _typed_why(view, name, None, claim)
    choice = _choice(view, pv, None, "")
    if engine.oversight.policy().needs_second(Action(name)):
        # Said before the operator confirms, not only in the notice after.
        said = f"lists {name}: this is recorded as a proposal, and takes effect once another account seconds it"
        choice = Choice(choice.value, choice.label, choice.summary, (*choice.sections, ("the store's policy", (said,))))
    return ActionRequest(spec, run_id, (choice,), type_run_id=bool(why), typed_why=why, override_claim=override)


def _second_request(engine: Engine, view: RunView, claim: str) -> ActionRequest:
    """The modal of a second: each proposal this operator may second, with
    who proposed it and what it would do (previewed against the run now)."""
    props = secondable(engine, view)
    if not props:
        raise UsageError(f"run {view.run_id} has no proposal from another account to second")
    choices = []
    for d in props:
        try:
            pv = engine.preview(view, d.action, phase=d.phase, effect=d.effect)
            what, sections = pv.summary, _sections(pv, view, d.effect)
        except PhasegateError as exc:
            what, sections = f"it no longer fits the run ({exc.message}): seconding is refused", ()
        said = f"{proposal_line(d)}. {what}"
        choices.append(Choice(str(d.id), f"decision {d.id}: {d.action} by {d.operator}", said, sections))
    why = claim
    return ActionRequest(
        BY_NAME["second"],
        view.run_id,
        tuple(choices),
        choose="proposal" if len(choices) > 1 else "",
        type_run_id=bool(why),
        typed_why=why,
        override_claim=bool(why),
    )


def _choice(view: RunView, pv: Preview, value: str | None, label: str, *, effect: str | None = None) -> Choice:
    sibling = sibling_result(view, effect) if effect is not None and pv.action == "confirm_effect" else None
    return Choice(
        value,
        label,
        pv.summary,
        _sections(pv, view, effect),
        expect_env=pv.env_hash,
        template=sibling[1] if sibling else "",
        template_from=sibling[0] if sibling else "",
    )
