"""`python -m phasegate.console [--db PATH] [--read-only] [--no-mouse]`."""

from __future__ import annotations

import argparse
import sys

from phasegate import PhasegateError

from .command import add_arguments, cmd_console


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m phasegate.console", description="phasegate's operations console")
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return cmd_console(args)
    except PhasegateError as exc:
        print(f"phasegate: {exc.title}: {exc.message}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
