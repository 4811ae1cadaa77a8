"""The README's API example runs as printed, and prints what the README says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from demo_support import ROOT, env


def test_readme_api_example_runs(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text()
    code = re.search(r"<!-- api-example -->\n```python\n(.*?)\n```", text, re.S)
    assert code, "the README lost its marked API example"
    printed = re.search(r"It prints:\n\n```\n(.*?)\n```", text, re.S)
    assert printed
    (tmp_path / "newsletter.py").write_text(code.group(1) + "\n")
    proc = subprocess.run(
        [sys.executable, "newsletter.py"], cwd=tmp_path, capture_output=True, text=True, env=env(), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == printed.group(1).strip()
    assert len((tmp_path / "out" / "outbox.jsonl").read_text().splitlines()) == 2


def test_registering_the_demo_command_stays_light() -> None:
    """Every `phasegate` invocation imports `phasegate.sample_runs.demo` to
    register the subcommand; it must not pull in the store, Rich or Textual to
    do so (`import phasegate` itself loads its names lazily)."""
    code = (
        "import sys, phasegate.sample_runs.demo; "
        "print(sorted(m for m in ('phasegate.console', 'phasegate.engine', 'sqlalchemy', 'rich', 'textual') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
