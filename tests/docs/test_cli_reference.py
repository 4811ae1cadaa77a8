"""The command-line reference (docs/reference/cli.md) and the parser name the
same commands and the same flags, both ways.

The page has a `### \\`phasegate COMMAND\\`` section per command and a
`## Global options` section; each lists its options in a table whose first
column holds the flags (`--db PATH`, `-v`, `--verbose`). A command or flag
added to the parser without its line there fails here, and so does a line
for a flag the parser does not have.
"""

from __future__ import annotations

import argparse
import re

from phasegate.cli.parser import build_parser
from tests.docs.docs_support import DOCS

PAGE = DOCS / "reference" / "cli.md"
FLAG = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")


def _documented() -> dict[str, set[str]]:
    """Section (a command's name, or "" for the global options) -> the flags its tables list."""
    out: dict[str, set[str]] = {}
    section: str | None = None
    for line in PAGE.read_text().splitlines():
        if m := re.match(r"^### `phasegate ([a-z-]+)`$", line):
            section = m.group(1)
            out[section] = set()
        elif line == "## Global options":
            section = ""
            out[section] = set()
        elif line.startswith("## "):
            section = None
        elif section is not None and line.startswith("| `"):
            first = line.split("|")[1]
            out[section] |= set(FLAG.findall(first))
    return out


def _actual() -> dict[str, set[str]]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]

    def flags(p: argparse.ArgumentParser) -> set[str]:
        return {o for a in p._actions for o in a.option_strings if o not in ("-h", "--help")}

    return {"": flags(parser), **{name: flags(p) for name, p in sub.choices.items()}}


def test_every_command_has_a_section_and_every_section_a_command() -> None:
    documented, actual = _documented(), _actual()
    assert set(actual) - set(documented) == set(), "commands missing from docs/reference/cli.md"
    assert set(documented) - set(actual) == set(), "sections of docs/reference/cli.md for no command"


def test_every_flag_is_documented_and_every_documented_flag_exists() -> None:
    documented, actual = _documented(), _actual()
    for command in sorted(actual):
        name = f"phasegate {command}".strip()
        # `-v` and `--debug` go anywhere on the line: the global options' rows document them for every command.
        everywhere = (documented.get("", set()) & actual[""]) if command else set()
        missing = actual[command] - documented.get(command, set()) - everywhere
        extra = documented.get(command, set()) - actual[command]
        assert not missing, f"{name}: flags missing from docs/reference/cli.md: {sorted(missing)}"
        assert not extra, f"{name}: docs/reference/cli.md lists flags it does not have: {sorted(extra)}"


def test_the_page_is_read() -> None:
    """A change of the page's headings would leave nothing to compare."""
    documented = _documented()
    assert len(documented) >= 15 and "--run-id" in documented["run"] and "--verbose" in documented[""]


def test_the_exit_codes_table_is_exit_code() -> None:
    """The page's exit codes, and the README's, are `ExitCode`'s numbers, each once."""
    from phasegate import ExitCode

    for page in (PAGE, PAGE.parents[2] / "README.md"):
        section = page.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
        listed = [int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)]
        assert listed == sorted(int(c) for c in ExitCode), page
