"""Remake docs/console.svg, the console shown by README.md and the docs' home
page: `phasegate demo` builds its store in a scratch folder, the console opens
on it at a terminal's size (110x30 by default, as wide as the README shows well) and saves what it shows.

    python -m tests.docs.hero_screenshot [--size 110x30] [--out docs/console.svg]

Not a test: the demo's runs carry the times they were made at, so no two
screenshots are the same bytes. Look at the result before committing it
(`chromium --headless --screenshot=console.png --window-size=1300,800
docs/console.svg` makes a PNG of it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.cli import ROOT, child_env


async def _shoot(db: Path, size: tuple[int, int], out: Path) -> None:
    from phasegate import Engine
    from phasegate.console.app import ConsoleApp

    with Engine(db, create=False) as engine:
        app = ConsoleApp(engine, live_events=False, poll_interval=0)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause(0.5)
            await pilot.pause()
            app.save_screenshot(filename=out.name, path=str(out.parent))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="110x30", help="COLUMNSxROWS")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "console.svg")
    args = ap.parse_args(argv)
    cols, rows = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "phasegate-demo.db"
        # A short live run: it is running in the picture and ends on its own.
        env = child_env({"PHASEGATE_DEMO_LIVE_SECONDS": "30"})
        built = subprocess.run(
            [sys.executable, "-m", "phasegate", "demo", "--no-console", "--force", "--db", str(db)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            print(built.stdout + built.stderr, file=sys.stderr)
            return built.returncode
        os.environ.setdefault("PHASEGATE_OPERATOR", "demo")
        asyncio.run(_shoot(db, (cols, rows), args.out.resolve()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
