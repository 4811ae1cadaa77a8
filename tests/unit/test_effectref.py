"""`--effect` names exactly one effect, or the decision is refused."""

from __future__ import annotations

import pytest

from phasegate import DecisionError, UsageError
from phasegate.decide.effectref import resolve

KEYS = ["r/pay/a/b", "r/pay/b", "r/ship/b", "r/ship/c"]


@pytest.mark.parametrize(
    "effect,key",
    [("r/pay/b", "r/pay/b"), ("pay/b", "r/pay/b"), ("a/b", "r/pay/a/b"), ("pay/a/b", "r/pay/a/b"), ("c", "r/ship/c")],
)
def test_one_match(effect: str, key: str) -> None:
    assert resolve("r", KEYS, effect) == key


def test_a_name_in_two_phases_is_refused_with_both_listed() -> None:
    with pytest.raises(UsageError, match=r"names 2 effects.*r/pay/b, r/ship/b"):
        resolve("r", KEYS, "b")


def test_a_mere_ending_is_no_match() -> None:
    with pytest.raises(DecisionError, match="not in doubt.*r/pay/a/b"):
        resolve("r", ["r/pay/a/b"], "b")
