"""The PostgreSQL side of a kill sweep takes a sample of SQLite's points
(tests/support/soak.py): every kind still lands on both backends."""

from __future__ import annotations

import pytest

from tests.support import soak

POINTS = [
    "start:plan",
    "after-step:plan/fetch:1",
    "after-step:plan/fetch:2",
    "after-step:plan/fetch:3",
    "in-phase:plan/@recv:pay",
    "in-phase:plan/@recv:pay2",
    "after-step:ship/@recvwait:x",
    "after-checkpoint:plan",
    "after-checkpoint:pay",
    "after-checkpoint:ship",
]


def test_sqlite_takes_every_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(soak.ENV, raising=False)
    assert soak.kill_points(POINTS, "sqlite") == POINTS


def test_postgres_takes_a_sample_with_every_kind_first_and_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(soak.ENV, raising=False)
    got = soak.kill_points(POINTS, "postgres")
    assert len(got) < len(POINTS)
    assert got[0] == POINTS[0] and got[-1] == POINTS[-1]
    assert got == [p for p in POINTS if p in got], "in their order"
    assert {soak._kind(p) for p in got} == {soak._kind(p) for p in POINTS}


def test_soaking_takes_every_point_on_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(soak.ENV, "1")
    assert soak.kill_points(POINTS, "postgres") == POINTS
