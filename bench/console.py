"""Figures 7 and 8: the console at scale and live latency, headless.

Each measurement runs in a child process (`python -m bench.console ...`) so
peak memory (RSS) is the console's own and nothing is shared between sizes."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._util import Figure, at_most, below, median, p95

ROOT = Path(__file__).resolve().parent.parent


def available() -> str | None:
    try:
        from phasegate.console.app import ConsoleApp  # noqa: F401
        from phasegate.console.widgets.runs_table import RunsTable  # noqa: F401
    except ImportError as exc:
        return f"console not importable yet ({exc})"
    return None


def _child(*args: str, timeout: float = 600) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.console", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"console child {args[0]} failed (exit {proc.returncode}): {proc.stderr[-1500:]}")
    return dict(json.loads(lines[-1]))


def run_scale(quick: bool, rounds: int, stores: dict[int, Path]) -> list[Figure]:
    skip = available()
    sizes = sorted(stores)
    if skip is not None:
        return [
            Figure(
                f"console first paint, {sizes[-1]:,} runs / {sizes[0]:,}",
                None,
                "x",
                "<= 2x",
                None,
                group="7 console",
                skipped=skip,
            ),
            Figure(
                f"console peak RSS, {sizes[-1]:,} runs", None, "MB", "< 200 MB", None, group="7 console", skipped=skip
            ),
        ]
    res: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:  # round-robin, so every size sees the same machine load
            res[n].append(_child("scale", "--db", str(stores[n])))
    figs: list[Figure] = []
    for n in sizes:
        paint = [r["paint"] for r in res[n]]
        end = [r["end"] for r in res[n]]
        rss = [r["rss_mb"] for r in res[n]]
        figs.append(
            Figure(
                f"console first paint, {n:,} runs",
                median(paint) * 1e3,
                "ms",
                group="7 console",
                detail=f"App.run_test() entered to the runs table painted with rows ({res[n][0]['rows']} rows shown of {res[n][0]['total']:,})",
                samples=[x * 1e3 for x in paint],
            )
        )
        figs.append(
            Figure(
                f"console scroll to end, {n:,} runs",
                median(end) * 1e3,
                "ms",
                group="7 console",
                detail="'G' pressed to the last run under the cursor",
                samples=[x * 1e3 for x in end],
            )
        )
        first = [r["first"] for r in res[n]]
        ratios = [e / f for e, f in zip(end, first, strict=True)]
        tgt, met = at_most(median(ratios), 1.5)
        if res[n][0]["total"] <= res[n][0]["rows"]:
            # One page: 'G' and 'g' only move the cursor, no page is read.
            tgt, met = None, None
        figs.append(
            Figure(
                f"console scroll to end / first page, {n:,} runs",
                median(ratios),
                "x",
                tgt,
                met,
                group="7 console",
                baseline=f"'g' from the last page to the first page shown: {median(first) * 1e3:.0f} ms",
                detail=(
                    f"'G' to the last page: {median(end) * 1e3:.0f} ms; both read one page by keyset and show it; "
                    f"against first paint ({median(paint) * 1e3:.0f} ms, app start included): "
                    f"{median(end) / median(paint):.2f}x"
                ),
                samples=ratios,
            )
        )
        tgt, met = below(max(rss), 200, " MB") if n == sizes[-1] else (None, None)
        figs.append(
            Figure(
                f"console peak RSS, {n:,} runs",
                max(rss),
                "MB",
                tgt,
                met,
                group="7 console",
                detail="peak RSS (VmHWM) of the console's own process, Python, Textual and the engine included; the largest of the runs",
                samples=rss,
            )
        )
    lo, hi = sizes[0], sizes[-1]
    a = median([r["paint"] for r in res[lo]])
    b = median([r["paint"] for r in res[hi]])
    tgt, met = at_most(b / a, 2.0)
    figs.append(
        Figure(
            f"console first paint, {hi:,} runs / {lo:,}",
            b / a,
            "x",
            tgt,
            met,
            group="7 console",
            baseline=f"{lo:,} runs: {a * 1e3:.0f} ms",
            detail=f"{hi:,} runs: {b * 1e3:.0f} ms",
            samples=[y["paint"] / x["paint"] for x, y in zip(res[lo], res[hi], strict=True)],
        )
    )
    return figs


def run_live(quick: bool, store: Path, *, runs: int | None = None, commits: int | None = None) -> list[Figure]:
    """`runs`: the store is a large console store (sorted by run id, see `_live`);
    `commits`: how many decisions are timed (by default 10, or 50 in a full run)."""
    skip = available()
    name = "live latency: commit in another process to the console showing it"
    if runs is not None:
        name += f", {runs:,} runs"
    if skip is not None:
        return [
            Figure(name + " (median)", None, "s", "< 0.5 s", None, group="8 live", skipped=skip),
            Figure(name + " (p95)", None, "s", None, None, group="8 live", skipped=skip),
        ]
    n = commits or (10 if quick else 50)
    by_id = runs is not None
    r = _child("live", "--db", str(store), "--commits", str(n), *(["--by-id"] if by_id else []), timeout=60 + n * 30)
    lat = r["latencies"]
    tgt, met = below(median(lat), 0.5, " s")
    detail = (
        f"{len(lat)} commits: Engine.decide(RUN, 'approve') (what `phasegate decide` runs) in one long-lived "
        f"child process; from the decision's own timestamp (taken before its commit) to the decided run's row "
        f"showing it in the headless console (file events on, its defaults), commits spaced wider than its "
        f"refresh coalescing interval; "
        f"{r['missed']} not seen within 10 s (counted as 10 s)"
        + (
            "; the list sorted by run id (s), so a decided run stays on the first page (in attention order "
            "it leaves it for the hundreds of thousands of runs that need a person)"
            if by_id
            else ""
        )
    )
    return [
        Figure(name + " (median)", median(lat), "s", tgt, met, group="8 live", detail=detail, samples=lat),
        Figure(name + " (p95)", p95(lat), "s", None, None, group="8 live", samples=lat),
    ]


# -- the child side --------------------------------------------------------------


async def _until(cond: Any, pilot: Any, timeout: float = 120.0) -> None:
    # A bare sleep, not pilot.pause(): the app runs on this same loop, and
    # pause() first waits for every widget's queue, which would be measured too.
    end = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > end:
            raise TimeoutError("the console did not get there in time")
        await asyncio.sleep(0.002)


def _table(app: Any) -> Any:
    from phasegate.console.widgets.runs_table import RunsTable

    try:
        return app.screen.query_one(RunsTable)
    except Exception:  # noqa: BLE001 - the runs screen is not mounted yet
        return None


def _peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM). Not ru_maxrss: Linux carries the
    parent's high-water mark across fork and exec into it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _scale(db: str) -> dict[str, Any]:
    from phasegate import Engine
    from phasegate.console.app import ConsoleApp

    t0 = time.perf_counter()
    engine = Engine(db, create=False, readonly=True)
    app = ConsoleApp(engine, read_only=True, poll_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(lambda: (t := _table(app)) is not None and t.row_count > 0, pilot)
        await pilot.pause()  # one more turn of the loop: the rows are on screen
        paint = time.perf_counter() - t0
        table = _table(app)
        rows = table.row_count
        total = engine.counts()
        table.focus()
        t1 = time.perf_counter()
        await pilot.press("G")
        await _until(
            lambda: not table.has_next and table.row_count > 0 and table.cursor_row == table.row_count - 1, pilot
        )
        await pilot.pause()
        end = time.perf_counter() - t1
        # Back to the first page: the same kind of work as the last one (a
        # page read and shown), which keyset paging makes cost the same.
        t2 = time.perf_counter()
        await pilot.press("g")
        await _until(lambda: not table.has_previous and table.row_count > 0 and table.cursor_row == 0, pilot)
        await pilot.pause()
        first = time.perf_counter() - t2
    engine.close()
    return {
        "paint": paint,
        "end": end,
        "first": first,
        "rss_mb": _peak_rss_mb(),
        "rows": rows,
        "total": sum(total.values()),
    }


async def _live(db: str, commits: int, by_id: bool) -> dict[str, Any]:
    from phasegate import Engine
    from phasegate.console.app import ConsoleApp

    engine = Engine(db, create=False)
    order = "run_id" if by_id else "attention"
    listed = engine.runs(statuses=["blocked"], order=order, limit=commits * 2)
    blocked = [r.run_id for r in listed if not r.attention.startswith("decided")][:commits]
    if len(blocked) < commits:
        raise RuntimeError(f"the live store holds {len(blocked)} blocked runs; {commits} needed")
    app = ConsoleApp(engine, read_only=True)
    lat: list[float] = []
    missed = 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(lambda: (t := _table(app)) is not None and t.row_count > 0, pilot)
        if by_id:
            table = _table(app)
            table.focus()
            await pilot.press("s")  # the sort after attention: by run id
            await _until(lambda: table.run_id_at(0) == min(blocked), pilot)
        await pilot.pause(0.5)
        # One long-lived committer process: a fresh interpreter per commit would
        # make the figure wait on Python start-up, not on the console.
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.console",
            "commit",
            "--db",
            db,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None
        # The console folds changes that come faster than REFRESH_EVERY into
        # one refresh (a busy store); commits are spaced wider than that, so
        # each one measures how fast a change reaches the screen.
        spacing = float(getattr(ConsoleApp, "REFRESH_EVERY", 0.0)) + 0.3
        for rid in blocked:
            await pilot.pause(spacing)
            proc.stdin.write((rid + "\n").encode())
            await proc.stdin.drain()

            def shown(rid: str = rid) -> bool:
                t = _table(app)
                if t is None or t.index_of(rid) is None:
                    return False
                return "decided" in str(t.get_row(rid)[-1])

            seen = None
            end = time.time() + 10
            while time.time() < end:
                if shown():
                    seen = time.time()
                    break
                await asyncio.sleep(0.002)
            reply = json.loads((await proc.stdout.readline()).decode() or "{}")
            if "at" not in reply:
                raise RuntimeError(f"the committer failed: {reply}")
            if seen is None:
                missed += 1
                lat.append(10.0)
            else:
                lat.append(max(0.0, seen - float(reply["at"])))
        proc.stdin.close()
        await proc.wait()
    engine.close()
    return {"latencies": lat, "missed": missed}


def _commit(db: str) -> None:
    """Decide `approve` on each run id read from stdin, through the engine (the
    same path as `phasegate decide`), and answer with the decision's timestamp,
    taken before its commit: the latency measured includes the commit itself."""
    from phasegate import Engine

    with Engine(db, create=False) as engine:
        for line in sys.stdin:
            rid = line.strip()
            try:
                engine.decide(rid, "approve", reason="bench: live latency", operator="bench")
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops
                print(json.dumps({"error": str(exc)}), flush=True)
                continue
            conn = sqlite3.connect(db)
            at = conn.execute("SELECT max(at) FROM phasegate_decisions WHERE run_id = ?", (rid,)).fetchone()[0]
            conn.close()
            print(json.dumps({"at": at, "after_commit": time.time()}), flush=True)


def _main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["scale", "live", "commit"])
    ap.add_argument("--db", required=True)
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--by-id", action="store_true", help="sort the list by run id first (a large store)")
    a = ap.parse_args(argv)
    if a.what == "commit":
        _commit(a.db)
        return
    if a.what == "scale":
        out = asyncio.run(_scale(a.db))
    else:
        out = asyncio.run(_live(a.db, a.commits, a.by_id))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1:])
