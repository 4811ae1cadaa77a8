"""A run's progress bar (`ctx.progress`) as the runs list and the detail draw
it: ASCII first (`[#####.....] 50%`), so it reads the same under NO_COLOR and
on a terminal without colour; a stalled bar says STALLED in words.

Whether a bar is stalled, its rate and its time left are the engine's
(`ProgressView.stalled`, `.rate`, `.eta`): this module only draws them.
"""

from __future__ import annotations

from rich.text import Text

from phasegate import ProgressView, RunStatus
from phasegate.ops import safe

from ._format import age, tone

#: The bar's style by state; only emphasis is left under NO_COLOR (`tone`).
_STYLE = {"moving": "cyan", "stalled": "bold yellow reverse"}


def bar(p: ProgressView, status: RunStatus, now: float, width: int) -> Text:
    """`[#####.....] 50%` in `width` cells; `STALLED 50%` (or `STALLED 5000`
    without a total) when the bar stopped moving while the run is running.

    Args:
        p: The run's progress.
        status: The run's effective status at `now`.
        now: UNIX seconds.
        width: The cells the bar may take (at least 8).

    Returns:
        The bar, styled where there is colour.
    """
    frac = p.fraction
    pct = f"{int(frac * 100)}%" if frac is not None else _count(p.done)
    if p.stalled(status, now):
        return Text(f"STALLED {pct}"[:width], style=tone(_STYLE["stalled"]))
    if frac is None:
        return Text(f"{_count(p.done)} done"[:width], style=tone(_STYLE["moving"]))
    inner = max(1, width - len(pct) - 3)
    filled = int(frac * inner)
    return Text(f"[{'#' * filled}{'.' * (inner - filled)}] {pct}", style=tone(_STYLE["moving"]))


def pace(p: ProgressView, status: RunStatus, now: float) -> str:
    """The rate and time left (`120/s, 42s left`), or how long the bar has
    not moved when it is stalled (`no progress for 3m05s`); plain text."""
    if p.stalled(status, now):
        return f"no progress for {age(now - p.at)}"
    return p.pace()


def line(p: ProgressView, status: RunStatus, now: float) -> Text:
    """The detail's progress line: the bar, the counts, the pace and the
    phase's message (stored text, escaped)."""
    out = Text()
    out.append("progress ", style="bold")
    out.append_text(bar(p, status, now, 32))
    out.append(f"  {safe(p.said())}")
    said = pace(p, status, now)
    if said:
        out.append(f"  ({said})")
    return out


def _count(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"
