import datetime as dt

from tradewind import DAG, task

with DAG(
    "email_alerts",
    start_date=dt.datetime(2024, 1, 1),
    default_args={"email": "ops@team.org", "email_on_failure": True, "email_on_retry": False},
):

    @task
    def fails():
        raise RuntimeError("the warehouse is closed")

    fails()
