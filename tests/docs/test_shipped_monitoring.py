"""monitoring/: the Grafana dashboard is JSON whose every query names metrics
phasegate serves; every alert rule names served metrics and has a runbook
link to a section of docs/operating/shipped-monitoring.md."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.docs.docs_support import DOCS

pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")

from tests.docs.test_metrics_reference import _served  # noqa: E402

MONITORING = DOCS.parent / "monitoring"
PAGE = DOCS / "operating" / "shipped-monitoring.md"
#: A histogram's series are its family's name and one of these.
_HISTOGRAM = re.compile(r"_(bucket|sum|count)$")


def _metrics_in(expr: str) -> set[str]:
    return {_HISTOGRAM.sub("", m) for m in re.findall(r"\bphasegate_\w+", expr)}


def _exprs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [e for k, v in node.items() for e in ([v] if k == "expr" and isinstance(v, str) else _exprs(v))]
    if isinstance(node, list):
        return [e for v in node for e in _exprs(v)]
    return []


def test_every_dashboard_query_names_served_metrics() -> None:
    dash = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = _exprs(dash["panels"])
    assert len(exprs) >= 15
    served = _served() | {_HISTOGRAM.sub("", n) for n in _served()}
    unknown = {m for e in exprs for m in _metrics_in(e)} - served
    assert not unknown, f"the dashboard queries metrics phasegate does not serve: {unknown}"
    # Every metric phasegate serves is on it somewhere (the deprecated heartbeat counter aside).
    shown = {m for e in exprs for m in _metrics_in(e)}
    assert served - shown <= {"phasegate_heartbeats_total"}, served - shown


def test_every_alert_names_served_metrics_and_links_its_runbook() -> None:
    rules = yaml.safe_load((MONITORING / "alerts.yml").read_text())["groups"][0]["rules"]
    served = _served()
    anchors = {re.sub(r"[^a-z0-9_-]", "", h.lower()) for h in re.findall(r"^### (\S+)$", PAGE.read_text(), re.M)}
    for rule in rules:
        unknown = _metrics_in(rule["expr"]) - served
        assert not unknown, f"{rule['alert']}: {unknown}"
        url = rule["annotations"]["runbook_url"]
        assert url == f"operating/shipped-monitoring/#{rule['alert'].lower()}", url
        assert rule["alert"].lower() in anchors, f"{rule['alert']} has no runbook section"
    wanted = {"in_doubt", "failed", "takeovers", "heartbeat_age", "timers_overdue", "store_up", "needing_person"}
    text = " ".join(r["expr"] for r in rules)
    assert all(w in text for w in wanted), [w for w in wanted if w not in text]
