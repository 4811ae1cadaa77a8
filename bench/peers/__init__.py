"""The engines a user would otherwise pick, each on a file-backed SQLite
database with the durability it ships with. A peer that is not installed is
reported as skipped, never faked."""
