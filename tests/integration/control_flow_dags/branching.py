"""Branches and short circuits, run by the fleet in tests/integration/test_control_flow.py."""

from tradewind import DAG, TriggerRule, task


@task
def step() -> str:
    return "ran"


@task.branch
def pick() -> str:
    return "left"


with DAG("branching"):
    left, right = step.override(task_id="left")(), step.override(task_id="right")()
    after_right = step.override(task_id="after_right")()
    join = step.override(task_id="join", trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)()
    pick() >> [left, right]
    right >> after_right
    [left, after_right] >> join >> step.override(task_id="final")()


@task.branch
def pick_unknown() -> str:
    return "nowhere"


with DAG("bad_branch"):
    pick_unknown() >> step.override(task_id="x")()


def gated(dag_id: str, ignore: bool) -> None:
    @task.short_circuit(ignore_downstream_trigger_rules=ignore)
    def gate() -> int:
        return 0

    with DAG(dag_id):
        after = step.override(task_id="b", trigger_rule="all_done")()
        gate() >> step.override(task_id="a")() >> after


gated("short_circuit_all", ignore=True)
gated("short_circuit_direct", ignore=False)
