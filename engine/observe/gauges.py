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


class StoreCollector:
    """A `prometheus_client` collector of `StoreGauges`, read at each scrape.

    Args:
        read: One look at the store; a failure is reported as `phasegate_store_up 0`.
        statuses: Every run status, so that a status with no run reads 0, not absent.
        kinds: Every block kind, likewise.
    """

    def __init__(self, read: Callable[[], StoreGauges], statuses: list[str], kinds: list[str]) -> None:
        self._read = read
        self._statuses = statuses
        self._kinds = kinds

    def collect(self) -> Iterator[Any]:
        """The gauges, as the registry asks for them at a scrape.

        Returns:
            Metric families.
        """
        from prometheus_client.core import GaugeMetricFamily

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
        for s in sorted(set(self._statuses) | set(g.runs_by_status)):
            runs.add_metric([s], g.runs_by_status.get(s, 0))
        yield runs
        blocked = GaugeMetricFamily("phasegate_runs_blocked", "Blocked runs by block kind", labels=["kind"])
        for k in sorted(set(self._kinds) | set(g.blocked_by_kind)):
            blocked.add_metric([k], g.blocked_by_kind.get(k, 0))
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

    def describe(self) -> list[Any]:
        """Nothing described ahead: the registry then does not collect at registration (a store read).

        Returns:
            An empty list.
        """
        return []
