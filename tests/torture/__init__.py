"""The reliability harness: crash torture and corruption fuzzing.

Run it from the repository root: `python -m tests.torture --kills 2000
--corruptions 500 --seed 7`. The test suite runs the same code at CI size.
"""
