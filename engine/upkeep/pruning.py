"""Pruning a store: what the prune rule (`history.prune`) says is safe to
remove, listed, and removed one run per write transaction.

Each run's candidates are derived again inside the transaction that removes
them, so nothing is removed on a judgement made before a change; an output
that leaves for the archive is read back intact before its stored copy goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from .. import _json
from ..errors import PhasegateError
from ..history import archive
from ..history import prune as _prune
from ..oversight.identity import whoami
from ..store.store import NewDecision, Store


class Pruner:
    """The prune of one store: it lists candidates and removes them.

    Args:
        store: The store pruned.
        clock: The time a run's age is measured at.
        retention_days: Days a completed run is kept whole.
        archive_dir: Where outputs that need an archive are written.
    """

    def __init__(self, store: Store, clock: Callable[[], float], retention_days: float, archive_dir: Path) -> None:
        self.store = store
        self.clock = clock
        self.retention_days = retention_days
        self.archive_dir = archive_dir

    def candidates(self, run_ids: Iterable[str]) -> list[_prune.PruneCandidate]:
        """What is safe to prune in these runs now, each run read in its own
        read transaction.

        Raises:
            RunNotFound: One of the runs is not in the store.
        """
        out: list[_prune.PruneCandidate] = []
        now = self.clock()
        for rid in run_ids:
            with self.store.read() as conn:
                run = self.store.runs.need(conn, rid)
                rows = self.store.checkpoints.of_run(conn, rid)
                steps = self.store.steps.of_run(conn, rid)
                sent = self.store.alerts.of_run(conn, rid)
            out.extend(
                _prune.candidates(
                    run, rows, steps, now=now, retention_days=self.retention_days, key=self.store.seal_key
                )
            )
            out.extend(_prune.alert_candidates(run, sent))
        return out

    def apply(
        self, listed: Iterable[_prune.PruneCandidate], *, operator: str | None, reason: str
    ) -> list[_prune.PruneCandidate]:
        """Remove what is safe to prune now in the runs `listed` names, one
        write transaction a run, each recorded as an applied "prune" decision.

        Returns:
            What was removed: each run's candidates as derived in its transaction.

        Raises:
            PhasegateError: An archive could not be written or read back; that
                run's transaction was rolled back (the runs before it stay pruned).
        """
        who = whoami(operator).operator
        done: list[_prune.PruneCandidate] = []
        for rid in dict.fromkeys(c.run_id for c in listed):
            try:
                done.extend(self._prune_run(rid, who, reason))
            except OSError as exc:
                # The run's transaction was rolled back: an archive we could not
                # write (or read back) is no confirmation, so nothing was removed.
                raise PhasegateError(
                    f"cannot write the archive for run {rid!r} under {self.archive_dir}: {exc.strerror or exc}; "
                    "nothing of that run was pruned",
                    title="archive not written",
                ) from None
        return done

    def _prune_run(self, run_id: str, who: str, reason: str) -> list[_prune.PruneCandidate]:
        now = self.clock()
        with self.store.write() as conn:
            run = self.store.runs.get(conn, run_id)
            if run is None:
                return []
            rows = self.store.checkpoints.of_run(conn, run_id)
            steps = self.store.steps.of_run(conn, run_id)
            cands = _prune.candidates(
                run, rows, steps, now=now, retention_days=self.retention_days, key=self.store.seal_key
            )
            cands += _prune.alert_candidates(run, self.store.alerts.of_run(conn, run_id))
            by_id = {int(r.id): r for r in rows}
            folder = self.archive_dir / archive.safe_name(run_id)
            for c in cands:
                if c.kind == "step_records":
                    self.store.steps.prune(conn, list(c.refs))
                    continue
                if c.kind == "sent_alerts":
                    self.store.alerts.prune_sent(conn, run_id, list(c.alert_keys))
                    continue
                for ref in c.refs:
                    row = by_id[ref]
                    if c.safety == "archive":
                        payload = {
                            "run_id": run_id,
                            "epoch": int(row.epoch),
                            "seq": int(row.seq),
                            "phase": row.phase,
                            "output_hash": _json.loads(row.envelope).get("output_hash"),
                            "output_json": row.output_json,
                        }
                        path, _digest = archive.write_archive(folder, archive.archive_name(row), payload)
                        if archive.restore(path, payload["output_hash"]) is archive.MISSING:
                            raise OSError(f"archive {path} did not read back intact; nothing removed")
                        self.store.checkpoints.set_output_state(conn, ref, "archived", str(path))
                    else:
                        self.store.checkpoints.set_output_state(conn, ref, "pruned", None)
                if c.kind == "finished_run":
                    self.store.steps.prune(conn, list(c.step_refs))
            if cands:
                self.store.decisions.record(
                    conn,
                    NewDecision(
                        run_id=run_id,
                        action="prune",
                        reason=reason,
                        operator=who,
                        at=now,
                        state="applied",
                        applied_at=now,
                        detail_json=_json.dumps(
                            {"pruned": [{"what": c.what, "bytes": c.bytes, "why_safe": c.why_safe} for c in cands]}
                        ),
                    ),
                )
                self.store.runs.touch(conn, run_id, run.updated_at)
        return cands
