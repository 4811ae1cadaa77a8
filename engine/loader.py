"""Finding a workflow from a TARGET string: `path/to/file.py:NAME` or
`package.module:NAME`."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from .errors import UsageError
from .workflow import Workflow


def normalise(target: str) -> str:
    """The form stored with a run: file targets become absolute, so a resume
    from another folder finds the same file."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"target {target!r} must look like path/to/file.py:NAME or package.module:NAME")
    if path.endswith(".py") or "/" in path:
        return f"{Path(path).expanduser().resolve()}:{name}"
    return target


#: Module prefixes of targets stored by phasegate 0.1, when the samples were a
#: top-level `sample_runs` package: such runs still resume.
_RENAMED = {"sample_runs": "phasegate.sample_runs"}


def _current_module(path: str) -> str:
    head, dot, rest = path.partition(".")
    new = _RENAMED.get(head)
    return f"{new}{dot}{rest}" if new else path


def load(target: str) -> Workflow:
    path, _, name = normalise(target).rpartition(":")
    if path.endswith(".py") or "/" in path:
        file = Path(path)
        if not file.is_file():
            raise UsageError(f"target file {file} does not exist")
        mod_name = "phasegate_target_" + hashlib.sha256(str(file).encode()).hexdigest()[:12]
        module = sys.modules.get(mod_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(mod_name, file)
            if spec is None or spec.loader is None:
                raise UsageError(f"cannot load {file} as Python")
            module = importlib.util.module_from_spec(spec)
            folder = str(file.parent)
            if folder not in sys.path:
                sys.path.insert(0, folder)
            sys.modules[mod_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:  # noqa: BLE001 - the user's module failed to import
                del sys.modules[mod_name]
                raise UsageError(f"importing {file} failed: {type(exc).__name__}: {exc}") from None
    else:
        path = _current_module(path)
        try:
            module = importlib.import_module(path)
        except ImportError as exc:
            raise UsageError(f"cannot import module {path!r}: {exc}") from None
        except Exception as exc:  # noqa: BLE001
            raise UsageError(f"importing {path!r} failed: {type(exc).__name__}: {exc}") from None
    obj = getattr(module, name, None)
    if obj is None:
        raise UsageError(f"{path} has no {name!r}")
    if not isinstance(obj, Workflow):
        raise UsageError(f"{path}:{name} is a {type(obj).__name__}, not a phasegate Workflow")
    return obj
