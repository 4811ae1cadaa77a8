"""The per-phase counters made ahead of their first event take phase names
that may come from the store, which anyone who can write it can forge: at
most MAX_PHASES a workflow, and only names a phase could have."""

from __future__ import annotations

from phasegate.observe.metrics import MAX_PHASES, MetricsObserver, phase_name, render


def _series(obs: MetricsObserver, family: str) -> list[str]:
    return [ln for ln in render(obs.registry).decode().splitlines() if ln.startswith(family + "{")]


def test_a_workflows_phases_are_served_at_zero() -> None:
    obs = MetricsObserver()
    obs.workflow_phases("billing", ["load", "charge", "send email"])
    run = _series(obs, "phasegate_phases_run_total")
    assert sorted(run) == sorted(
        f'phasegate_phases_run_total{{phase="{p}",workflow="billing"}} 0.0' for p in ("load", "charge", "send email")
    )
    assert len(_series(obs, "phasegate_phases_failed_total")) == 3
    # The histograms wait for a phase's first call.
    assert not _series(obs, "phasegate_phase_seconds_bucket")


def test_forged_phase_names_make_no_series_and_many_are_cut() -> None:
    obs = MetricsObserver()
    forged = ["a/b", "x\u202ey", "bell\x07", "", "n" * 101, 7]
    obs.workflow_phases("w", forged + [f"p{i}" for i in range(1000)])  # type: ignore[list-item]
    run = _series(obs, "phasegate_phases_run_total")
    assert len(run) == MAX_PHASES
    assert all('phase="p' in ln for ln in run), run[:3]


def test_phase_name() -> None:
    assert phase_name("charge") and phase_name("send email") and phase_name("é")
    assert not any(phase_name(n) for n in ("", "a/b", "x\u202ey", "t\tab", "n" * 101, None, 3))
