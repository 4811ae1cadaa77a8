"""The run as an operator sees it, built from the store alone (no workflow
code): the typed views and their build (`build`), `phasegate status`
without SQLAlchemy (`quickstatus`), worker heartbeats (`workers`) and the
change feed that says the store moved (`feed`).

Layer: above `run`; below `oversight` and `decide`. It reads, never writes
a run.
"""
