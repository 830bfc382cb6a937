"""A DAG driven through the REST API: its param comes from the trigger's conf."""

from __future__ import annotations

from tradewind import dag, task


@task
def greet(params=None) -> str:
    print(f"greeting {params['name']}")
    return f"hello {params['name']}"


@task
def shout(text: str) -> str:
    return text.upper()


@dag(dag_id="greeting", tags=["api"])
def greeting(name="world"):
    shout(greet())


greeting()
