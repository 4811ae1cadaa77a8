"""An agent's research task: plan the questions, gather sources with tool
calls, analyse them, write a report, publish it.

What it shows:
- tool calls as durable steps: search is flaky (retried), fetching is slow;
  every finished call is saved, so an interrupted agent does not pay for its
  tool calls twice;
- floors and degraded runs: `gather` captures the web as it was at that moment,
  so it is declared `rederivable=False`: if its saved output is lost it cannot
  be silently recomputed. `analyze` cannot start without it (its floor), so the
  run stops below its floor and asks; `write_report` needs the plan only (its
  floor) and, when an operator degrades the run, writes a preliminary report
  that names the gaps instead of throwing the task away;
- environment probes: the tool registry's version, the style guide's hash
  (the `write_report` phase depends on it), the code version.

Inputs: `workdir` (made by `prepare`), `topic`, `questions`, `pace`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from phasegate import PhaseContext, Workflow

from . import __version__
from ._points import pace, pause_point
from .source import retry
from .tools import Toolbox, ToolTimeout

wf = Workflow("research")

_ANGLES = (
    "current capacity and cost",
    "main technical risks",
    "policy and subsidies",
    "supply chain constraints",
    "who is deploying it and where",
    "open questions",
)


class Page(BaseModel):
    question: str
    url: str
    title: str
    text: str


class Finding(BaseModel):
    question: str
    finding: str
    confidence: str
    sources: int


class Report(BaseModel):
    title: str
    markdown: str
    degraded: bool
    gaps: list[str]


def _workdir(inputs: dict[str, Any]) -> Path:
    return Path(inputs["workdir"])


@wf.probe("tools")
def tools_version(inputs: dict[str, Any]) -> str:
    """Which tool registry (and search index) the sources came from."""
    reg = json.loads((_workdir(inputs) / "tools.json").read_text())
    return f"{reg['version']} ({reg['search_index']})"


@wf.probe("style_guide")
def style_guide(inputs: dict[str, Any]) -> str:
    data = (_workdir(inputs) / "style.md").read_bytes()
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


@wf.probe("code_version")
def code_version() -> str:
    return f"sample_runs {__version__}"


@wf.phase()
def plan(ctx: PhaseContext) -> list[str]:
    """Break the topic into questions (cheap; redone if interrupted)."""
    topic = str(ctx.inputs.get("topic", "grid-scale storage"))
    n = int(ctx.inputs.get("questions", 4))
    return [f"{topic}: {_ANGLES[i % len(_ANGLES)]}?" for i in range(n)]


@wf.phase(needs=["plan"], rederivable=False)
def gather(ctx: PhaseContext, plan: list[str]) -> list[Page]:
    """Search for each question and read the top results: every tool call is a
    durable step. What it finds is a snapshot of the web at that moment."""
    tb = Toolbox(_workdir(ctx.inputs), pace=pace(ctx.inputs))
    pages: list[Page] = []
    for i, q in enumerate(plan):
        hits = ctx.step(f"search:{i}", lambda q=q: retry(lambda: tb.search(q), on=(ToolTimeout,)), durable=True)
        for j, hit in enumerate(hits[:2]):
            page = ctx.step(f"fetch:{i}.{j}", tb.fetch, hit["url"], durable=True)
            pages.append(Page(question=q, url=hit["url"], title=hit["title"], text=page["text"]))
        pause_point(f"gathered:{i}")
    return pages


@wf.phase(needs=["plan", "gather"], floor=["gather"])
def analyze(ctx: PhaseContext, plan: list[str], gather: list[Page]) -> list[Finding]:
    """One finding per question from the pages gathered for it (a costly model
    call each, so durable). Without the gathered pages there is nothing to analyse."""
    pause_point("start:analyze")
    tb = Toolbox(_workdir(ctx.inputs), pace=pace(ctx.inputs))
    out = []
    for i, q in enumerate(plan):
        texts = [p.text for p in gather if p.question == q]
        out.append(Finding(**ctx.step(f"summarize:{i}", tb.summarize, q, texts, durable=True)))
    return out


@wf.phase(needs=["plan", "gather", "analyze"], floor=["plan"], probes=["style_guide"])
def write_report(
    ctx: PhaseContext, plan: list[str], gather: list[Page] | None = None, analyze: list[Finding] | None = None
) -> Report:
    """Write the report. With findings it is the full report; without them (a
    degraded run) it is a preliminary report that lists what is missing."""
    pause_point("start:write_report")
    topic = str(ctx.inputs.get("topic", "research"))
    lines = [f"# {topic.capitalize()}", ""]
    gaps = sorted(ctx.missing)
    if gaps:
        lines += [f"> Preliminary: written without {', '.join(gaps)} (lost, accepted by an operator).", ""]
    found = {f.question: f for f in analyze or []}
    for q in plan:
        lines.append(f"## {q}")
        f = found.get(q)
        lines.append(
            f"{f.finding} (confidence: {f.confidence}, {f.sources} sources)"
            if f
            else "_Not answered: no analysis available._"
        )
        lines.append("")
    if gather:
        lines.append("## Sources")
        lines += [f"- [{p.title}]({p.url})" for p in gather]
    return Report(title=topic, markdown="\n".join(lines) + "\n", degraded=bool(gaps), gaps=gaps)


@wf.phase(needs=["write_report"])
def publish(ctx: PhaseContext, write_report: Report) -> str:
    """Save the report where readers find it (rewriting the same file is harmless)."""
    pause_point("start:publish")
    folder = _workdir(ctx.inputs) / "reports"

    def save(key: str) -> str:
        folder.mkdir(exist_ok=True)
        slug = re.sub(r"[^a-z0-9]+", "-", write_report.title.lower()).strip("-") or "report"
        path = folder / f"{slug}.md"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(write_report.markdown)
        os.replace(tmp, path)
        return str(path)

    return ctx.effect("publish", save, idempotent=True)


def prepare(
    workdir: str | Path, *, topic: str = "grid-scale storage", questions: int = 4, pace: float = 0.0
) -> dict[str, Any]:
    """Lay out a research working directory (tool registry, style guide) and
    return a run's inputs."""
    root = Path(workdir).absolute()
    root.mkdir(parents=True, exist_ok=True)
    from .tools import TOOLS_VERSION

    (root / "tools.json").write_text(
        json.dumps({"version": TOOLS_VERSION, "search_index": "web-2026-11"}, indent=2) + "\n"
    )
    (root / "style.md").write_text("# House style\n\nShort sentences. Cite every claim. Say what is uncertain.\n")
    return {"workdir": str(root), "topic": topic, "questions": questions, "pace": pace}
