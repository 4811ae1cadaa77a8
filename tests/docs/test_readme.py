"""README.md's tables agree with what they describe: its extras with
pyproject's `[project.optional-dependencies]` (and the extras `--help` names),
its exit codes with the table `phasegate --help` ends with."""

from __future__ import annotations

import argparse
import re
import tomllib

from phasegate.cli.parser import build_parser
from tests.support.cli import ROOT

README = (ROOT / "README.md").read_text()
EXTRAS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _rows(title: str) -> dict[str, str]:
    """The first column (backticks dropped) -> the second, of the section's table."""
    rows = re.findall(r"^\| `?([^`|]+?)`? \| (.*) \|$", _section(title), re.M)
    return {k: v for k, v in rows if k not in ("Extra", "Code", "---")}


def _distribution(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()


def _all_help() -> str:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return "\n".join([parser.format_help(), *(p.format_help() for p in sub.choices.values())])


def test_the_extras_table_is_pyprojects_extras() -> None:
    assert set(_rows("Extras")) == set(EXTRAS), "README.md's extras table and pyproject's extras differ"


def test_each_extra_names_what_it_installs() -> None:
    rows = _rows("Extras")
    for extra, requirements in EXTRAS.items():
        if extra == "test":
            continue  # its own row says what it is: the others' union, and tools
        missing = [r for r in requirements if _distribution(r) not in rows[extra].lower()]
        assert not missing, f"README.md's `{extra}` row does not name {missing}"


def test_the_test_extra_has_every_extra_but_bench() -> None:
    assert "every extra above but `bench`" in _rows("Extras")["test"]
    test = {_distribution(r) for r in EXTRAS["test"]}
    for extra, requirements in EXTRAS.items():
        if extra not in ("test", "bench"):
            assert {_distribution(r) for r in requirements} <= test, f"the test extra lacks the {extra} extra's"


def test_the_extras_help_names_exist() -> None:
    named = set(re.findall(r"the (\w+)\s+extra", _all_help()))
    assert {"web", "metrics"} <= named  # the scan works
    assert named <= set(EXTRAS), f"--help names extras pyproject lacks: {named - set(EXTRAS)}"


def _help_exit_codes() -> dict[str, str]:
    """`phasegate --help`'s exit codes, each meaning unwrapped onto one line."""
    text = build_parser().format_help().split("exit codes:\n", 1)[1]
    out: dict[str, str] = {}
    code = ""
    for line in text.splitlines():
        if m := re.match(r"^  (\d+)\s+(.*)$", line):
            code = m.group(1)
            out[code] = m.group(2).strip()
        elif line.startswith("       ") and code:
            out[code] += " " + line.strip()
        else:
            break
    return out


def test_the_exit_codes_table_is_the_helps() -> None:
    shown = _help_exit_codes()
    assert len(shown) >= 8 and "0" in shown  # the epilog is read
    readme = {k: v.replace("\\|", "|") for k, v in _rows("Exit codes").items()}
    assert readme == shown, "README.md's exit codes differ from `phasegate --help`'s"
