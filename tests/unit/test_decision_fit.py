"""The one fit rule (`decisions.fit`) and what `allowed_actions` and
`preview` derive from it, over hand-built views: no database."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from phasegate import (
    Action,
    AlreadyDecided,
    DecisionError,
    DecisionView,
    EffectState,
    EffectView,
    Frontier,
    LeaseView,
    PhaseState,
    PhaseView,
    RunStatus,
    RunView,
    UsageError,
)
from phasegate.decide.fit import allowed_actions, env_hash, fit
from phasegate.decide.preview import preview
from phasegate.states import HOLDS


def phase(name: str, state: PhaseState = PhaseState.DONE) -> PhaseView:
    return PhaseView(name, state, (), (), (), (), 1 if state is PhaseState.DONE else None)


def effect(key: str, state: EffectState = EffectState.IN_DOUBT) -> EffectView:
    name = key.rsplit("/", 1)[-1]
    return EffectView(name, key, "charge", state, 1, False, False, False, None, None, None)


def view(status: RunStatus, **kw: Any) -> RunView:
    base = RunView(
        run_id="r1",
        workflow="billing",
        status=status,
        target=None,
        inputs={},
        created_at=0.0,
        updated_at=0.0,
        last_checkpoint_at=None,
        frontier=Frontier("charge", 1, 3, 0),
        phases=(phase("load"), phase("charge", PhaseState.PARTIAL), phase("report", PhaseState.OPEN)),
        blocked=(),
        env=(),
        effects=(),
        decisions=(),
        prune_candidates=(),
        outputs=(),
        integrity=(),
        lease=None,
        error=None,
        notes=(),
        attention="",
    )
    return dataclasses.replace(base, **kw)


ENV = {"kind": "env_mismatch", "detail": "rates", "changes": [{"probe": "rates", "saved": "v1", "current": "v2"}]}
DOUBT = {"kind": "in_doubt_effect", "detail": "charge", "effect": "r1/charge/charge:inv-1"}


def test_approve_fits_an_env_mismatch_and_records_the_values_seen() -> None:
    v = view(RunStatus.BLOCKED, blocked=(ENV,))
    chosen = fit(v, "approve")
    assert chosen.answers == "env_mismatch"
    assert chosen.detail == {"accepted": [{"probe": "rates", "current": "v2"}], "env_hash": env_hash(v)}
    assert allowed_actions(v) == [Action.APPROVE, Action.REWIND, Action.RESET]


def test_approve_is_refused_when_the_values_differ_from_the_preview() -> None:
    v = view(RunStatus.BLOCKED, blocked=(ENV,))
    seen = env_hash(v)
    assert seen is not None and fit(v, "approve", expect_env=seen).detail["env_hash"] == seen
    with pytest.raises(DecisionError, match="moved since the preview"):
        fit(v, "approve", expect_env="0123456789abcdef")
    with pytest.raises(UsageError, match="for approve"):
        fit(v, "reset", expect_env=seen)


def test_what_does_not_fit_is_refused_with_the_reason() -> None:
    v = view(RunStatus.FAILED)
    with pytest.raises(DecisionError, match="approve does not fit run 'r1': it is failed, not blocked"):
        fit(v, "approve")
    with pytest.raises(UsageError, match="unknown action"):
        fit(v, "frobnicate")
    with pytest.raises(UsageError, match="has no phase 'nosuch'"):
        fit(v, "rewind", phase="nosuch")
    with pytest.raises(UsageError, match="rewind needs the phase to re-run from") as missing:
        fit(v, "rewind")
    assert missing.value.options == ("phase",)


def test_a_live_holder_refuses_every_decision_but_a_hold() -> None:
    v = view(RunStatus.RUNNING, lease=LeaseView("host:1", None, True, None))
    for act in Action:
        if act in HOLDS or act is Action.ANSWER:
            continue
        with pytest.raises(DecisionError, match="is running"):
            fit(v, act, phase="load")
    assert allowed_actions(v) == []
    # A pause or a cancel is asked of the running process (run/holds.py).
    assert fit(v, "pause").action is Action.PAUSE
    assert fit(v, "cancel").action is Action.CANCEL
    with pytest.raises(DecisionError, match="not paused"):
        fit(v, "unpause")


def test_an_effect_answer_names_one_effect_in_doubt() -> None:
    v = view(RunStatus.BLOCKED, blocked=(DOUBT,), effects=(effect(DOUBT["effect"]),))
    assert fit(v, "confirm_effect").effect_key == DOUBT["effect"]
    assert fit(v, "retry_effect", effect="charge:inv-1").effect_key == DOUBT["effect"]
    with pytest.raises(DecisionError, match="is not in doubt"):
        fit(v, "confirm_effect", effect="nosuch")
    # An interrupted run's doubts can be answered before the next start asks.
    dead = view(RunStatus.INTERRUPTED, effects=(effect(DOUBT["effect"]),))
    assert Action.CONFIRM_EFFECT in allowed_actions(dead)


def test_a_pending_answer_makes_a_second_one_already_decided() -> None:
    first = DecisionView(5, "approve", "ada", "ok", None, "pending", None, None, "env_mismatch", None)
    v = view(RunStatus.BLOCKED, blocked=(ENV,), pending_decisions=(first,), decisions=(first,))
    with pytest.raises(AlreadyDecided, match="approve by ada"):
        fit(v, "approve")
    assert Action.APPROVE not in allowed_actions(v)


def test_preview_refuses_what_decide_refuses_and_says_what_a_fit_does() -> None:
    v = view(RunStatus.BLOCKED, blocked=(ENV,))
    with pytest.raises(DecisionError):
        preview(v, "degrade")
    pv = preview(v, "rewind", phase="load")
    assert pv.rerun == ["load", "charge", "report"]
    assert preview(v, "approve").summary.startswith("Accept the changed environment (rates)")


def test_reset_fits_anything_but_a_reset_run() -> None:
    assert fit(view(RunStatus.COMPLETED), "reset").action is Action.RESET
    with pytest.raises(AlreadyDecided):
        fit(view(RunStatus.RESET), "reset")


@pytest.mark.parametrize(
    "status,blocked,action,kw,options",
    [
        (RunStatus.FAILED, (), "rewind", {}, ("phase",)),
        (RunStatus.FAILED, (), "rewind", {"phase": "nosuch"}, ("phase",)),
        (RunStatus.FAILED, (), "reset", {"phase": "load"}, ("phase",)),
        (RunStatus.FAILED, (), "reset", {"effect": "x"}, ("effect",)),
        (RunStatus.FAILED, (), "degrade", {"result": 1}, ("result",)),
        (RunStatus.FAILED, (), "pause", {"phase": "load"}, ("phase",)),
        (RunStatus.FAILED, (), "reset", {"expect_env": "abc"}, ("expect_env",)),
        (RunStatus.FAILED, (), "reset", {"question": "q"}, ("question", "value")),
        (RunStatus.BLOCKED, (DOUBT, {**DOUBT, "effect": "r1/charge/charge:inv-2"}), "confirm_effect", {}, ("effect",)),
        (RunStatus.BLOCKED, (DOUBT,), "retry_effect", {"effect": "nosuch"}, ("effect",)),
        (RunStatus.BLOCKED, (ENV,), "approve", {"expect_env": "0123456789abcdef"}, ("dry_run",)),
    ],
)
def test_a_refusal_names_no_flag_and_carries_the_option_it_is_about(status, blocked, action, kw, options) -> None:
    """The console and the API show the core's words; the command line adds
    the flags from `options` (cli/render.with_flags)."""
    from phasegate.cli.render import with_flags

    effects = tuple(effect(str(b["effect"])) for b in blocked if b["kind"] == "in_doubt_effect")
    v = view(status, blocked=blocked, effects=effects)
    with pytest.raises((UsageError, DecisionError)) as refused:
        fit(v, action, **kw)
    assert refused.value.options == options
    assert "--" not in refused.value.message, refused.value.message
    assert with_flags(refused.value.message, refused.value.options).endswith(")")
    assert "--" in with_flags(refused.value.message, refused.value.options)
