"""The code behind a drift: phase sources kept by fingerprint, and the diff
between the code a run's checkpoints were made with and the code its latest
start brought.

A phase's source (the text its fingerprint covers, `Phase.source`) is
stored once per distinct fingerprint when a checkpoint of it is written, and
again when a start finds that a done phase's code changed, so both sides of
the drift are in the store and anyone can read the diff without the code.
"""

from __future__ import annotations

import difflib
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..outcome import BlockReason
from ..safetext import safe
from .workflow import Phase, Workflow

if TYPE_CHECKING:  # SQLAlchemy only where a store is written: the views import this module without it
    from ..store.store import Connection, Store

#: Fingerprints each open store is known to hold: after the first checkpoint
#: of a phase, the check costs a set look-up, not a query.
_known: weakref.WeakKeyDictionary[Store, set[str]] = weakref.WeakKeyDictionary()

#: Lines of context around each change.
CONTEXT = 3


def remember(
    store: Store, phases: Iterable[Phase], clock: Callable[[], float] = time.time, *, needed: Phase | None = None
) -> None:
    """Store the source of each phase whose fingerprint the store lacks.
    With `needed` (the phase being checkpointed), nothing is done when its
    fingerprint is known; when it is not, all of `phases` are stored in the
    same transaction, so a run costs one extra commit, not one per phase."""
    db = store.db  # once: this runs at every checkpoint
    if db.readonly or db.schema_problem or "phasegate_sources" not in db.tables:
        return
    known = _known.setdefault(store, set())
    if needed is not None and needed.code_hash in known:
        return
    todo = {p.code_hash: p.source for p in phases if p.code_hash not in known and p.source}
    if not todo:
        return
    from ..store.store import Duplicate  # loaded already: the store is open

    try:
        with store.write() as conn:
            have = store.sources.known(conn, list(todo))
            for code_hash, text in todo.items():
                if code_hash not in have:
                    store.sources.add(conn, code_hash, text, clock())
    except Duplicate:
        pass  # another process stored the same fingerprint at the same moment: it is there
    known.update(todo)


def remember_drift(store: Store, wf: Workflow, blocks: Sequence[BlockReason]) -> None:
    """At a start that finds done phases' code changed: keep the new code too."""
    changed = {str(c["probe"])[5:] for c in code_changes([b.as_dict() for b in blocks])}
    if changed:
        remember(store, [p for p in wf.phases if p.name in changed])


@dataclass(frozen=True)
class CodeDiff:
    """One code change that blocks a run: saved (what its checkpoints ran)
    against current (what the run's latest start brought)."""

    phase: str
    """The phase whose code changed."""
    ran_old_code: tuple[str, ...]
    """The done phases whose checkpoints were made with the saved code."""
    saved: str
    """The fingerprint of the code its checkpoints ran."""
    current: str
    """The fingerprint of the code the run's latest start brought."""
    lines: tuple[str, ...]
    """The unified diff, escaped, each line numbered (old, new); empty when a side was not stored."""
    missing: tuple[str, ...] = ()
    """Fingerprints whose source is not in the store (written before sources were kept)."""

    def as_dict(self) -> dict[str, Any]:
        """The change as `status --json`'s `code_diffs` prints it.

        Returns:
            `phase`, `ran_old_code`, `saved`, `current`, `diff` (the lines) and `missing`.
        """
        return {
            "phase": self.phase,
            "ran_old_code": list(self.ran_old_code),
            "saved": self.saved,
            "current": self.current,
            "diff": list(self.lines),
            "missing": list(self.missing),
        }


def code_changes(blocked: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The code changes among a blocked run's reasons (stored data: only
    well-formed entries count)."""
    out = []
    for b in blocked:
        if b.get("kind") != "env_mismatch":
            continue
        for c in b.get("changes") or []:
            if (
                isinstance(c, Mapping)
                and str(c.get("probe", "")).startswith("code:")
                and isinstance(c.get("saved"), str)
                and isinstance(c.get("current"), str)
            ):
                out.append(c)
    return out


def diffs(store: Store, conn: Connection, blocked: Sequence[Mapping[str, Any]]) -> list[CodeDiff]:
    """The diffs behind the code changes among `blocked`, read on `conn`."""
    changes = code_changes(blocked)
    if not changes:
        return []
    hashes = sorted({c["saved"] for c in changes} | {c["current"] for c in changes})
    texts = store.sources.get(conn, hashes)
    out = []
    for c in changes:
        phase = str(c["probe"])[5:]
        ran = tuple(str(p) for p in (c.get("phases") or [phase]) if isinstance(p, str))
        missing = tuple(h for h in (c["saved"], c["current"]) if h not in texts)
        lines: tuple[str, ...] = ()
        if not missing:
            lines = tuple(
                numbered_diff(texts[c["saved"]], texts[c["current"]], f"saved {c['saved']}", f"current {c['current']}")
            )
        out.append(CodeDiff(phase, ran, c["saved"], c["current"], lines, missing))
    return out


def numbered_diff(old: str, new: str, old_label: str, new_label: str) -> list[str]:
    """A unified diff whose lines carry their old and new line numbers:
    `  12   13    text`, `  14      - text`, `       15 + text`."""
    a, b = old.splitlines(), new.splitlines()
    out = [f"--- {old_label}", f"+++ {new_label}"]
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                for k in range(x2 - x1):
                    out.append(f"{x1 + k + 1:>5} {y1 + k + 1:>5}   {printable(a[x1 + k])}")
                continue
            for k in range(x1, x2):
                out.append(f"{k + 1:>5} {'':>5} - {printable(a[k])}")
            for k in range(y1, y2):
                out.append(f"{'':>5} {k + 1:>5} + {printable(b[k])}")
    return out


def printable(line: str) -> str:
    """A stored line of code shown on a terminal: tabs expanded, then made
    safe (`safetext.safe`: control characters, escape sequences and bidi
    overrides become visible escapes).

    Args:
        line: One line of stored source.

    Returns:
        The line, safe to print.
    """
    return safe(line.expandtabs(4))
