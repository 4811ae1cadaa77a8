"""The grouping rules of causes.py, on block reasons and errors as the engine stores them."""

from __future__ import annotations

from phasegate.decide.causes import CauseKind, Grouping, cause_id, is_cause_id, mask, reasons, signature
from phasegate.states import Action, RunStatus


def _env(probe: str, saved: object, current: object) -> dict[str, object]:
    return {
        "kind": "env_mismatch",
        "detail": "...",
        "changes": [{"probe": probe, "saved": saved, "current": current, "changed": True, "phases": ["price"]}],
    }


def test_mask_hides_what_differs_from_run_to_run() -> None:
    assert mask("invoice 1042 timed out after 30.5s") == "invoice <n> timed out after <n>s"
    assert mask("request 0xdeadBEEF failed") == "request <hex> failed"
    assert mask("object at deadbeef12 gone") == "object at <hex> gone"
    assert mask("id 123e4567-e89b-12d3-a456-426614174000 missing") == "id <id> missing"
    # A word of hex letters alone is a word, not an id.
    assert mask("cafe  decade   faded") == "cafe decade faded"


def test_the_same_probe_change_is_one_cause_and_another_value_is_another() -> None:
    a = reasons("r1", RunStatus.BLOCKED, [_env("tax", "v1", "v2")], None)
    b = reasons("r2", RunStatus.BLOCKED, [_env("tax", "v1", "v2")], None)
    c = reasons("r3", RunStatus.BLOCKED, [_env("tax", "v1", "v3")], None)
    assert signature(a) == signature(b) != signature(c)
    assert a[0].kind is CauseKind.PROBE_CHANGE
    assert a[0].summary == "probe tax changed: v1 -> v2"


def test_code_change_and_age_are_grouped_by_what_runs_share() -> None:
    code = reasons("r1", RunStatus.BLOCKED, [_env("code:price", "abc", "def")], None)
    assert code[0].kind is CauseKind.CODE_CHANGE and code[0].key == ("code", "price", "abc", "def")
    # The age differs per run; the limit it passed is what they share.
    old1 = reasons("r1", RunStatus.BLOCKED, [_env("age", "<= 60s", "61.2s")], None)
    old2 = reasons("r2", RunStatus.BLOCKED, [_env("age", "<= 60s", "3600s")], None)
    assert signature(old1) == signature(old2)


def test_exceptions_in_doubt_effects_and_integrity() -> None:
    f1 = reasons("r1", RunStatus.FAILED, [], {"phase": "fetch", "type": "HTTPError", "message": "404 for /a/17"})
    f2 = reasons("r2", RunStatus.FAILED, [], {"phase": "fetch", "type": "HTTPError", "message": "404 for /a/9"})
    assert signature(f1) == signature(f2) and f1[0].summary == "HTTPError: <n> for /a/<n>"
    d1 = reasons("r1", RunStatus.BLOCKED, [{"kind": "in_doubt_effect", "effect": "r1/charge/charge:inv-1"}], None)
    d2 = reasons("r2", RunStatus.INTERRUPTED, [], None, [("r2/charge/charge:inv-1", "charge", "charge:inv-1")])
    assert signature(d1) == signature(d2) == (["in_doubt_effect", "charge", "charge:inv-1"],)
    i1 = reasons("r1", RunStatus.BLOCKED, [{"kind": "integrity", "failure": {"what": "chain", "seq": 3}}], None)
    i2 = reasons("r2", RunStatus.BLOCKED, [{"kind": "integrity", "failure": {"what": "chain", "seq": 7}}], None)
    assert signature(i1) == signature(i2) and i1[0].kind is CauseKind.INTEGRITY


def test_an_interrupted_run_with_nothing_in_doubt_is_its_own_kind() -> None:
    (r,) = reasons("r1", RunStatus.INTERRUPTED, [], None)
    assert r.kind is CauseKind.INTERRUPTED


def test_a_cause_keeps_the_actions_every_run_allows_and_its_id_is_stable() -> None:
    g = Grouping()
    found = reasons("a", RunStatus.BLOCKED, [_env("tax", "v1", "v2")], None)
    g.add("b", "billing", found, [Action.APPROVE, Action.REWIND, Action.RESET])
    g.add("a", "billing", found, [Action.APPROVE, Action.RESET])
    g.add("z", "other", reasons("z", RunStatus.FAILED, [], {"type": "E", "message": "x"}), [Action.RESET])
    big, small = g.causes()
    assert big.runs == ("a", "b") and big.allowed_actions == (Action.APPROVE, Action.RESET)
    assert big.cause == cause_id(signature(found)) and is_cause_id(big.cause)
    assert small.runs == ("z",) and small.kind is CauseKind.EXCEPTION
    assert set(big.to_json()) >= {"cause", "kind", "summary", "runs", "allowed_actions"}


def test_several_reasons_name_the_cause_by_the_first_to_look_at() -> None:
    found = reasons(
        "r1",
        RunStatus.BLOCKED,
        [_env("tax", "v1", "v2"), {"kind": "integrity", "what": "effect", "effect": "r1/charge/x"}],
        None,
    )
    g = Grouping()
    g.add("r1", "billing", found, [Action.RESET])
    (c,) = g.causes()
    assert c.kind is CauseKind.INTEGRITY and c.summary.endswith("(and 1 more reason(s))")
