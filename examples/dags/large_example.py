"""A large DAG: 400 tasks in 20 task groups, to see the grid and the graph at size.

Each group ``region_NN`` has an ``extract`` feeding 18 ``transform_MM`` tasks feeding a ``load``;
the groups run in four waves of five (each wave after the previous one's loads). The grid folds
each group into one row (open it to see its tasks); the graph draws the groups as boxes.

Run it with ``tradewind standalone --run large_example -c 4`` (a few minutes on a laptop).
"""

from __future__ import annotations

from airflow.sdk import TaskGroup, dag, task

REGIONS = 20
TRANSFORMS = 18
WAVE = 5


@task
def extract() -> int:
    return 1


@task
def transform(rows: int) -> int:
    return rows


@task
def load(*rows: int) -> None:
    return None


@dag(dag_id="large_example", tags=["example"], max_active_tasks=64)
def large_example():
    previous_wave: list = []
    wave: list = []
    for region in range(REGIONS):
        with TaskGroup(f"region_{region:02d}"):
            rows = extract()
            parts = [
                transform.override(task_id=f"transform_{n:02d}")(rows) for n in range(TRANSFORMS)
            ]
            last = load(*parts)
        for earlier in previous_wave:
            earlier >> rows
        wave.append(last)
        if len(wave) == WAVE:
            previous_wave, wave = wave, []


large_example()
