"""A data pipeline: download a day's order files from a remote source,
transform each one, publish the result to a target folder.

What it shows:
- retries at the edge: the simulated source (`phasegate.sample_runs.source`) rate-limits
  and fails transiently; each download is retried with backoff, and kept as a
  durable step once it succeeds, so a restart does not fetch it again;
- costly durable steps: each file's transform is saved when it finishes, so a
  process killed in the middle of `transform` resumes at the next file;
- an effect: publishing writes the target folder; it is idempotent (the
  folder is rebuilt and swapped in whole), so repeating it is safe;
- a permanent error (a file removed from the source) fails the run rather
  than retrying forever;
- environment probes: the pipeline config's hash (the `transform` phase
  depends on it), the target table's schema version, the code version.

Inputs: `workdir` (made by `prepare`), `batch`, `pace`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from phasegate import PhaseContext, Workflow

from . import __version__
from ._points import nap, pace, pause_point
from .source import Source, retry

wf = Workflow(
    "pipeline",
    runbooks={
        "env_mismatch": "The pipeline config or target schema changed: diff them, then approve or rewind to transform.",
        "publish": "Publishing stopped: check the target's load log before deciding.",
    },
)


class Download(BaseModel):
    name: str
    sha256: str
    content: str
    retries: int = 0


class Part(BaseModel):
    name: str
    rows_in: int
    totals: dict[str, int]
    """Amount in cents per group (region)."""


def _workdir(inputs: dict[str, Any]) -> Path:
    return Path(inputs["workdir"])


def _config(inputs: dict[str, Any]) -> dict[str, Any]:
    return json.loads((_workdir(inputs) / "config" / "pipeline.json").read_text())  # type: ignore[no-any-return]


@wf.probe("pipeline_config")
def pipeline_config(inputs: dict[str, Any]) -> str:
    data = (_workdir(inputs) / "config" / "pipeline.json").read_bytes()
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


@wf.probe("target_schema")
def target_schema(inputs: dict[str, Any]) -> str:
    """The version of the table the target folder feeds."""
    return (_workdir(inputs) / "target" / "SCHEMA").read_text().strip()


@wf.probe("code_version")
def code_version() -> str:
    return f"sample_runs {__version__}"


@wf.phase()
def discover(ctx: PhaseContext) -> list[str]:
    """Ask the source which files the batch has."""
    return Source(_workdir(ctx.inputs) / "source").list()


@wf.phase(needs=["discover"])
def download(ctx: PhaseContext, discover: list[str]) -> list[Download]:
    """Fetch every file, retrying rate limits and transient errors; each
    finished download is a durable step."""
    p = pace(ctx.inputs)
    src = Source(_workdir(ctx.inputs) / "source", burst=4, window=0.05 + 0.1 * p, latency=0.01 * p)
    out = []
    for name in discover:

        def fetch(name: str = name) -> Download:
            log: list[str] = []
            text = retry(lambda: src.fetch(name), log=log)
            return Download(name=name, sha256=hashlib.sha256(text.encode()).hexdigest(), content=text, retries=len(log))

        out.append(ctx.step(f"download:{name}", fetch, durable=True))
        pause_point(f"downloaded:{name}")
    return out


def transform_file(d: Download, config: dict[str, Any], inputs: dict[str, Any]) -> Part:
    nap(inputs, 0.3)  # a heavy transform: this is why each file is a durable step
    totals: dict[str, int] = {}
    rows = [line.split(",") for line in d.content.splitlines()[1:] if line.strip()]
    for _ts, region, cents in rows:
        if int(cents) < int(config.get("min_cents", 0)):
            continue
        totals[region] = totals.get(region, 0) + int(cents)
    return Part(name=d.name, rows_in=len(rows), totals=totals)


@wf.phase(needs=["download"], probes=["pipeline_config"])
def transform(ctx: PhaseContext, download: list[Download]) -> list[Part]:
    """Aggregate each file by region, one durable step per file."""
    config = _config(ctx.inputs)
    out = []
    for d in download:
        out.append(ctx.step(f"transform:{d.name}", transform_file, d, config, ctx.inputs, durable=True))
        pause_point(f"transformed:{d.name}")
    return out


@wf.phase(needs=["transform"])
def publish(ctx: PhaseContext, transform: list[Part]) -> dict[str, Any]:
    """Write the batch into the target folder: built beside it, then swapped in
    whole, so a repeat replaces rather than duplicates."""
    pause_point("start:publish")
    target = _workdir(ctx.inputs) / "target" / str(ctx.inputs.get("batch", "batch"))

    def write(key: str) -> dict[str, Any]:
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        totals: dict[str, int] = {}
        for i, part in enumerate(transform):
            (tmp / f"part-{i:03d}.json").write_text(json.dumps(part.model_dump(), sort_keys=True))
            for k, v in part.totals.items():
                totals[k] = totals.get(k, 0) + v
        (tmp / "_MANIFEST.json").write_text(
            json.dumps({"key": key, "parts": len(transform), "totals": totals}, sort_keys=True)
        )
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        return {"dir": str(target), "parts": len(transform), "totals": totals}

    return ctx.effect("publish", write, idempotent=True)


def prepare(
    workdir: str | Path,
    *,
    batch: str = "2026-11-29",
    files: int = 6,
    rows: int = 40,
    missing: tuple[str, ...] = (),
    pace: float = 0.0,
) -> dict[str, Any]:
    """Lay out a pipeline working directory (source, config, target) and return a
    run's inputs. Names in `missing` are listed by the source but not served."""
    root = Path(workdir).absolute()
    src = root / "source"
    src.mkdir(parents=True, exist_ok=True)
    names = [f"orders-{batch}-{i:02d}.csv" for i in range(files)]
    regions = ("north", "south", "east", "west")
    for i, name in enumerate(names):
        if name in missing or str(i) in missing:
            continue
        seed = int(hashlib.sha256(name.encode()).hexdigest(), 16)
        lines = ["ts,region,cents"] + [
            f"{batch}T{(k * 7) % 24:02d}:{(k * 13) % 60:02d}:00Z,{regions[(seed >> k) % 4]},{(seed >> (2 * k)) % 9000 + 100}"
            for k in range(rows)
        ]
        (src / name).write_text("\n".join(lines) + "\n")
    (src / "MANIFEST").write_text("\n".join(names) + "\n")
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "pipeline.json").write_text(
        json.dumps({"group_by": "region", "min_cents": 200}, indent=2) + "\n"
    )
    (root / "target").mkdir(exist_ok=True)
    (root / "target" / "SCHEMA").write_text("orders_daily v7\n")
    return {"workdir": str(root), "batch": batch, "pace": pace}
