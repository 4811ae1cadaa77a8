"""Unit tests: pure parts, in this process; no subprocess, no Pilot, no database server."""
