"""phasegate's tests: unit tests of pure parts, and functional tests that run the
real command line, kill real processes and drive the real console."""
