"""Schemathesis over ``/openapi.json`` with every check it has: no 5xx, and each answer is one
the document declares (status, content type, headers, body schema), schema-valid requests are
accepted, schema-violating ones refused, and a request without its token is refused.

Requests come as the admin, so they reach every route's body rather than stop at the 401. Each
operation gets its own Hypothesis run over positive cases (drawn from its schema) on each store,
and negative ones (breaking it) on SQLite: they are refused before any statement runs. One
allowance, configured below: a schema-valid request may be refused with a 400 when the store
refuses it (a conf off the DAG's params, an unknown ``order_by`` key, a DAG or asset that the
body names and that does not exist): Airflow's API answers these so too.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import negative_data_rejection

from api import create_app
from api.security import TokenHolder
from state.core.db import session_scope
from state.records.users import get_user
from tests.state.harness import Home

EXAMPLES_PER_OPERATION = 15
CONFIG = {
    "checks": {
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "3xx", "400", "401", "403", "404", "409", "429"]
        }
    }
}


def _all_checks() -> list[schemathesis.CheckFunction]:
    load_all_checks()
    checks = CHECKS.get_all()
    assert len(checks) >= 14  # every built-in check, not a chosen few
    return checks


def _checks_for(operation: APIOperation, checks: list[schemathesis.CheckFunction]) -> list[Any]:
    """Every check, but on a GET the one that wants a type-breaking query value refused.

    A query string has no types: a "negative" number or object drawn for a ``str`` parameter
    (``dag_ids=9611``, ``order_by=``) reaches the server as valid text, and a list answers
    200 with nothing matched, as Airflow's do. Bodies and paths keep the check.
    """
    if operation.method.upper() == "GET":
        return [check for check in checks if check is not negative_data_rejection]
    return checks


@pytest.mark.timeout(1200)
def test_every_check_passes_on_every_operation(home: Home) -> None:
    home.trigger("etl", run_id="r1")
    app = create_app(home.settings)
    with session_scope(home.url) as session:
        admin = get_user(session, "admin")
        assert admin is not None
        holder = TokenHolder(admin.id, admin.username, admin.token_version)
    headers = {"Authorization": f"Bearer {app.state.tradewind.tokens.issue(holder)}"}
    config = SchemathesisConfig.from_dict(CONFIG)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=config)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    every_check = _all_checks()
    modes = [GenerationMode.POSITIVE]
    if not home.url.startswith("postgresql"):
        modes.append(GenerationMode.NEGATIVE)

    for operation in operations:
        checks = _checks_for(operation, every_check)
        for mode in modes:
            _check_operation(operation, mode, headers, checks)


def _check_operation(
    operation: APIOperation, mode: GenerationMode, headers: dict[str, str], checks: list[Any]
) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def conforms(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=headers, checks=checks, allow_redirects=False)

    try:
        conforms()
    except Unsatisfiable:
        # Nothing to break: an operation without parameters or body has no negative case.
        assert mode is GenerationMode.NEGATIVE, operation.label
