"""Sample workflows for phasegate, and the `phasegate demo` command.

Each workflow lives in its own module and reads everything it works on (its
ledger, config files, source and target folders) from a working directory
named in the run's inputs, so runs never share state by accident:

- `phasegate.sample_runs.billing:wf`   invoice billing against a simulated payment gateway
- `phasegate.sample_runs.pipeline:wf`  a data pipeline: download, transform, publish
- `phasegate.sample_runs.research:wf`  an agent's research task with declared floors
- `phasegate.sample_runs.approvals:wf` an operations agent that asks a person
  before a risky tool call and waits out a rate limit (`ctx.ask`, `RetryLater`)
- `phasegate.sample_runs.refunds_agent:wf` a pydantic-ai support agent run
  durably by one capability, waiting for a tool's approval (the pydantic-ai extra)

Each module also has `prepare(workdir, ...)`, which lays out a working
directory and returns the inputs for a run on it.
"""

from __future__ import annotations

#: The version of the sample workflows' code, reported by each workflow's
#: `code_version` probe: a deploy of new sample code shows up as a changed
#: environment on runs checkpointed before it.
__version__ = "1.4.0"

WORKFLOWS: dict[str, str] = {
    "billing": "phasegate.sample_runs.billing:wf",
    "pipeline": "phasegate.sample_runs.pipeline:wf",
    "research": "phasegate.sample_runs.research:wf",
    "approvals": "phasegate.sample_runs.approvals:wf",
    "refunds-agent": "phasegate.sample_runs.refunds_agent:wf",
}
"""Workflow name -> the target string `phasegate run` and the worker load."""
