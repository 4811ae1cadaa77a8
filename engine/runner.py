"""One execution of one run: the invariant start sequence, then the phases.

Every run starts the same way, whether or not anything was saved before:
take the lease, read the run's own checkpoints, verify them, apply the
operator's pending decisions, compare the world, check in-doubt effects and
floors, and only then run the phases that are still open. A fresh run is the
same path with an empty chain.
"""

from __future__ import annotations

import inspect
import logging
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from . import _json, chain, environment
from ._host import new_owner
from ._runstate import _Stop
from ._states import Action, BlockKind, OutcomeStatus, RunStatus
from .applying import DecisionsMixin
from .context import PhaseContext, _rehydrate
from .errors import LeaseLost, RunHeld, StoreError, UsageError
from .lease import Heartbeat, holder_alive, holder_name
from .outcome import BlockReason, Outcome
from .records import RecordsMixin
from .workflow import Phase, Workflow

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger("phasegate.run")


def validate_run_id(run_id: Any) -> str:
    if not isinstance(run_id, str) or not run_id.strip():
        raise UsageError("a run id must be a non-empty string")
    if len(run_id) > 200:
        raise UsageError("a run id must be at most 200 characters")
    if any(ord(c) < 32 for c in run_id):
        raise UsageError("a run id must not contain control characters")
    return run_id


