"""The console's door to the store: every call a screen makes on it, on the
engine's public API only, blocking (screens run them in worker threads).
Nothing here imports Textual.

One concept a module, re-exported here so a screen asks one place:

- `runs_page`: the runs list's page, ONE read of the store a refresh;
- `offered`: which actions fit a run now (the keys both screens show);
- `requesting`: what an action's modal says, read fresh (nothing written);
- `deciding`: the writes (a decision, a second, a prune, a claim);
- `resuming`: `phasegate resume` started detached, and how it ended;
- `deeplinks`: where the console opens (`phasegate console RUN --show ...`).
"""

from __future__ import annotations

from .deciding import WORKER_WILL, apply, toggle_claim
from .deeplinks import StartAt, show_index, start_at
from .offered import HOLDS, allowed, can_resume, claimed_by_other, secondable
from .requesting import (
    DECISIONS,
    build_request,
    name_pattern,
    proposal_line,
    proposal_words,
    sibling_result,
)
from .resuming import Resumed, ResumeEnded, last_line, resume_command, resume_now, watch_resume
from .runs_page import STATUS_FILTERS, ListedPage, Where, read_page, waiting_words, workers_alive

__all__ = [
    "DECISIONS",
    "HOLDS",
    "STATUS_FILTERS",
    "WORKER_WILL",
    "ListedPage",
    "ResumeEnded",
    "Resumed",
    "StartAt",
    "Where",
    "allowed",
    "apply",
    "build_request",
    "can_resume",
    "claimed_by_other",
    "last_line",
    "name_pattern",
    "proposal_line",
    "proposal_words",
    "read_page",
    "resume_command",
    "resume_now",
    "secondable",
    "show_index",
    "sibling_result",
    "start_at",
    "toggle_claim",
    "waiting_words",
    "watch_resume",
    "workers_alive",
]
