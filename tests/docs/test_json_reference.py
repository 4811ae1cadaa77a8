"""The `status --json` table of docs/reference/json.md names exactly the
fields a real run's object has: every key the command prints is documented,
and every documented field is printed (a field written "only when" it has
something to say is allowed to be absent)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.docs.docs_support import DOCS
from tests.support import cli

PAGE = DOCS / "reference" / "json.md"


def _table() -> tuple[set[str], set[str]]:
    """(every field of the `status --json` table, those written only when set)."""
    text = PAGE.read_text()
    section = text.split("## `phasegate status --json`", 1)[1].split("\n## ", 1)[0]
    fields: set[str] = set()
    optional: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first, meaning = line.split("|")[1:3]
        names = set(re.findall(r"`(\w+)`", first))
        fields |= names
        if meaning.strip().startswith("only when") or meaning.strip().startswith("only for"):
            optional |= names
    return fields, optional


def test_status_json_fields_match_the_reference(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    prep = (
        "import json; from phasegate.sample_runs import billing;"
        f" print(json.dumps(billing.prepare({str(tmp_path / 'work')!r})))"
    )
    inputs = subprocess.run([sys.executable, "-c", prep], capture_output=True, text=True, env=cli.child_env())
    assert inputs.returncode == 0, inputs.stderr
    ran = cli.run(
        ["run", "phasegate.sample_runs.billing:wf", "--run-id", "r1", "--input", inputs.stdout, "--db", str(db)]
    )
    assert ran.returncode == 0, ran.stderr
    shown = cli.run(["status", "r1", "--json", "--db", str(db)])
    assert shown.returncode == 0, shown.stderr
    keys = set(json.loads(shown.stdout))
    fields, optional = _table()
    assert len(fields) > 20  # the table was read
    assert keys - fields == set(), "status --json fields missing from docs/reference/json.md"
    assert fields - optional - keys == set(), "docs/reference/json.md lists fields status --json does not print"
