"""How many xdist workers a pytest run gets (tests/support/parallel.py)."""

from __future__ import annotations

import pytest

from tests.support import parallel


def test_the_whole_suite_or_a_folder_gets_twice_the_cpus_within_bounds() -> None:
    assert parallel.workers(["tests"], {}, 2) == 4
    assert parallel.workers(["tests/engine", "tests/unit/test_chain_unit.py"], {}, 2) == 4
    assert parallel.workers(["tests"], {}, 1) == 2
    assert parallel.workers(["tests"], {}, None) == 2
    assert parallel.workers(["tests"], {}, 64) == parallel.MAX_WORKERS


def test_named_tests_only_run_in_this_process() -> None:
    assert parallel.workers(["tests/unit/test_chain_unit.py::test_x"], {}, 2) == 0
    assert parallel.workers(["tests/a.py::t", "tests/b.py::C::t[1]"], {}, 2) == 0
    # a named test beside a whole file is not "named tests only"
    assert parallel.workers(["tests/a.py::t", "tests/b.py"], {}, 2) == 4


def test_unit_tests_alone_run_in_this_process() -> None:
    assert parallel.workers(["tests/unit"], {}, 2) == 0
    assert parallel.workers(["tests/unit/", "tests/unit/test_planner.py", "tests/engine/x.py::t"], {}, 2) == 0
    assert parallel.workers(["tests/unit", "tests/engine"], {}, 2) == 4
    assert parallel.workers(["tests/unitary"], {}, 2) == 4


def test_the_unit_mark_alone_runs_in_this_process() -> None:
    assert parallel.workers([], {}, 2, "unit") == 0
    assert parallel.workers(["tests"], {}, 2, " unit ") == 0
    assert parallel.workers(["tests"], {}, 2, "not unit") == 4
    assert parallel.workers(["tests"], {}, 2, "unit or postgres") == 4
    assert parallel.workers(["tests"], {parallel.ENV: "3"}, 2, "unit") == 3


def test_the_environment_decides_when_set() -> None:
    assert parallel.workers(["tests"], {parallel.ENV: "0"}, 2) == 0
    assert parallel.workers(["tests/a.py::t"], {parallel.ENV: "3"}, 2) == 3
    assert parallel.workers(["tests"], {parallel.ENV: " "}, 2) == 4
    for bad in ("x", "-1", "2.5"):
        with pytest.raises(ValueError, match=parallel.ENV):
            parallel.workers(["tests"], {parallel.ENV: bad}, 2)


def test_the_heavy_parts_sort_first_in_their_listed_order() -> None:
    ids = ["tests/unit/test_a.py::t", "tests/web/test_w.py::t", "tests/bench/test_quick.py::t", "tests/engine/x.py::t"]
    assert sorted(ids, key=parallel.heavy_rank) == [
        "tests/bench/test_quick.py::t",
        "tests/web/test_w.py::t",
        "tests/unit/test_a.py::t",
        "tests/engine/x.py::t",
    ]
