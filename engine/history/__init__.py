"""The verified history of a run, as pure rules over stored bytes: the
checkpoint hash chain (`chain`), the seals over effect records (`seals`),
the archive an output may leave for (`archive`) and the proof that a piece
of state may be pruned (`prune`).

Layer: just above the base modules (errors, states, `_json`, ...). It knows no
store and no runner: the store verifies rows with it as they are migrated,
and a resume trusts only what it verifies.
"""
