"""phasegate's benchmarks: every figure a ratio against a baseline measured in
the same run, because absolute times drift on a shared machine.

Run as `python -m bench [--quick] [--json FILE]`; see bench/RESULTS.md.
"""
