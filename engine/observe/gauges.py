"""Store-wide gauges (`phasegate metrics`): the numbers, read from the store
by views/gauges.py, and their Prometheus collector.

One process per store serves these: every worker reporting them would count
the same runs once per worker. The collector reads the store at each scrape
(a few grouped counts through indexes, as the console's counts are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StoreGauges:
    """What one look at the store says."""

    runs_by_status: Mapping[str, int] = field(default_factory=dict)
    """Run status -> how many runs are in it, as an operator sees it (a dead holder's run is interrupted)."""
    blocked_by_kind: Mapping[str, int] = field(default_factory=dict)
    """Block kind -> how many blocked runs have a reason of that kind."""
    oldest_needing_person: float = 0.0
    """Seconds since the longest-waiting run that needs a person stopped (0: none does)."""
    waiting_for_answer: int = 0
    """Runs waiting for an answer to a question (`ctx.ask`); 0 where the store has no such runs."""
    workers_alive: int = 0
    """Workers whose heartbeat says they are alive."""
    proposals_unanswered: int = 0
    """Proposed decisions still waiting for a second operator."""
    oldest_waiting_by_kind: Mapping[str, float] = field(default_factory=dict)
    """Wait kind -> seconds since the longest-waiting `waiting` run of that kind began waiting."""
    timers_overdue: int = 0
    """Waiting runs whose wake time is `OVERDUE_AFTER` seconds past (no worker woke them)."""
    heartbeat_age_by_worker: Mapping[str, float] = field(default_factory=dict)
    """Worker id -> seconds since its last heartbeat, for the workers the store lists that have not stopped."""
    runs_ready: int = 0
    """Runs a worker could take now (decided, reset, due, or their holder gone)."""
    workers_busy: int = 0
    """Alive workers resuming at least one run."""


def build_version() -> str:
    """The installed phasegate's version (`phasegate_build_info{version}`).

    Returns:
        The version, or `unknown` when the package's metadata is not installed.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("phasegate")
    except PackageNotFoundError:
        return "unknown"


#: The most workers `phasegate_worker_heartbeat_age_seconds` lists (the store's, most recent first).
MAX_WORKERS = 100

OTHER = "other"
"""The label value of everything the store says that the code does not define."""


def bounded(counts: Mapping[str, int], known: list[str]) -> dict[str, int]:
    """Counts by a label the code defines, every known value present (0 when
    none) and whatever else the store holds summed as `other`: the store is
    untrusted, and each label value is a time series of its own.

    Args:
        counts: Label value -> count, as read from the store.
        known: The values the code defines.

    Returns:
        Known value -> count, in `known`'s order, then `other`.
    """
    out = {k: int(counts.get(k, 0)) for k in known}
    out[OTHER] = sum(int(n) for k, n in counts.items() if k not in out)
    return out


class StoreCollector:
    """A `prometheus_client` collector of `StoreGauges`, read at each scrape.

    Args:
        read: One look at the store; a failure is reported as `phasegate_store_up 0`.
        statuses: Every run status, so that a status with no run reads 0, not absent.
        kinds: Every block kind, likewise.
    """

    def __init__(
        self,
        read: Callable[[], StoreGauges],
        statuses: list[str],
        kinds: list[str],
        wait_kinds: list[str] | None = None,
        version: str = "",
    ) -> None:
        self._read = read
        self._statuses = statuses
        self._kinds = kinds
        self._wait_kinds = wait_kinds if wait_kinds is not None else ["answer", "timer", "retry_later", "message"]
        self._version = version

    def collect(self) -> Iterator[Any]:
        """The gauges, as the registry asks for them at a scrape.

        Returns:
            Metric families.
        """
        from prometheus_client.core import GaugeMetricFamily

        info = GaugeMetricFamily("phasegate_build_info", "Always 1: the phasegate version serving", labels=["version"])
        info.add_metric([self._version], 1)
        yield info
        up = GaugeMetricFamily("phasegate_store_up", "1 when the store could be read at this scrape")
        try:
            g = self._read()
        except Exception:  # noqa: BLE001 - a scrape answers; the store's trouble is the gauge
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        runs = GaugeMetricFamily("phasegate_runs", "Runs by status", labels=["status"])
        for s, n in bounded(g.runs_by_status, self._statuses).items():
            runs.add_metric([s], n)
        yield runs
        blocked = GaugeMetricFamily("phasegate_runs_blocked", "Blocked runs by block kind", labels=["kind"])
        for k, n in bounded(g.blocked_by_kind, self._kinds).items():
            blocked.add_metric([k], n)
        yield blocked
        yield GaugeMetricFamily(
            "phasegate_oldest_needing_person_seconds",
            "Seconds the longest-waiting run that needs a person has waited (blocked, failed, or asking)",
            value=g.oldest_needing_person,
        )
        yield GaugeMetricFamily(
            "phasegate_runs_waiting_for_answer", "Runs waiting for an answer to a question", value=g.waiting_for_answer
        )
        yield GaugeMetricFamily("phasegate_workers_alive", "Workers alive by their heartbeat", value=g.workers_alive)
        yield GaugeMetricFamily(
            "phasegate_proposals_unanswered",
            "Proposed decisions waiting for a second operator",
            value=g.proposals_unanswered,
        )
        oldest = GaugeMetricFamily(
            "phasegate_oldest_waiting_seconds",
            "Seconds the longest-waiting run of each wait kind has waited (0: none waits so)",
            labels=["kind"],
        )
        by_kind = {k: max(0.0, float(v)) for k, v in g.oldest_waiting_by_kind.items()}
        for k in self._wait_kinds:
            oldest.add_metric([k], by_kind.get(k, 0.0))
        oldest.add_metric([OTHER], max([v for k, v in by_kind.items() if k not in self._wait_kinds], default=0.0))
        yield oldest
        yield GaugeMetricFamily(
            "phasegate_timers_overdue",
            "Waiting runs whose wake time passed a minute ago or more (no worker woke them)",
            value=g.timers_overdue,
        )
        age = GaugeMetricFamily(
            "phasegate_worker_heartbeat_age_seconds",
            "Seconds since each running worker's last heartbeat (the workers the store lists)",
            labels=["worker"],
        )
        for w, a in sorted(g.heartbeat_age_by_worker.items())[:MAX_WORKERS]:
            age.add_metric([w], a)
        yield age
        yield GaugeMetricFamily(
            "phasegate_runs_ready", "Runs a worker could take now (the backlog)", value=g.runs_ready
        )
        yield GaugeMetricFamily(
            "phasegate_worker_busy", "Alive workers resuming at least one run", value=g.workers_busy
        )

    def describe(self) -> list[Any]:
        """Nothing described ahead: the registry then does not collect at registration (a store read).

        Returns:
            An empty list.
        """
        return []
