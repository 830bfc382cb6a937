"""Setups and teardowns whose work or teardown fails, run by the fleet."""

from tradewind import DAG, setup, task, teardown


@setup
def make() -> str:
    return "cluster-1"


@task
def work(fail: bool) -> None:
    if fail:
        raise ValueError("work failed on purpose")


def torn_down(dag_id: str, work_fails: bool, teardown_fails: bool, strict: bool = False) -> None:
    @teardown(on_failure_fail_dagrun=strict)
    def remove(cluster: str) -> str:
        if teardown_fails:
            raise ValueError("teardown failed on purpose")
        return f"removed {cluster}"

    with DAG(dag_id), remove(make()):
        work(work_fails)


torn_down("teardown_fails", work_fails=False, teardown_fails=True)
torn_down("work_fails", work_fails=True, teardown_fails=False)
torn_down("strict_teardown_fails", work_fails=False, teardown_fails=True, strict=True)
