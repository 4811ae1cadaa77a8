"""docs/operating/monitoring.md lists exactly the metrics phasegate serves:
the per-process ones a worker registers and the store-wide gauges, both ways."""

from __future__ import annotations

import re

import pytest

from tests.docs.docs_support import DOCS

pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")

from phasegate.observe.gauges import StoreCollector, StoreGauges  # noqa: E402
from phasegate.observe.metrics import MetricsObserver  # noqa: E402

PAGE = DOCS / "operating" / "monitoring.md"


def _documented() -> set[str]:
    return set(re.findall(r"^\| `(phasegate_\w+)` \|", PAGE.read_text(), flags=re.M))


def _served() -> set[str]:
    names: set[str] = set()
    for fam in MetricsObserver().registry.collect():
        # A counter's family is named without `_total`; the docs name the samples' series.
        names.add(fam.name + "_total" if fam.type == "counter" else fam.name)
    for fam in StoreCollector(lambda: StoreGauges(), ["completed"], ["integrity"]).collect():
        names.add(fam.name)
    # The standard `process_*` families are documented as a group, not one by one.
    assert {n for n in names if n.startswith("process_")}, "no process metrics served"
    return {n for n in names if n.startswith("phasegate_")}


def test_every_metric_is_documented_and_every_documented_metric_is_served() -> None:
    documented, served = _documented(), _served()
    assert served - documented == set(), "metrics missing from docs/operating/monitoring.md"
    assert documented - served == set(), "metrics in docs/operating/monitoring.md that are not served"
