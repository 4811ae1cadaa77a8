"""phasegate.ops: the plumbing a tool built on the engine needs, and a
workflow author does not.

`phasegate` itself is for the people who write workflows and the scripts that
run and oversee them: `Workflow`, `PhaseContext`, `Engine`, the outcomes,
views, decisions and errors those return or raise. A tool that puts the engine
in front of people (the console, a web front end, a dashboard) also has to
pick the store when none is named, notice commits by other processes, show
stored text on a terminal without letting it drive the terminal, and say who
is at the keyboard. Those answers live here, one rule each, so that every
tool asks the same function the engine's own command line asks:

- `default_db`: the store opened when none is named (`$PHASEGATE_DB`, else
  `./phasegate.db`). An author passes a path, or lets `Engine()` ask this.
- `store_files`, `watch_store`: the change feed (which files may mean a
  commit; a loop that calls back after each commit by another connection).
- `safe`, `safe_json`, `printable`: stored text made safe to display (control
  characters, escape sequences and bidi overrides as visible escapes), in a
  line, in JSON, and for a line of stored code; `SafeFormatter`, the log
  formatter that keeps one event to one line.
- `whoami`, `Who`, `WEB_USER_ENV`: who is acting, as the audit will record it,
  and the variable `phasegate serve` sets for an authenticated web session.
  `Engine` resolves the operator itself from the `operator=` text it is given.
- `new_private_file`: a file a tool writes beside the store (a log), made
  as the archives are: in a folder of this account's own, new, never through
  a link.
- `WAIT_SECONDS`: the range of a wait for a person (a proposal, a claim, an
  idle session: 1 s to a year), with `.argtype()` for a flag, so a tool's
  own flags refuse what the engine's refuse, in the same words.
- `JsonFormatter`: `--log-format json`'s formatter (one JSON object a
  line, stored text escaped), for a tool's own log; `trace_runs`: every run
  this process executes traced with OpenTelemetry (the `otel` extra);
  `verify_webhook`: a webhook receiver's check of `watch
  --webhook-secret-file`'s signature and timestamp (Standard Webhooks); `is_loopback`: the one
  rule of "only this machine" that `--metrics`, `phasegate metrics` and
  `phasegate serve` bind and trust by.
- `correctable_effects`: which confirmed effects of a run may be corrected
  now, for a tool that offers that choice; `Engine.preview` and
  `Engine.decide` apply the same rule and refuse what does not fit.

What stays in `phasegate` is what an author or a script meets through
`Engine`'s signatures (`NO_RESULT` is the default of `Engine.decide`'s
`result=`; `Frontier`, `CodeDiff` and `PruneCandidate` are parts of what it
returns). Names load on first use (PEP 562), as in `phasegate`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._dbpath import default_db
    from .alerts.signing import verify_webhook
    from .authoring.sources import printable
    from .bounds import WAIT_SECONDS
    from .decide.fit import correctable_effects
    from .observe.logs import JsonFormatter
    from .observe.serving import is_loopback
    from .observe.tracing import trace_runs
    from .oversight.identity import WEB_USER_ENV, Who, whoami
    from .safefiles import new_private_file
    from .safetext import SafeFormatter, safe, safe_json
    from .views.feed import store_files, watch_store

#: Name -> the private module that defines it.
_WHERE: dict[str, str] = {
    "default_db": "._dbpath",
    "WAIT_SECONDS": ".bounds",
    "printable": ".authoring.sources",
    "correctable_effects": ".decide.fit",
    "WEB_USER_ENV": ".oversight.identity",
    "Who": ".oversight.identity",
    "whoami": ".oversight.identity",
    "new_private_file": ".safefiles",
    "safe": ".safetext",
    "SafeFormatter": ".safetext",
    "safe_json": ".safetext",
    "store_files": ".views.feed",
    "watch_store": ".views.feed",
    "JsonFormatter": ".observe.logs",
    "trace_runs": ".observe.tracing",
    "verify_webhook": ".alerts.signing",
    "is_loopback": ".observe.serving",
}

__all__ = [
    "JsonFormatter",
    "SafeFormatter",
    "WAIT_SECONDS",
    "WEB_USER_ENV",
    "Who",
    "correctable_effects",
    "default_db",
    "is_loopback",
    "new_private_file",
    "printable",
    "safe",
    "safe_json",
    "store_files",
    "trace_runs",
    "verify_webhook",
    "watch_store",
    "whoami",
]
assert set(__all__) == set(_WHERE)  # one list for tools, one map for loading


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'phasegate.ops' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __package__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
