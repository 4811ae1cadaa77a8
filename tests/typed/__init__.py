"""Files mypy checks (pyproject's [tool.mypy] `files`) and pytest does not
run: what the engine's public API says to an author's type checker."""
