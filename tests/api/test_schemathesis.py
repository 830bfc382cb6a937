"""Schemathesis over ``/openapi.json``: whatever a request holds, the server never answers 5xx.

Requests come as the admin, so they reach every route's body rather than stop at the 401. Each
operation gets its own Hypothesis run over the cases schemathesis draws from its schema.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from api import create_app
from api.security import TokenHolder
from state.core.db import session_scope
from state.records.users import get_user
from tests.state.harness import Home

EXAMPLES_PER_OPERATION = 15


@pytest.mark.timeout(600)
def test_no_request_is_a_server_error(home: Home) -> None:
    home.trigger("etl", run_id="r1")
    app = create_app(home.settings)
    with session_scope(home.url) as session:
        admin = get_user(session, "admin")
        assert admin is not None
        holder = TokenHolder(admin.id, admin.username, admin.token_version)
    headers = {"Authorization": f"Bearer {app.state.tradewind.tokens.issue(holder)}"}
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def never_a_server_error(case: schemathesis.Case) -> None:
            response = case.call(headers=headers)
            where = f"{case.method} {case.formatted_path}"
            assert response.status_code < 500, f"{where}: {response.status_code} {response.text}"

        never_a_server_error()
