"""The documentation site (docs/, mkdocs.yml) kept true by the suite."""
