"""The store: tables, the hot path, and each backend's specifics."""
