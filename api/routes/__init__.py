"""One router per resource of the REST API (``/api/v2``), and the auth routes."""
