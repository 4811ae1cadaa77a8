"""Finding a workflow from a TARGET string: `path/to/file.py:NAME` or
`package.module:NAME`."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

from ..errors import UsageError
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


def _module_name(file: Path) -> str:
    return "phasegate_target_" + hashlib.sha256(str(file).encode()).hexdigest()[:12]


def _exec_file(file: Path, *, keep: bool) -> ModuleType:
    """Execute a workflow file as a module. With `keep`, it stays in
    sys.modules and its folder on sys.path (one target per process: the
    command line); without, both are undone (see `load`)."""
    mod_name = _module_name(file)
    folder = str(file.parent)
    spec = importlib.util.spec_from_file_location(mod_name, file)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load {file} as Python")
    before = set(sys.modules)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import
        keep = False
        raise UsageError(f"importing {file} failed: {type(exc).__name__}: {exc}") from None
    finally:
        if not keep:
            _forget(file.parent, mod_name, before)
            if added and folder in sys.path:
                sys.path.remove(folder)
    return module


def _forget(folder: Path, mod_name: str, before: set[str]) -> None:
    """Take the target's module, and the modules it brought in from its own
    folder, out of sys.modules (its functions keep the ones they hold)."""
    sys.modules.pop(mod_name, None)
    root = folder.resolve()
    for name in set(sys.modules) - before:
        where = getattr(sys.modules.get(name), "__file__", None)
        if where and Path(where).resolve().is_relative_to(root):
            del sys.modules[name]


def _current_module(path: str) -> str:
    head, dot, rest = path.partition(".")
    new = _RENAMED.get(head)
    return f"{new}{dot}{rest}" if new else path


#: Loading a target in isolation changes sys.path and sys.modules for a
#: moment: one load at a time (a worker with --jobs N loads from N threads).
_isolated = threading.Lock()


def load(target: str, *, isolated: bool = False) -> Workflow:
    """The workflow a target names. A file target's folder is put on
    sys.path so the file can import the modules beside it (`helpers.py`).

    `isolated` (the worker, which loads many targets in one process): the
    file and the modules it imports from its own folder are executed afresh
    and taken out of sys.modules again, and the folder off sys.path, so the
    next target's `helpers` is its own and a fixed file is read as it is now.
    Such a workflow imports its helpers at its top, not inside a phase."""
    path, _, name = normalise(target).rpartition(":")
    if path.endswith(".py") or "/" in path:
        file = Path(path)
        if not file.is_file():
            raise UsageError(f"target file {file} does not exist")
        if isolated:
            with _isolated:
                module = _exec_file(file, keep=False)
        else:
            module = sys.modules.get(_module_name(file)) or _exec_file(file, keep=True)
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
