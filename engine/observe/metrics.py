"""Per-process Prometheus metrics (`worker --metrics`, `watch --metrics`):
what this process did, counted as it happens.

Labels are the workflow and the phase, never a run id: a label's values are
a time series each, and run ids grow without end. Imported only when metrics
are asked for; `prometheus_client` is the `metrics` extra.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from ..outcome import Outcome
from ..states import BlockKind, OutcomeStatus
from .gauges import build_version
from .hooks import Observer

T = TypeVar("T")

#: Phase durations span milliseconds (a phase that only reads) to hours.
PHASE_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0, 3600.0, 14400.0)
#: Every value of `phasegate_run_attempts_ended_total`'s `outcome` label.
OUTCOMES = tuple(s.value for s in OutcomeStatus) + ("error",)
#: Every value of `phasegate_effects_reconciled_total`'s `answer` label.
ANSWERS = ("done", "not_done", "unknown")
#: The most workflows whose series `know` creates from a store's runs: names
#: are read from the store, which is untrusted, so their number is bounded.
MAX_WORKFLOWS = 100
#: The phases of one workflow given series ahead of their first event (a
#: workflow with more gets the rest at their first event). The names may come
#: from the store, which anyone who can write it can forge: bounded, and only
#: names a phase could have (`phase_name`).
MAX_PHASES = 50
#: A checkpoint's commit is one fsync'd transaction: sub-millisecond to a second.
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class _PhaseSeries(NamedTuple):
    """One phase's series of each per-phase metric."""

    run: Any
    failed: Any
    seconds: Any
    commit: Any


