"""Retry policies decide on a failure's exception; exponential backoff stretches the delay."""

from __future__ import annotations

import datetime as dt

import pytest

from state.core.enums import TaskInstanceState as TI
from state.core.structure import TaskSpec, parse_structure
from state.core.transitions import Fence
from state.engine.outcomes import Failed
from state.engine.retries import retry_delay_seconds
from state.engine.try_life import HeldTry, judge
from state.records.values import TIKey
from tradewind import DAG, DagDefinitionError, ExceptionRetryPolicy, RetryAction, RetryRule, task


class ApiError(Exception):
    pass


class RateLimited(ApiError):
    pass


def test_the_first_matching_rule_decides() -> None:
    policy = ExceptionRetryPolicy(
        rules=[
            RetryRule(exception=RateLimited, retry_delay=dt.timedelta(seconds=30), reason="slow"),
            RetryRule(exception=ApiError, action=RetryAction.FAIL),
        ]
    )

    slow = policy.evaluate(RateLimited())
    assert slow is not None
    assert (slow.retryable, slow.retry_delay_seconds, slow.reason) == (True, 30.0, "slow")
    failed = policy.evaluate(ApiError())
    assert failed is not None and not failed.retryable
    assert policy.evaluate(KeyError()) is None  # no rule: the task's retries decide


def test_a_rule_matches_a_dotted_name_of_the_class_or_a_base() -> None:
    name = f"{ApiError.__module__}.{ApiError.__qualname__}"
    rule = RetryRule(exception=name, action=RetryAction.FAIL)

    assert rule.matches(RateLimited())
    assert not rule.matches(ValueError())
    assert RetryRule(exception="requests.exceptions.HTTPError").matches(ValueError()) is False


def test_a_default_rule_leaves_the_decision_to_the_task() -> None:
    policy = ExceptionRetryPolicy(rules=[RetryRule(exception=ValueError, action="default")])

    assert policy.evaluate(ValueError()) is None


def test_bad_policies_are_refused_at_import() -> None:
    with pytest.raises(DagDefinitionError, match="exception class or its dotted name"):
        RetryRule(exception=3)  # type: ignore[arg-type]
    with pytest.raises(DagDefinitionError, match="retry_policy must be an ExceptionRetryPolicy"):
        task(retry_policy="retry")


def test_exponential_backoff_multiplies_the_delay_up_to_its_cap() -> None:
    @task(retry_delay=10, retry_exponential_backoff=True)
    def backing_off() -> None:
        pass

    @task(retry_delay=10, retry_exponential_backoff=True, max_retry_delay=25)
    def capped() -> None:
        pass

    with DAG("backoff") as built:
        backing_off()
        capped()
        backing_off.override(retry_exponential_backoff=False, task_id="plain")()
    specs = parse_structure(built.structure()).tasks

    assert [retry_delay_seconds(specs["backing_off"], n) for n in (1, 2, 3)] == [10, 20, 40]
    assert retry_delay_seconds(specs["capped"], 3) == 25
    assert retry_delay_seconds(specs["plain"], 5) == 10
    assert retry_delay_seconds(specs["backing_off"], 10_000) == 24 * 3600  # Airflow's day cap


def held_with(spec: TaskSpec, try_number: int) -> HeldTry:
    fence = Fence(1, try_number, "token")
    return HeldTry(fence, TIKey("d", "r", "t", -1), 1, 5, 0, "dag.py", spec, {})


def test_the_end_of_a_try_waits_the_backoff_or_the_policys_delay() -> None:
    spec = TaskSpec(retries=4, retry_delay_seconds=10, retry_exponential_backoff=2.0)
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    third = judge(held_with(spec, 3), Failed("boom"), now)
    assert third.state == TI.UP_FOR_RETRY
    assert third.values["next_retry_at"] == now + dt.timedelta(seconds=40)
    ruled = judge(held_with(spec, 3), Failed("boom", retry_delay_seconds=1.5), now)
    assert ruled.values["next_retry_at"] == now + dt.timedelta(seconds=1.5)
