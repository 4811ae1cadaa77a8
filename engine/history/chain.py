"""A run's checkpoints as a hash chain: building entries, verifying them, and
folding the trusted ones into the state a resume starts from.

Each entry's envelope is canonical JSON holding its position (run, epoch,
sequence, phase), the hash of the phase output stored beside it, the hash of
the run's original inputs, the environment it was written against, and the
hash of the entry before it. Verification recomputes all of that; the first
entry that fails makes itself and every later entry untrusted.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..shapes import IntegrityReason
from . import keys

FORMAT_VERSION = 1
GENESIS = "genesis"


@dataclass(frozen=True)
class IntegrityFailure:
    """Why a checkpoint cannot be trusted."""

    seq: int
    """The checkpoint's place in the run's chain."""
    phase: str | None
    """Its phase, when known."""
    what: str
    """Which check failed: hash, parse, format, identity, chain, inputs, output, type, head, schema or seal."""
    expected: str | None
    """The value the chain vouches for (a hash), when there is one."""
    actual: str | None
    """The value found instead."""
    message: str
    """What failed, in one line."""

    @property
    def meaning(self) -> str:
        """What it means for the run, in one plain sentence."""
        return {
            "hash": "The checkpoint's bytes changed after it was written, so nothing it says can be trusted.",
            "parse": "The checkpoint is not readable JSON any more; it was damaged on disk.",
            "format": "The checkpoint was written in a format this engine does not know.",
            "identity": "This checkpoint belongs to another run or position; it was copied in from elsewhere.",
            "chain": "A checkpoint before this one is missing or was replaced, so the history is broken here.",
            "inputs": "The run's stored inputs no longer match the ones its checkpoints were built from.",
            "output": "The saved phase output changed after it was written; later phases would read damaged data.",
            "type": "The saved output no longer matches the phase's declared output type.",
            "head": "The newest checkpoints of this run are missing from the store.",
            "seal": "The checkpoint's keyed seal does not vouch for it: it was written or rewritten without the store's key.",
            "schema": "The database was written by a newer or unknown phasegate; its records cannot be interpreted safely.",
        }.get(self.what, "The checkpoint failed verification.")

    def detail(self) -> str:
        """The failure in one line, for a block reason and `verify`.

        Returns:
            "checkpoint N (phase): message (expected X, actual Y)".
        """
        where = f"checkpoint {self.seq}" + (f" ({self.phase})" if self.phase else "")
        if self.expected is not None or self.actual is not None:
            return f"{where}: {self.message} (expected {self.expected}, actual {self.actual})"
        return f"{where}: {self.message}"

    def as_dict(self) -> IntegrityReason:
        """The failure as it is stored with the run (`integrity` in `status --json`).

        Returns:
            Its fields, with `meaning` beside them.
        """
        return {
            "seq": self.seq,
            "phase": self.phase,
            "what": self.what,
            "expected": self.expected,
            "actual": self.actual,
            "message": self.message,
            "meaning": self.meaning,
        }


@dataclass
class Entry:
    """A verified chain entry: the row's columns plus its parsed envelope."""

    row: Any
    env: dict[str, Any]
    output: Any = None  # parsed output, when present and verified
    output_ok: bool = False


@dataclass
class Verified:
    entries: list[Entry]
    failure: IntegrityFailure | None


def envelope(
    *,
    run_id: str,
    epoch: int,
    seq: int,
    kind: str,
    prev: str,
    inputs_hash: str,
    env: Mapping[str, Any],
    phase: str | None = None,
    phase_index: int | None = None,
    steps_done: int = 0,
    output_hash: str | None = None,
    output_bytes: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> tuple[str, str]:
    """Canonical envelope text and its hash."""
    body: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "run_id": run_id,
        "epoch": epoch,
        "seq": seq,
        "kind": kind,
        "phase": phase,
        "phase_index": phase_index,
        "steps_done": steps_done,
        "output_hash": output_hash,
        "output_bytes": output_bytes,
        "inputs_hash": inputs_hash,
        "env": dict(env),
        "prev": prev,
    }
    if extra:
        body.update(extra)
    text = _json.dumps(body)
    return text, _json.sha256(text)


