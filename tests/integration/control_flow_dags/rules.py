"""A task under each Airflow 3 trigger rule after one success, one failure and one skip."""

from tradewind import DAG, AirflowSkipException, task

RULES = [
    "all_success",
    "all_failed",
    "all_done",
    "all_done_min_one_success",
    "all_done_setup_success",
    "all_skipped",
    "one_success",
    "one_failed",
    "one_done",
    "none_failed",
    "none_failed_min_one_success",
    "none_skipped",
    "always",
]


@task
def ok() -> None:
    pass


@task
def broken() -> None:
    raise ValueError("broken on purpose")


@task
def skipped() -> None:
    raise AirflowSkipException("skipped on purpose")


with DAG("rules"):
    # The skip comes after the failure: all_success decides on whichever it sees first.
    failure = broken()
    upstream = [ok(), failure, failure >> skipped.override(trigger_rule="all_done")()]
    for rule in RULES:
        upstream >> ok.override(task_id=rule, trigger_rule=rule)()
