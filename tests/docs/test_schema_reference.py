"""docs/reference/schema.md's generated part is the code's schema as it is:
its version, its tables, columns and indexes, and what each version added."""

from __future__ import annotations

from phasegate.store.version import SCHEMA_VERSION
from tests.docs import schema_page


def test_the_schema_page_is_generated_from_the_code() -> None:
    text = schema_page.PAGE.read_text()
    assert schema_page.page_with(schema_page.render(), text) == text, (
        "docs/reference/schema.md is out of date: run `python -m tests.docs.schema_page`"
    )


def test_the_page_says_the_version_the_code_writes() -> None:
    text = schema_page.PAGE.read_text()
    assert f"schema version **{SCHEMA_VERSION}**" in text
    # Every version has its row, with the release it came in.
    for v in range(1, SCHEMA_VERSION + 1):
        assert f"\n| {v} | " in text and f"\n| {v} | ? |" not in text, v


def test_every_table_and_column_is_on_the_page() -> None:
    from phasegate.store import schema

    text = schema_page.PAGE.read_text()
    for table in schema.metadata.tables.values():
        assert f"### `{table.name}`" in text
        for col in table.columns:
            assert f"| `{col.name}`" in text, (table.name, col.name)