class Runner(RecordsMixin, DecisionsMixin):
    def __init__(
        self, engine: Engine, wf: Workflow, run_id: str, inputs: Any, *, inputs_given: bool, target: str | None
    ) -> None:
        self.engine = engine
        self.store = engine.store
        self.clock: Callable[[], float] = engine.clock
        self.wf = wf
        self.run_id = validate_run_id(run_id)
        self.inputs_given = inputs_given
        self.inputs = inputs if inputs is not None else {}
        self.inputs_text = _json.dumps(self.inputs)
        self.target = target
        self.owner = new_owner()
        self.outputs: dict[str, Any] = {}
        self.output_hashes: dict[str, str] = {}
        self.effects: dict[str, Any] = {}
        self.phases_run: list[str] = []
        self.env_rows: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.current_probes: dict[str, Any] = {}

    # -- the start sequence ---------------------------------------------------

    def execute(self) -> Outcome:
        if self.store.schema_problem:
            # Nothing in a store we cannot interpret may be changed, not even a lease.
            reason = BlockReason(BlockKind.INTEGRITY, self.store.schema_problem, {"what": "schema"})
            return Outcome(self.run_id, OutcomeStatus.BLOCKED, blocked=[reason])
        try:
            row = self._acquire()
        except IntegrityError:
            # Two processes created the same new run at once; the other won.
            row = self._acquire()
        beat = Heartbeat(self.store, self.run_id, self.owner, self.engine.lease_seconds, self.clock)
        beat.start()
        try:
            return self._drive(row)
        except _Stop as stop:
            return self._block([stop.reason])
        finally:
            beat.stop()

    def _acquire(self) -> Any:
        now = self.clock()
        with self.store.write() as conn:
            # Row lock where the backend has them; SKIP LOCKED so a process
            # racing another for the same run is answered at once, not queued.
            row = self.store.get_run(conn, self.run_id, lock=True, skip_locked=True)
            if row is None and self.store.get_run(conn, self.run_id) is not None:
                raise RunHeld(self.run_id, "another process taking it right now", self.engine.lease_seconds)
            lease = {
                "lease_owner": self.owner,
                "lease_host": self.owner.split(":")[0],
                "lease_pid": int(self.owner.split(":")[1]),
                "lease_expires_at": now + self.engine.lease_seconds,
                "heartbeat_at": now,
            }
            if row is None:
                first = self.wf.phases[0].name if self.wf.phases else None
                self.store.insert_run(
                    conn,
                    {
                        "run_id": self.run_id,
                        "workflow": self.wf.name,
                        "target": self.target,
                        "inputs_json": self.inputs_text,
                        "inputs_hash": _json.sha256(self.inputs_text),
                        "shape_json": _json.dumps(self.wf.describe()),
                        "status": RunStatus.RUNNING.value,
                        "frontier_phase": first,
                        "phase_count": len(self.wf.phases),
                        "created_at": now,
                        "updated_at": now,
                        **lease,
                    },
                )
                return self.store.get_run(conn, self.run_id)
            if row.workflow != self.wf.name:
                raise UsageError(f"run {self.run_id!r} belongs to workflow {row.workflow!r}, not {self.wf.name!r}")
            if self.inputs_given and _json.sha256(self.inputs_text) != row.inputs_hash:
                raise UsageError(
                    f"run {self.run_id!r} already exists with other inputs; resume it without inputs or use a new run id"
                )
            if holder_alive(row, now):
                raise RunHeld(self.run_id, holder_name(row), (row.lease_expires_at or now) - now)
            # The shape (with each phase's code) this process runs with: the
            # next start compares against it to see which code changed.
            values = {
                **lease,
                "status": RunStatus.RUNNING.value,
                "updated_at": now,
                "phase_count": len(self.wf.phases),
                "shape_json": _json.dumps(self.wf.describe()),
            }
            if self.target and not row.target:
                values["target"] = self.target
            self.store.update_run(conn, self.run_id, values)
            return row

    def _drive(self, row: Any) -> Outcome:
        if _json.sha256(row.inputs_json) != row.inputs_hash:
            # Damaged inputs must not be parsed, let alone run with.
            return self._block(
                [
                    BlockReason(
                        BlockKind.INTEGRITY,
                        "the run's stored inputs do not match the hash they were saved with",
                        {
                            "failure": {
                                "seq": -1,
                                "phase": None,
                                "what": "inputs",
                                "expected": row.inputs_hash,
                                "actual": _json.sha256(row.inputs_json),
                                "message": "stored inputs damaged",
                            }
                        },
                    )
                ]
            )
        self.inputs = _json.loads(row.inputs_json)
        self.inputs_json = row.inputs_json
        self.inputs_hash = row.inputs_hash
        self.epoch = int(row.epoch)
        last_codes = {p["name"]: p.get("code") for p in _json.loads(row.shape_json)}
        with self.store.read() as conn:
            rows = self.store.chain(conn, self.run_id, self.epoch)
            self.effects = {e.key: e for e in self.store.effects_for(conn, self.run_id)}
            pending = [d for d in self.store.decisions_for(conn, self.run_id) if d.state == "pending"]
            self.next_seq = self.store.next_seq(conn, self.run_id, self.epoch)
        verified = chain.verify(
            rows,
            run_id=self.run_id,
            epoch=self.epoch,
            inputs_hash=self.inputs_hash,
            head_seq=int(row.head_seq),
            head_hash=row.head_hash,
            check_type=self._check_type,
        )
        used: list[Any] = []

        # 1. integrity: nothing after the first failure is trusted.
        if verified.failure is not None:
            f = verified.failure
            dec = _pick(pending, answers=BlockKind.INTEGRITY)
            if dec is None:
                return self._block([BlockReason(BlockKind.INTEGRITY, f.detail(), {"failure": f.as_dict()})])
            untrusted = [int(r.seq) for r in rows if int(r.seq) >= f.seq] if f.what != "head" else []
            trusted = verified.entries if f.what == "head" else [e for e in verified.entries if int(e.row.seq) < f.seq]
            # A rewind answering the failure is applied (and settled) below.
            self._truncate(untrusted, trusted, None if dec.action == Action.REWIND.value else dec)
            if dec.action != Action.REWIND.value:
                used.append(dec)
            entries = trusted
        else:
            entries = verified.entries
        state = chain.fold(entries)

        # 2. an operator's rewind re-opens a phase and everything after it.
        rewind = _pick(pending, action=Action.REWIND)
        if rewind is not None:
            self.current_probes = environment.evaluate(self.wf, inputs=self.inputs)
            state = self._rewind(state, entries, rewind.phase, rewind)
            used.append(rewind)
        if not self.current_probes:
            self.current_probes = environment.evaluate(self.wf, inputs=self.inputs)

        blocks: list[BlockReason] = []
        to_run = [p for p in self.wf.phases if p.name not in state.done and p.name not in state.skipped]

        # 3. the world may have moved.
        now = self.clock()
        cmp = environment.compare(self.wf, state, self.current_probes, now, last_codes)
        self.env_rows = cmp.rows
        self.notes.extend(cmp.notes)
        if cmp.changed and to_run:
            dec = _pick(pending, action=Action.APPROVE)
            if dec is not None and _approval_covers(dec, cmp.blocking):
                state = self._approve(state, cmp.blocking, dec)
                used.append(dec)
                cmp = environment.compare(self.wf, state, self.current_probes, self.clock(), last_codes)
                self.env_rows = cmp.rows
            if cmp.changed:
                if dec is not None and dec not in used:
                    self.notes.append(f"decision {dec.id} (approve) did not cover what changed since; asked again")
                    self._settle(dec, "void")
                blocks.append(
                    BlockReason(BlockKind.ENV_MISMATCH, environment.describe(cmp.blocking), {"changes": cmp.blocking})
                )

        # 4. effects whose outcome nobody knows.
        open_phases = {p.name for p in to_run}
        blocks.extend(self._damaged_records(open_phases))
        for eff in list(self.effects.values()):
            if eff.state != "intent" or eff.idempotent or eff.atomic or eff.retry_ok or eff.phase not in open_phases:
                continue
            dec = _pick(pending, effect_key=eff.key)
            if dec is not None:
                self._answer_effect(eff, dec)
                used.append(dec)
                continue
            blocks.append(
                BlockReason(
                    BlockKind.IN_DOUBT_EFFECT,
                    f"effect {eff.name} in phase {eff.phase} (key {eff.key}) was started and never recorded done: did it happen?",
                    {"effect": eff.key, "name": eff.name, "phase": eff.phase},
                )
            )

        # 5. floors: re-derive what can be, degrade what may be, stop otherwise.
        floor_blocks, rederive = self._plan_floors(state, to_run)
        if floor_blocks:
            dec = _pick(pending, answers=BlockKind.BELOW_FLOOR)
            if dec is not None and dec.action == Action.DEGRADE.value:
                skip = self._skips(state, floor_blocks)
                state = self._degrade(state, skip, dec)
                used.append(dec)
                to_run = [p for p in self.wf.phases if p.name not in state.done and p.name not in state.skipped]
                floor_blocks, rederive = self._plan_floors(state, to_run)
            blocks.extend(floor_blocks)

        # Each used decision was settled in the transaction that applied it;
        # a decision nothing needed any more is void.
        if blocks:
            return self._block(blocks)
        for d in pending:
            if d not in used:
                self._settle(d, "void")

        # Durable steps saved by older code of an open phase are not trusted
        # to mean what the new code would compute: they are recomputed.
        recode = [p.name for p in to_run if last_codes.get(p.name) not in (None, p.code_hash)]
        if recode:
            with self.store.write() as conn:
                self.store.discard_steps(conn, self.run_id, recode)
        for p in to_run:
            for n in p.needs:
                if n in state.done:
                    self._retrievable(state, n)
        for name in rederive:
            del state.done[name]
            self.notes.append(f"output of {name} was lost; re-deriving it from its own inputs")
        to_run = [p for p in self.wf.phases if p.name not in state.done and p.name not in state.skipped]
        self.state = state
        # One read of the run's saved durable steps, not one per phase.
        self.saved_steps: dict[str, dict[str, tuple[str, str]]] = {}
        with self.store.read() as conn:
            for st in self.store.steps_for(conn, self.run_id):
                self.saved_steps.setdefault(st.phase, {})[st.step_key] = (st.result_json, st.result_hash)
        return self._run_phases(to_run)

    # -- running --------------------------------------------------------------

    def _run_phases(self, to_run: list[Phase]) -> Outcome:
        for i, p in enumerate(to_run):
            if self.engine.should_stop is not None and self.engine.should_stop():
                self._finish(RunStatus.RUNNING, {"attention": "stopped between phases by a shutdown; resume it"})
                return Outcome(self.run_id, OutcomeStatus.INTERRUPTED, phases_run=self.phases_run)
            if p.probes:
                now_vals = environment.evaluate(self.wf, list(p.probes), inputs=self.inputs)
                moved = [
                    {"probe": k, "saved": self.current_probes.get(k), "current": v, "changed": True, "phases": [p.name]}
                    for k, v in now_vals.items()
                    if self.current_probes.get(k) != v
                ]
                if moved:
                    return self._block(
                        [BlockReason(BlockKind.ENV_MISMATCH, environment.describe(moved), {"changes": moved})]
                    )
            kwargs: dict[str, Any] = {}
            missing: set[str] = set()
            for n in p.needs:
                if n in self.outputs:
                    kwargs[n] = _rehydrate(self.wf.get(n).output_type, self.outputs[n])
                else:
                    missing.add(n)
            # Only a degraded phase needs its signature: ~10 us saved per boundary.
            params = inspect.signature(p.fn).parameters if missing else {}
            for n in missing:
                prm = params.get(n)
                if prm is not None and prm.default is inspect.Parameter.empty:
                    kwargs[n] = None
            saved = self.saved_steps.get(p.name, {})
            # Each phase gets its own copy: a phase that mutates its inputs must
            # not change what a later phase (or a resume) sees.
            ctx = PhaseContext(self, p.name, _json.loads(self.inputs_json), frozenset(missing), saved)
            self.phases_run.append(p.name)
            log.info(
                "run %s: phase %s starts%s", self.run_id, p.name, f" (missing {sorted(missing)})" if missing else ""
            )
            try:
                out = p.fn(ctx, **kwargs)
            except (_Stop, LeaseLost, StoreError):  # the store failing is not the phase failing: exit 2, resumable
                raise
            except Exception as exc:  # noqa: BLE001 - a phase's failure is the run's outcome, not ours
                return self._fail(p.name, exc)
            try:
                text = _json.dumps(out)
            except UsageError as exc:
                return self._fail(p.name, exc)
            nxt = to_run[i + 1] if i + 1 < len(to_run) else None
            self._checkpoint(p, text, ctx.steps_done, sorted(missing), nxt)
        return self._complete()

    def _checkpoint(self, p: Phase, text: str, steps_done: int, missing: list[str], nxt: Phase | None) -> None:
        now = self.clock()
        out_hash = _json.sha256(text)
        seq = self.next_seq
        next_needs = {n: self.output_hashes[n] for n in (nxt.needs if nxt else ()) if n in self.output_hashes}
        if nxt is not None and p.name in nxt.needs:
            next_needs[p.name] = out_hash
        env_text, env_hash = chain.envelope(
            run_id=self.run_id,
            epoch=self.epoch,
            seq=seq,
            kind="phase",
            prev=self.state.last_hash,
            inputs_hash=self.inputs_hash,
            env=environment.fingerprint(
                self.wf, self.current_probes, p.code_hash, now, with_shape=self.state.shape != self.wf.shape()
            ),
            phase=p.name,
            phase_index=p.index,
            steps_done=steps_done,
            output_hash=out_hash,
            output_bytes=len(text.encode("utf-8")),
            extra={"missing": missing, "next": {"phase": nxt.name if nxt else None, "needs": next_needs}},
        )
        frontier = nxt if nxt is not None else p
        with self.store.hot_tx() as tx:
            tx.run(
                "checkpoint",
                {
                    "run_id": self.run_id,
                    "epoch": self.epoch,
                    "seq": seq,
                    "kind": "phase",
                    "phase": p.name,
                    "envelope": env_text,
                    "payload_hash": env_hash,
                    "prev_hash": self.state.last_hash,
                    "output_json": text,
                    "output_state": "present",
                    "output_bytes": len(text.encode("utf-8")),
                    "created_at": now,
                },
            )
            n = tx.run(
                "advance",
                {
                    "head_seq": seq,
                    "head_hash": env_hash,
                    "frontier_phase": frontier.name,
                    "frontier_index": frontier.index + (0 if nxt is not None else 1),
                    "steps_done": 0 if nxt is not None else steps_done,
                    "now": now,
                    "run_id": self.run_id,
                    "owner": self.owner,
                },
            )
            if n == 0:
                raise LeaseLost(f"run {self.run_id!r}: lease lost before checkpoint of {p.name}; nothing recorded")
        self.next_seq = seq + 1
        self.state.last_hash = env_hash
        self.state.last_seq = seq
        self.state.shape = self.wf.shape()
        self.outputs[p.name] = _json.loads(text)
        self.output_hashes[p.name] = out_hash

    # -- floors ---------------------------------------------------------------

    def _retrievable(self, state: chain.Folded, name: str) -> bool:
        if name in self.outputs:
            return True
        d = state.done.get(name)
        if d is None:
            return False
        e = d.entry
        if e.output_ok:
            self.outputs[name] = e.output
            self.output_hashes[name] = e.env["output_hash"]
            return True
        if e.row.output_state == "archived" and e.row.archive_path:
            value = self.engine._restore_archived(e.row, e.env.get("output_hash"))
            if value is not _MISSING:
                if self._check_type(name, value) is None:
                    self.outputs[name] = value
                    self.output_hashes[name] = e.env["output_hash"]
                    return True
        return False

    def _plan_floors(self, state: chain.Folded, to_run: list[Phase]) -> tuple[list[BlockReason], list[str]]:
        blocks: list[BlockReason] = []
        rederive: list[str] = []
        will_run = {p.name for p in to_run}

        def derivable(name: str, seen: frozenset[str]) -> bool:
            if name in will_run or name in rederive or self._retrievable(state, name):
                return True
            if name in seen or name not in state.done:
                return False
            ph = self.wf.get(name)
            if ph.rederivable and all(derivable(f, seen | {name}) for f in ph.floor):
                rederive.append(name)
                return True
            return False

        for p in to_run:
            for n in p.floor:
                if n in state.skipped or not derivable(n, frozenset()):
                    why = (
                        "skipped by an earlier degrade"
                        if n in state.skipped
                        else "lost and cannot be re-derived from its own inputs"
                    )
                    blocks.append(
                        BlockReason(
                            BlockKind.BELOW_FLOOR,
                            f"phase {p.name} cannot start: its floor needs the output of {n}, which is {why}",
                            {"phase": p.name, "lost": n},
                        )
                    )
        rederive.sort(key=lambda n: self.wf.get(n).index)
        return blocks, rederive

    def _skips(self, state: chain.Folded, blocks: list[BlockReason]) -> list[str]:
        skip = {str(b.data["phase"]) for b in blocks}
        for p in self.wf.phases:
            if any(f in skip for f in p.floor) and p.name not in state.done:
                skip.add(p.name)
        return sorted(skip, key=lambda n: self.wf.get(n).index)

    def _check_type(self, phase: str, value: Any) -> str | None:
        try:
            ph = self.wf.get(phase)
        except KeyError:
            return None
        if ph.output_type is Any:
            return None
        try:
            _json.adapter(ph.output_type).validate_python(value)
        except Exception as exc:  # noqa: BLE001 - pydantic ValidationError or schema build error
            return str(exc).splitlines()[0]
        return None

    # -- endings --------------------------------------------------------------

    def _finish(self, status: RunStatus, values: dict[str, Any]) -> None:
        now = self.clock()
        base = {
            "status": status.value,
            "updated_at": now,
            "env_json": _json.dumps(self.env_rows),
            "notes_json": _json.dumps(self.notes),
            "lease_owner": None,
            "lease_host": None,
            "lease_pid": None,
            "lease_expires_at": None,
            "shape_json": _json.dumps(self.wf.describe()),
        }
        with self.store.write() as conn:
            if self.store.update_run(conn, self.run_id, {**base, **values}, owner=self.owner) == 0:
                raise LeaseLost(f"run {self.run_id!r}: lease lost before the run could record its end")

    def _block(self, reasons: list[BlockReason]) -> Outcome:
        first = reasons[0]
        self._finish(
            RunStatus.BLOCKED,
            {
                "blocked_json": _json.dumps([r.as_dict() for r in reasons]),
                "attention": f"{first.kind}: {first.detail}"[:300],
                "error_json": None,
            },
        )
        log.warning("run %s blocked: %s", self.run_id, "; ".join(str(r) for r in reasons))
        return Outcome(self.run_id, OutcomeStatus.BLOCKED, blocked=reasons, phases_run=self.phases_run)

    def _fail(self, phase: str, exc: BaseException) -> Outcome:
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        err = {"phase": phase, "type": type(exc).__name__, "message": str(exc), "traceback": "".join(tb[-6:])}
        self._finish(
            RunStatus.FAILED,
            {
                "error_json": _json.dumps(err),
                "blocked_json": "[]",
                "attention": f"failed in {phase}: {type(exc).__name__}: {exc}"[:300],
            },
        )
        log.error("run %s failed in %s: %s: %s", self.run_id, phase, type(exc).__name__, exc)
        return Outcome(self.run_id, OutcomeStatus.FAILED, error=err, phases_run=self.phases_run)

    def _complete(self) -> Outcome:
        last = self.wf.phases[-1].name if self.wf.phases else None
        result = None
        if last is not None:
            if last not in self.outputs:
                self._retrievable(self.state, last)
            if last in self.outputs:
                result = _rehydrate(self.wf.get(last).output_type, self.outputs[last])
        self._finish(RunStatus.COMPLETED, {"blocked_json": "[]", "attention": "", "error_json": None})
        log.info("run %s completed", self.run_id)
        return Outcome(self.run_id, OutcomeStatus.COMPLETED, result=result, phases_run=self.phases_run)


_MISSING = object()


def _pick(
    pending: list[Any], *, answers: BlockKind | None = None, action: Action | None = None, effect_key: str | None = None
) -> Any:
    for d in pending:
        if answers is not None and d.answers != answers.value:
            continue
        if action is not None and d.action != action.value:
            continue
        if effect_key is not None and d.effect_key != effect_key:
            continue
        return d
    return None


def _approval_covers(dec: Any, blocking: list[dict[str, Any]]) -> bool:
    """An approval accepts the values the operator saw, not whatever the world
    turns into later: each current value must be the one approved."""
    accepted = {r["probe"]: r.get("current") for r in _json.loads(dec.detail_json).get("accepted", [])}
    return all(r["probe"] in accepted and accepted[r["probe"]] == r["current"] for r in blocking if r["probe"] != "age")
