"""The schema version this code writes, apart from the tables' declaration
(schema.py loads SQLAlchemy; `phasegate status` checks the version without it)."""

#: The schema version this code writes. A store with a higher one was written
#: by a newer phasegate and is not trusted.
SCHEMA_VERSION = 8
