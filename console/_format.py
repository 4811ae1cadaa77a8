"""How the console words states: every state has a word and an ASCII mark,
so nothing depends on colour (NO_COLOR, 16-colour terminals, screen readers)."""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text

from phasegate.ops import safe

#: Run status -> (mark, style). The word is always printed beside the mark.
RUN_MARKS: dict[str, tuple[str, str]] = {
    "blocked": ("!!", "bold yellow"),
    "failed": ("XX", "bold red"),
    "interrupted": ("~~", "bold yellow"),
    "stalled": ("||", "bold yellow"),
    "running": (">>", "cyan"),
    "completed": ("ok", "green"),
    "reset": ("<<", "magenta"),
    "decided": ("=>", "bold cyan"),
    "waiting": ("..", "cyan"),
    "paused": ("==", "bold magenta"),
    "cancelled": ("--", "dim"),
}
""""decided" is not a stored status: a stopped run whose operator decision
waits to be carried out (by the worker or `phasegate resume`)."""

#: Phase state -> (mark, style) for the frontier strip.
PHASE_MARKS: dict[str, tuple[str, str]] = {
    "done": ("[x]", "green"),
    "partial": ("[~]", "bold yellow"),
    "open": ("[ ]", ""),
    "failed": ("[!]", "bold red"),
    "degraded": ("[-]", "yellow"),
}

EFFECT_MARKS: dict[str, tuple[str, str]] = {
    "done": ("ok", "green"),
    "intent": ("..", ""),
    "in_doubt": ("??", "bold red"),
}


def plain(value: Any, style: str = "") -> Text:
    """Text from the store, shown literally: never parsed as markup, and made
    safe (control characters, escape sequences and bidi overrides shown as
    visible escapes) before it can reach the terminal."""
    return Text(safe(value), style=style)


ASKING_MARK: tuple[str, str] = ("??", "bold yellow")
"""A run waiting for a person's answer: its own mark beside the word
`waiting` (a run waiting on a timer needs nobody, and shows `..`)."""


def run_status(status: str, *, asking: bool = False) -> Text:
    mark, style = ASKING_MARK if asking and status == "waiting" else RUN_MARKS.get(status, ("  ", ""))
    return Text(f"{mark} {status}", style=tone(style))


def marked(table: dict[str, tuple[str, str]], state: str, label: str | None = None) -> Text:
    """`[x] load` style: the mark, then the label (literal), styled by state."""
    mark, style = table.get(state, ("?", ""))
    return Text(f"{mark} {safe(label if label is not None else state)}", style=tone(style))


def age(seconds: float | None) -> str:
    """A compact "time since": 45s, 12m, 3h, 9d."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}"
    return f"{s // 86400}d"


AGE_STEP = 10.0
"""Ages move on screen in steps of this many seconds: over a slow link a
ticking age would resend its line (or a column of them) on every refresh."""


def age_now(now: float) -> float:
    """`now` rounded down to an AGE_STEP, the "now" ages are shown against."""
    return now - now % AGE_STEP


def size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def middle(value: str, width: int) -> str:
    """`value` in at most `width` characters, cut from the middle: what tells
    one run id or effect key from its neighbours is usually at its end (a
    date, an invoice number), so the end stays whole."""
    if len(value) <= width:
        return value
    if width < 5:
        return value[-width:]
    head = (width - 1) * 2 // 5
    return value[:head] + "…" + value[len(value) - (width - 1 - head) :]


def shared_ends(values: list[str]) -> dict[str, tuple[int, int]]:
    """For each value, how many leading and trailing characters it shares with
    its closest neighbours among `values`: what does not tell it apart."""
    out = {v: (0, 0) for v in values}

    def common(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    for which in (0, 1):
        keyed = sorted(set(values), key=lambda v: v if which == 0 else v[::-1])
        for i, v in enumerate(keyed):
            w = v if which == 0 else v[::-1]
            near = [keyed[j] for j in (i - 1, i + 1) if 0 <= j < len(keyed)]
            n = max((common(w, u if which == 0 else u[::-1]) for u in near), default=0)
            head, tail = out[v]
            out[v] = (n, tail) if which == 0 else (head, n)
    return out


def apart(value: str, width: int, head: int, tail: int) -> str:
    """`value` in `width` characters with what tells it from its neighbours
    kept whole: the part after its `head` shared leading characters and
    before its `tail` shared trailing ones. Cut from the middle when that
    keeps it (`middle`); else inside the shared start, else inside the
    shared end. `billing-…rella-2026-11` becomes `billi…umbrella-2026-11`."""
    if len(value) <= width:
        return value
    core = len(value) - head - tail
    cut = middle(value, width)
    if width < 5 or core <= 0:
        return cut
    kept_head = (width - 1) * 2 // 5
    kept_tail = width - 1 - kept_head
    if kept_tail >= core + tail or kept_head >= head + core:
        return cut
    if core + tail + 4 <= width:
        return value[: width - 1 - core - tail] + "…" + value[len(value) - core - tail :]
    if head + core + 4 <= width:
        return value[: head + core] + "…" + value[len(value) - (width - 1 - head - core) :]
    if core + 4 <= width:
        # Both shared ends cut: a little of each, around the part that differs.
        h = (width - core - 2) // 2
        t = width - core - 2 - h
        return value[:h] + "…" + value[head : head + core] + "…" + value[len(value) - t :]
    return cut


#: A hex digest (16 characters or more), with an optional `sha256:` prefix.
_DIGEST = re.compile(
    r"(?<![0-9A-Za-z])(?:sha256:([0-9a-f]{12})|(?=[0-9a-f]*[a-f])([0-9a-f]{12}))[0-9a-f]{4,}(?![0-9A-Za-z])"
)
"""16+ hex characters after `sha256:`, or with a letter among them (a long
decimal number without the prefix is not taken for a digest)."""

HASH_CHARS = 12
"""Hex characters a hash is shown with on screen (the full value is in `--json`)."""


def hashes(text: str) -> str:
    """Every long hex digest in `text` cut to its first 12 characters and
    `…` (a `sha256:` prefix dropped): a 64-character hash takes three lines
    at 80 columns, and two wraps of one value read as two values. Twelve
    still tell digests apart."""
    return _DIGEST.sub(lambda m: (m.group(1) or m.group(2)) + "…", text)


def short(value: Any, n: int = 48) -> str:
    """A one-line rendering of a JSON-ish value, cut to `n` characters."""
    import json

    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    s = safe(s.replace("\n", " "))
    return s if len(s) <= n else s[: n - 3] + "..."


_mono = False


def set_monochrome(on: bool) -> None:
    """Under NO_COLOR, keep only emphasis: Textual's monochrome filter maps a
    red word to a dark grey that is hard to read, and the words and marks
    already carry the state. Set by each app as it starts."""
    global _mono
    _mono = on


def tone(style: str) -> str:
    """A state's style, or only its emphasis under NO_COLOR."""
    if not _mono:
        return style
    return " ".join(w for w in style.split() if w in ("bold", "italic", "dim", "reverse"))
