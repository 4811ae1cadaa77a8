"""What a workflow author writes and what phasegate learns from it: the
`Workflow` and its phases (`workflow`), retries (`retry`), runbooks
(`runbooks`), loading a workflow from `module:attr` or a file (`loader`),
the answer to an in-doubt effect (`reconcile`) and the phase sources kept
to explain a drift (`sources`).

Layer: above `history` and `store`; below `run`. It never runs a phase.
"""
