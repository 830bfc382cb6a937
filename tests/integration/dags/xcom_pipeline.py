"""Four tasks passing XComs, one of them failing its first try."""

from __future__ import annotations

from tradewind import dag, get_current_context, task


@task
def numbers(count: int = 5) -> list[int]:
    return list(range(1, count + 1))


@task(retries=1, retry_delay=0.2)
def square(xs: list[int]) -> list[int]:
    if get_current_context()["ti"].try_number == 1:
        raise RuntimeError("first try fails on purpose")
    return [x * x for x in xs]


@task
def total(xs: list[int]) -> int:
    return sum(xs)


@task
def describe(value: int, xs: list[int]) -> str:
    return f"sum of {len(xs)} squares is {value}"


@dag(dag_id="xcom_pipeline")
def xcom_pipeline():
    squares = square(numbers())
    describe(total(squares), squares)


xcom_pipeline()
