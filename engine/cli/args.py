"""What the commands make of their arguments: the engine on the store `--db`
names, and JSON given on the command line (checked to be storable)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _json
from .._dbpath import default_db
from ..errors import UsageError
from ..safetext import storable

if TYPE_CHECKING:
    from ..engine import Engine


def open_engine(args: argparse.Namespace, *, create: bool = False) -> Engine:
    """The engine on the store the command's `--db` names (else the default one)."""
    # Imported here, not at the top: the engine loads SQLAlchemy, which most
    # of a command's start would otherwise be (quickstatus.py does without).
    from ..engine import Engine

    return Engine(args.db or default_db(), create=create)


def parse_json(text: str, what: str) -> Any:
    """JSON given on the command line, checked to be storable as it is."""
    try:
        value = _json.loads(text)
        stored = _json.dumps(value)
    except RecursionError:
        raise UsageError(f"{what} nested too deeply") from None
    except ValueError as exc:
        raise UsageError(f"{what} are not JSON: {exc}" if what == "inputs" else f"{what} is not JSON: {exc}") from None
    if not storable(stored):
        raise UsageError(f"{what}: a lone surrogate (\\ud800-\\udfff) is not text that can be stored")
    return value


def read_inputs(args: argparse.Namespace) -> Any:
    """A run's inputs from `--input` or `--input-file`; None when neither is given."""
    if args.input is not None and args.input_file is not None:
        raise UsageError("give --input or --input-file, not both")
    if args.input_file is not None:
        try:
            text = Path(args.input_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {args.input_file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UsageError(f"{args.input_file} is not UTF-8 text") from None
    elif args.input is not None:
        text = args.input
    else:
        # None, not {}: an existing run then continues with its stored inputs
        # instead of being refused for "other inputs".
        return None
    return parse_json(text, "inputs")