class MetricsObserver(Observer):
    """Counts what the engine reports into a registry of its own.

    Args:
        registry: Where the metrics are registered (default: a new one, not
            the library's global registry, so two observers never collide).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        """What `/metrics` serves."""
        r = self.registry
        ProcessCollector(registry=r)
        Gauge("phasegate_build_info", "Always 1: the phasegate version serving", ["version"], registry=r).labels(
            build_version()
        ).set(1)
        self.attempts = Counter(
            "phasegate_run_attempts_total",
            "Executions of a run started here (a start or a resume)",
            ["workflow"],
            registry=r,
        )
        self.resumed = Counter(
            "phasegate_runs_resumed_total",
            "Executions of a run that existed already (a resume)",
            ["workflow"],
            registry=r,
        )
        self.ended = Counter(
            "phasegate_run_attempts_ended_total",
            "Executions ended, by how: completed, blocked, failed, interrupted or error",
            ["workflow", "outcome"],
            registry=r,
        )
        self.phases = Counter("phasegate_phases_run_total", "Phases called", ["workflow", "phase"], registry=r)
        self.phases_failed = Counter(
            "phasegate_phases_failed_total",
            "Phases that failed (after their retries)",
            ["workflow", "phase"],
            registry=r,
        )
        self.phase_seconds = Histogram(
            "phasegate_phase_duration_seconds",
            "A phase's call, its retries included",
            ["workflow", "phase"],
            buckets=PHASE_BUCKETS,
            registry=r,
        )
        self.commit_seconds = Histogram(
            "phasegate_checkpoint_commit_seconds",
            "A checkpoint's write transaction, from its start to its commit",
            ["workflow", "phase"],
            buckets=COMMIT_BUCKETS,
            registry=r,
        )
        self.effects = Counter(
            "phasegate_effects_performed_total", "Effects performed and recorded done", ["workflow"], registry=r
        )
        self.in_doubt = Counter(
            "phasegate_effects_in_doubt_total",
            "Effects found in doubt (the run stopped for an answer)",
            ["workflow"],
            registry=r,
        )
        self.reconciled = Counter(
            "phasegate_effects_reconciled_total",
            "In-doubt effects a reconcile hook was asked about, by its answer (done, not_done, unknown)",
            ["workflow", "answer"],
            registry=r,
        )
        self.steps = Counter(
            "phasegate_steps_saved_total", "Durable steps computed and saved", ["workflow"], registry=r
        )
        self.takeovers = Counter(
            "phasegate_lease_takeovers_total",
            "Leases taken over from a holder that died or stalled",
            ["workflow"],
            registry=r,
        )
        self.lease_renewals = Counter(
            "phasegate_lease_renewals_total", "Leases extended by a run's heartbeat", registry=r
        )
        self.heartbeats = Counter(
            "phasegate_heartbeats_total",
            "Deprecated: the same count as phasegate_lease_renewals_total (removed in the next release)",
            registry=r,
        )
        self.alerts_sent = Counter("phasegate_alerts_sent_total", "Alerts every hook took (watch)", registry=r)
        self.alerts_failed = Counter("phasegate_alerts_failed_total", "Alerts not delivered (watch)", registry=r)
        self._workflow: dict[str, str] = {}
        """run id -> workflow, for the events that only know the run (the ledger's)."""
        self._known: set[str] = set()
        """Workflows whose series exist already (`know`)."""
        self._series: dict[tuple[str, str], _PhaseSeries] = {}
        """(workflow, phase) -> its series: `labels()` validates and locks at
        each call, a dict lookup does not (the checkpoint's hot path)."""

    def know(self, workflows: Iterable[str]) -> None:
        """Create every workflow-labelled series at 0 for each of `workflows`,
        with every value of its other labels: a series that exists before its
        first event lets `increase()` see that event (a series born at 1 has
        no increase). At most `MAX_WORKFLOWS` workflows are taken from one call.

        Args:
            workflows: Workflow names (the store's, at a worker's start).
        """
        for i, wf in enumerate(workflows):
            if i >= MAX_WORKFLOWS:
                break
            if wf in self._known:
                continue
            self._known.add(wf)
            for c in (self.attempts, self.resumed, self.effects, self.in_doubt, self.steps, self.takeovers):
                c.labels(wf)
            for outcome in OUTCOMES:
                self.ended.labels(wf, outcome)
            for answer in ANSWERS:
                self.reconciled.labels(wf, answer)

    def workflow_phases(self, workflow: str, names: Sequence[str]) -> None:
        """Create the per-phase counters' series at 0 for each of `names` of a
        workflow known here (`know`), so `increase()` of a phase's runs and
        failures sees its first event.

        Args:
            workflow: The workflow's name.
            names: Its phases' names (at most `MAX_PHASES` that pass `phase_name`).
        """
        self.know([workflow])
        if workflow not in self._known:
            return
        taken = [n for n in names if phase_name(n)][:MAX_PHASES]
        for phase in taken:
            # The counters only: a histogram's buckets wait for the phase's first call.
            self.phases.labels(workflow, phase)
            self.phases_failed.labels(workflow, phase)

    def _phase_series(self, workflow: str, phase: str) -> _PhaseSeries:
        got = self._series.get((workflow, phase))
        if got is None:
            got = self._series[(workflow, phase)] = _PhaseSeries(
                self.phases.labels(workflow, phase),
                self.phases_failed.labels(workflow, phase),
                self.phase_seconds.labels(workflow, phase),
                self.commit_seconds.labels(workflow, phase),
            )
        return got

    def _wf(self, run_id: str) -> str:
        return self._workflow.get(run_id, "")

    def attempt(self, run_id: str, workflow: str, call: Callable[[], T]) -> T:
        self._workflow[run_id] = workflow
        self.know([workflow])
        self.attempts.labels(workflow).inc()
        outcome = "error"
        try:
            got = call()
            if isinstance(got, Outcome):
                outcome = got.status.value if got.status.value in OUTCOMES else "error"
                # An effect in doubt stops the run (at its start after a
                # crash, or mid-phase): the stop's reasons say which.
                doubted = sum(r.kind is BlockKind.IN_DOUBT_EFFECT for r in got.blocked)
                if doubted:
                    self.in_doubt.labels(workflow).inc(doubted)
            return got
        finally:
            self.ended.labels(workflow, outcome).inc()
            self._workflow.pop(run_id, None)

    def acquired(self, run_id: str, row: Any, owner: str, record: Callable[[str], None]) -> None:
        previous_owner = row.lease_owner
        if previous_owner == owner:
            return  # a new run: its row was inserted with this lease
        self.resumed.labels(self._wf(run_id)).inc()
        if previous_owner is not None:
            self.takeovers.labels(self._wf(run_id)).inc()

    def phase(self, run_id: str, workflow: str, phase: str, call: Callable[[], T]) -> T:
        series = self._phase_series(workflow, phase)
        series.run.inc()
        began = time.perf_counter()
        # A phase that raises out of its call stopped for another reason than
        # failing (a stop for an answer, a lost lease, Ctrl-C): a failure
        # comes back as the run's `Outcome`.
        failed = False
        try:
            got = call()
            failed = isinstance(got, Outcome)
            return got
        finally:
            series.seconds.observe(time.perf_counter() - began)
            if failed:
                series.failed.inc()

    def checkpoint(self, run_id: str, workflow: str, phase: str, began: float) -> None:
        self._phase_series(workflow, phase).commit.observe(time.monotonic() - began)

    def step(self, run_id: str, phase: str, key: str, began: float) -> None:
        self.steps.labels(self._wf(run_id)).inc()

    def effect(self, run_id: str, phase: str, key: str, outcome: str, began: float) -> None:
        wf = self._wf(run_id)
        if outcome == "done":
            self.effects.labels(wf).inc()
        elif outcome == "in_doubt":
            self.in_doubt.labels(wf).inc()
        elif outcome.startswith("reconciled_"):
            answer = outcome.removeprefix("reconciled_")
            self.reconciled.labels(wf, answer if answer in ANSWERS else "other").inc()

    def workflows(self, names: list[str]) -> None:
        self.know(names)

    def heartbeat(self) -> None:
        self.lease_renewals.inc()
        self.heartbeats.inc()

    def alert(self, ok: bool) -> None:
        (self.alerts_sent if ok else self.alerts_failed).inc()


def phase_name(name: object) -> bool:
    """A name a phase could have (no '/', printable: no control or bidi
    character, at most 100 characters): only those get a series ahead of time."""
    return isinstance(name, str) and 0 < len(name) <= 100 and "/" not in name and name.isprintable()


def render(registry: Any) -> bytes:
    """The registry in Prometheus's text format (what `/metrics` answers).

    Args:
        registry: A `CollectorRegistry`.

    Returns:
        The exposition text.
    """
    from prometheus_client import generate_latest

    return bytes(generate_latest(registry))
