"""A DAG file that fails to import, so the API has an import error to list."""

raise RuntimeError("this DAG file is broken on purpose")
