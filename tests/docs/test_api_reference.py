"""The API reference (docs/reference/api/) documents exactly the public API:
every name of `phasegate.__all__`, `phasegate.ops.__all__` and
`phasegate.testing.__all__` has its
`::: phasegate.NAME` entry, and every entry names a public name."""

from __future__ import annotations

import re

import phasegate
import phasegate.ops
import phasegate.testing
from tests.docs.docs_support import DOCS

PAGES = sorted((DOCS / "reference" / "api").glob("*.md"))


def _entries() -> list[str]:
    return [m for p in PAGES for m in re.findall(r"^::: (phasegate[\w.]*)$", p.read_text(), re.M)]


def test_every_public_name_has_an_entry() -> None:
    public = {f"phasegate.{n}" for n in phasegate.__all__} | {f"phasegate.ops.{n}" for n in phasegate.ops.__all__}
    public |= {f"phasegate.testing.{n}" for n in phasegate.testing.__all__}
    entries = _entries()
    assert public - set(entries) == set(), "public names missing from docs/reference/api/"
    assert set(entries) - public - {"phasegate.ops", "phasegate.testing"} == set(), (
        "entries for names that are not public"
    )
    assert len(entries) == len(set(entries)), "a name documented twice"
