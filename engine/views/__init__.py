"""The run as an operator sees it, built from the store alone (no workflow
code): the typed views (`models`), the effective-status rule they and their
callers ask (`status`), building a run's view from its rows (`build`),
`phasegate status` without SQLAlchemy (`quickstatus`), worker heartbeats
(`workers`) and the change feed that says the store moved (`feed`).

Nothing is imported here: importing one of these modules (`quickstatus`,
on `phasegate status`'s fast path) must not load the others.

Layer: above `run`; below `oversight` and `decide`. It reads, never writes
a run.
"""
