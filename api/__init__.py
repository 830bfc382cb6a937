"""The API server (DESIGN.md §10): Airflow 3's REST API v2, auth, and the pages' machinery.

``api`` reads and writes only through ``state/``; it imports the authoring API's settings and
``broker_config``, never ``worker/`` or ``scheduler/`` (tests/test_boundaries.py).
"""

from __future__ import annotations

from api.app import API_PREFIX, create_app
from api.context import Purgers

__all__ = ["API_PREFIX", "Purgers", "create_app"]
