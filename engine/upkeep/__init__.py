"""Keeping a store sound over time: every run's stored history verified,
its failures recorded on the runs (`verify`, whose findings are the typed
reports of `reports`), and what is safe to remove pruned, one run per write
transaction (`pruning`).

Layer: above `decide`; below `engine`, whose `Engine` composes a `Verifier`
and a `Pruner`.
"""