def entry_seal(payload_hash: str, key: keys.SealKey | None) -> str | None:
    """A checkpoint's keyed seal: an HMAC over its payload hash (which covers
    its envelope, so its links, position and output hash) under the store's
    key; None without a key, where the hashes are the seal."""
    return None if key is None else key.mac(payload_hash.encode("ascii", "replace"))


def _seal_problem(row: Any, key: keys.SealKey | None) -> str | None:
    stored = getattr(row, "seal", None)
    if key is None:
        # A plain store's checkpoints carry no seal: one that does was not
        # written by this store's phasegate (a keyed store whose key mark was taken).
        return None if not stored else f"has a keyed seal (key {keys.id_of(stored)}) on a store sealed without a key"
    if not stored:
        return "has no keyed seal: written without the store's key"
    if keys.id_of(stored) != key.key_id:
        return f"is sealed under another key (id {keys.id_of(stored)})"
    if not key.held:
        return None  # keyed under the store's key, not checkable here (verify says so)
    return (
        None
        if hmac.compare_digest(stored, key.mac(row.payload_hash.encode("ascii", "replace")))
        else ("has a keyed seal that does not match it")
    )


def verify(
    rows: Sequence[Any],
    *,
    run_id: str,
    epoch: int,
    inputs_hash: str,
    head_seq: int,
    head_hash: str,
    check_type: Callable[[str, Any], str | None] | None = None,
    parse_outputs: bool = True,
    key: keys.SealKey | None,
) -> Verified:
    """Check every hash, link and payload of a run's live chain, in order.

    `check_type(phase, value)` returns an error message when a parsed output
    does not fit its phase's declared type (None when it does).

    With `parse_outputs=False` outputs are hashed against their envelopes but
    not parsed, and entries carry no output (`output_ok` False): what
    `phasegate verify` does by default, at hashing speed. An output whose
    hash matches can fail to parse only if whoever wrote the chain wrote
    unparseable text and hashed it: `verify --deep` looks for that."""
    entries: list[Entry] = []
    prev = GENESIS

    def fail(row: Any, phase: str | None, what: str, msg: str, exp: Any = None, act: Any = None) -> Verified:
        return Verified(entries, IntegrityFailure(int(row.seq), phase, what, exp, act, msg))

    for row in rows:
        actual = _json.sha256(row.envelope)
        if actual != row.payload_hash:
            return fail(row, row.phase, "hash", "envelope hash mismatch", row.payload_hash, actual)
        if (why := _seal_problem(row, key)) is not None:
            return fail(row, row.phase, "seal", f"checkpoint {why}")
        try:
            # Without outputs to hand on, nothing reads a probe's value from
            # the envelope, only its identity, links and hashes.
            env = _json.loads(row.envelope) if parse_outputs else _json.loads_shallow(row.envelope)
            if not isinstance(env, dict):
                raise ValueError("envelope is not an object")
        except ValueError as exc:
            return fail(row, row.phase, "parse", f"envelope does not parse: {exc}")
        if env.get("v") != FORMAT_VERSION:
            return fail(row, row.phase, "format", "unknown checkpoint format", str(FORMAT_VERSION), str(env.get("v")))
        if env.get("run_id") != run_id or env.get("epoch") != epoch or env.get("seq") != row.seq:
            return fail(
                row,
                row.phase,
                "identity",
                "checkpoint belongs elsewhere",
                f"{run_id}/{epoch}/{row.seq}",
                f"{env.get('run_id')}/{env.get('epoch')}/{env.get('seq')}",
            )
        if env.get("phase") != row.phase or env.get("kind") != row.kind:
            return fail(row, row.phase, "identity", "row does not match its envelope", row.phase, env.get("phase"))
        if env.get("prev") != prev or row.prev_hash != prev:
            # Show the link that is actually wrong: the row's column or the envelope's copy.
            bad = env.get("prev") if env.get("prev") != prev else row.prev_hash
            return fail(row, row.phase, "chain", "broken link to the previous checkpoint", prev, bad)
        if env.get("inputs_hash") != inputs_hash:
            return fail(row, row.phase, "inputs", "run inputs changed", env.get("inputs_hash"), inputs_hash)
        entry = Entry(row=row, env=env)
        if row.output_state == "present":
            if row.output_json is None:
                entry.output_ok = False
            else:
                out_hash = _json.sha256(row.output_json)
                if out_hash != env.get("output_hash"):
                    return fail(row, row.phase, "output", "output hash mismatch", env.get("output_hash"), out_hash)
                if parse_outputs:
                    try:
                        value = _json.loads(row.output_json)
                    except ValueError as exc:
                        return fail(row, row.phase, "parse", f"output does not parse: {exc}")
                    if check_type is not None and row.phase is not None:
                        problem = check_type(row.phase, value)
                        if problem:
                            return fail(row, row.phase, "type", f"output does not match the declared type: {problem}")
                    entry.output = value
                    entry.output_ok = True
        entries.append(entry)
        prev = actual
    last_seq = int(rows[-1].seq) if rows else -1
    if last_seq != head_seq or prev != (head_hash or GENESIS):
        return Verified(
            entries,
            IntegrityFailure(
                seq=head_seq,
                phase=None,
                what="head",
                expected=f"{head_seq}:{(head_hash or GENESIS)[:12]}",
                actual=f"{last_seq}:{prev[:12]}",
                message="the chain does not end where the run says it does",
            ),
        )
    return Verified(entries, None)


