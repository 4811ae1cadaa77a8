"""Adapters that run agent frameworks' agents durably on phasegate, each behind its own extra."""
