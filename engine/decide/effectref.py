"""Which effect an operator's `--effect` names: exactly one, or a refusal.

An effect's key is `run/phase/name`. Matching a key by its ending and taking
the first hit could confirm or retry the wrong effect (`b` is the ending of
both `r/p/b` and `r/p/a/b`), and an operator's decision about money must not
be a guess. So `--effect` is the full key, or `phase/name`, or the name, and
it must name exactly one of the candidates; otherwise the decision is refused
with the candidates listed."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import DecisionError, UsageError


def _parts(run_id: str, key: str) -> tuple[str, str]:
    """(`phase/name`, name) of a key of this run; phase names hold no "/"."""
    rest = key.removeprefix(f"{run_id}/")
    _phase, _sep, name = rest.partition("/")
    return rest, name


def resolve(run_id: str, keys: Sequence[str], effect: str, *, what: str = "in doubt") -> str:
    """The one key among `keys` that `effect` names: the key itself, else the
    only key whose `phase/name` or name is `effect`."""
    if effect in keys:
        return effect
    hits = [k for k in keys if effect in _parts(run_id, k)]
    if len(hits) == 1:
        return hits[0]
    listed = ", ".join(keys) or "none"
    if hits:
        raise UsageError(
            f"effect {effect!r} names {len(hits)} effects of run {run_id!r} ({', '.join(hits)}); give the full key",
            options=("effect",),
        )
    raise DecisionError(f"effect {effect!r} is not {what} in run {run_id!r}; {what}: {listed}", options=("effect",))


__all__ = ["resolve"]
