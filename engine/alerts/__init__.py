"""Telling someone a run needs them: `phasegate watch` (`watch`) and the hooks
it calls, commands or webhooks (`hooks`).

Layer: above `engine`, which `watch` drives; below `cli`.
"""
