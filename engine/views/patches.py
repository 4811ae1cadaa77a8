"""Which live runs still take a patch's old path: `phasegate status --patch ID`.

A patch (`ctx.patched`, run/patches.py) keeps an old branch in the code for
the runs that were past its point when the new code was deployed. The branch
can go once no live run takes it: none has recorded the old path, and none of
the patch's workflows has a live run that has not reached the patch yet (such
a run, if it started under the old code and went past the point, takes the
old path when it resumes).

Live means not completed and not cancelled: a failed, blocked or waiting run
may still run its phase again. Runs are read a page at a time by run id, each
with its own patch record through the steps' index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import _json
from .._stop import damaged
from ..ids import validate_name
from ..run.patches import PATCH
from ..states import RunStatus
from ..store.store import Store

#: Statuses after which a run never runs a phase again.
ENDED = (RunStatus.COMPLETED.value, RunStatus.CANCELLED.value)


@dataclass(frozen=True)
class PatchedRun:
    """A live run, as far as one patch is concerned."""

    run_id: str
    """The run's id."""
    workflow: str
    """Its workflow's name."""
    status: str
    """Its stored status."""
    phase: str | None
    """The phase it recorded the patch in (or, not reached yet, its frontier phase)."""

    def to_json(self) -> dict[str, Any]:
        """The run as `status --patch --json` lists it.

        Returns:
            `run_id`, `workflow`, `status` and `phase`.
        """
        return {"run_id": self.run_id, "workflow": self.workflow, "status": self.status, "phase": self.phase}


@dataclass(frozen=True)
class PatchReport:
    """What `phasegate status --patch ID` shows."""

    patch: str
    """The patch's name."""
    old_path: list[PatchedRun] = field(default_factory=list)
    """Live runs whose step log records the old path."""
    new_path: int = 0
    """How many live runs recorded the new path."""
    not_reached: list[PatchedRun] = field(default_factory=list)
    """Live runs of the patch's workflows that have not reached it yet."""
    damaged: list[str] = field(default_factory=list)
    """Run ids whose patch record fails its hash or is not true or false (counted as the old path)."""

    @property
    def old_path_can_go(self) -> bool:
        """Whether no live run takes, or may still take, the old path."""
        return not self.old_path and not self.not_reached

    def to_json(self) -> dict[str, Any]:
        """The report as `status --patch ID --json` prints it.

        Returns:
            `patch`, `old_path` (runs), `new_path` (a count), `not_reached`
            (runs), `damaged` (run ids) and `old_path_can_go`.
        """
        return {
            "patch": self.patch,
            "old_path": [r.to_json() for r in self.old_path],
            "new_path": self.new_path,
            "not_reached": [r.to_json() for r in self.not_reached],
            "damaged": list(self.damaged),
            "old_path_can_go": self.old_path_can_go,
        }


def report(store: Store, patch_id: str, *, page: int = 500) -> PatchReport:
    """The live runs on each side of a patch.

    Args:
        store: The store.
        patch_id: The patch's name, as `ctx.patched` is called with.
        page: Runs read per query.

    Returns:
        The report.

    Raises:
        UsageError: the patch id is not a name a patch could have.
    """
    validate_name("patch", patch_id)
    key = PATCH + patch_id
    old: list[PatchedRun] = []
    new = 0
    unseen: list[PatchedRun] = []
    bad: list[str] = []
    workflows: set[str] = set()
    after = ""
    while True:
        with store.read() as conn:
            rows = store.steps.keyed_page(conn, key, ended=ENDED, after=after, limit=page)
        if not rows:
            break
        after = str(rows[-1].run_id)
        for r in rows:
            if r.result_json is None:
                unseen.append(PatchedRun(str(r.run_id), str(r.workflow), str(r.status), r.frontier_phase))
                continue
            workflows.add(str(r.workflow))
            run = PatchedRun(str(r.run_id), str(r.workflow), str(r.status), r.phase)
            taken = _taken(r.result_json, r.result_hash)
            if taken is None:
                # A record that does not verify says nothing of the path: the
                # safe reading is that the run may still take the old one.
                bad.append(run.run_id)
                old.append(run)
            elif taken:
                new += 1
            else:
                old.append(run)
    return PatchReport(patch_id, old, new, [r for r in unseen if r.workflow in workflows], bad)


def _taken(text: str, digest: str | None) -> bool | None:
    if damaged(text, digest):
        return None
    try:
        value = _json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, bool) else None