def verify_run(
    run: Any,
    rows: Sequence[Any],
    check_type: Callable[[str, Any], str | None] | None = None,
    *,
    key: keys.SealKey | None,
    parse_outputs: bool = True,
) -> Verified:
    """Verify the live chain of `run`'s current epoch among `rows` (which may
    hold other epochs and set-aside entries), against what its row says,
    under the store's seal `key`."""
    live = [r for r in rows if r.status == "live" and int(r.epoch) == int(run.epoch)]
    return verify(
        live,
        run_id=run.run_id,
        epoch=int(run.epoch),
        inputs_hash=run.inputs_hash,
        head_seq=int(run.head_seq),
        head_hash=run.head_hash,
        check_type=check_type,
        parse_outputs=parse_outputs,
        key=key,
    )


@dataclass
class Done:
    """A phase the trusted chain marks done."""

    entry: Entry
    code: str
    missing: list[str]

    @property
    def seq(self) -> int:
        return int(self.entry.row.seq)


@dataclass
class Folded:
    """The state a resume starts from."""

    done: dict[str, Done] = field(default_factory=dict)
    skipped: set[str] = field(default_factory=set)
    probes: dict[str, Any] = field(default_factory=dict)
    shape: list[dict[str, Any]] | None = None
    last_at: float | None = None
    last_hash: str = GENESIS
    last_seq: int = -1
    reopened: dict[str, int] = field(default_factory=dict)
    """Phase -> how many operator rewinds re-opened it in this epoch (a
    correction's rewind is not counted: it re-reads, it does not redo)."""
    reopened_at: dict[str, float] = field(default_factory=dict)
    """Phase -> when the last of those rewinds was recorded: what the phase
    did before it is not part of its replay (run/replay.py, run/patches.py)."""


def fold(entries: Sequence[Entry]) -> Folded:
    """Replay the trusted entries: phase entries mark their phase done; a
    rewind re-opens its target and everything after it; an env entry records
    an approved environment; a degrade entry records accepted gaps."""
    st = Folded()
    for e in entries:
        env = e.env
        kind = env["kind"]
        world = env.get("env") or {}
        st.probes = dict(world.get("probes") or {})
        if world.get("shape") is not None:
            st.shape = world["shape"]
        st.last_at = float(e.row.created_at)
        st.last_hash = e.row.payload_hash
        st.last_seq = int(e.row.seq)
        if kind == "phase":
            st.done[env["phase"]] = Done(e, str(world.get("phase_code") or ""), list(env.get("missing") or []))
        elif kind == "rewind":
            index = int(env["phase_index"])
            for name, d in list(st.done.items()):
                if int(d.entry.env["phase_index"]) >= index:
                    del st.done[name]
            st.skipped = {s for s in st.skipped if s not in set(env.get("reopen") or [])}
            if not env.get("correction"):
                for name in env.get("reopen") or []:
                    st.reopened[name] = st.reopened.get(name, 0) + 1
                    st.reopened_at[name] = float(e.row.created_at)
        elif kind == "env":
            for name, code in (env.get("approved_code") or {}).items():
                if name in st.done:
                    st.done[name].code = code
        elif kind == "degrade":
            st.skipped |= set(env.get("skip") or [])
    return st
