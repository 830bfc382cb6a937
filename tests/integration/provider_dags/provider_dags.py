"""DAGs written for Airflow with provider packages, unchanged: SQL, HTTP, S3, Slack, email, and
deferrable sensors whose providers' triggers run on the triggerer."""

import json

import pendulum
from airflow.providers.amazon.aws.hooks.s3 import S3Hook
from airflow.providers.amazon.aws.operators.s3 import (
    S3CreateBucketOperator,
    S3CreateObjectOperator,
    S3ListOperator,
)
from airflow.providers.amazon.aws.sensors.s3 import S3KeySensor
from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
from airflow.providers.http.operators.http import HttpOperator
from airflow.providers.http.sensors.http import HttpSensor
from airflow.providers.postgres.hooks.postgres import PostgresHook
from airflow.providers.slack.operators.slack_webhook import SlackWebhookOperator
from airflow.providers.smtp.operators.smtp import EmailOperator
from airflow.providers.sqlite.hooks.sqlite import SqliteHook
from airflow.sdk import DAG, Connection, task

START = pendulum.datetime(2024, 1, 1, tz="UTC")

with DAG("provider_sql", start_date=START, schedule=None):
    create = SQLExecuteQueryOperator(
        task_id="create",
        conn_id="pg",
        sql=[
            "CREATE TABLE IF NOT EXISTS fruit (name text, n int)",
            "INSERT INTO fruit VALUES ('apple', 3), ('pear', 5)",
        ],
    )
    select = SQLExecuteQueryOperator(
        task_id="select", conn_id="pg", sql="SELECT name, n FROM fruit ORDER BY name"
    )

    @task
    def total():
        return PostgresHook(postgres_conn_id="pg").get_first("SELECT sum(n) FROM fruit")[0]

    @task
    def hook_by_type():
        return type(Connection.get("pg").get_hook()).__name__

    lite = SQLExecuteQueryOperator(
        task_id="lite",
        conn_id="lite",
        sql="SELECT 40 + 2",
    )

    @task
    def lite_hook():
        hook = SqliteHook(sqlite_conn_id="lite")
        hook.run("CREATE TABLE IF NOT EXISTS t (x int)")
        hook.insert_rows("t", [(1,), (2,)])
        return hook.get_first("SELECT count(*) FROM t")[0]

    create >> select >> [total(), hook_by_type()]
    lite >> lite_hook()

with DAG("provider_http", start_date=START, schedule=None):
    ready = HttpSensor(task_id="ready", http_conn_id="web", endpoint="ready", poke_interval=1)
    get = HttpOperator(
        task_id="get",
        http_conn_id="web",
        endpoint="fruit",
        method="GET",
        response_filter=lambda response: response.json()["fruit"],
    )
    post = HttpOperator(
        task_id="post",
        http_conn_id="web",
        endpoint="echo",
        method="POST",
        data=json.dumps({"fruit": "{{ ti.xcom_pull(task_ids='get') }}"}),
        headers={"Content-Type": "application/json"},
    )
    ready >> get >> post

with DAG("provider_s3", start_date=START, schedule=None):
    bucket = S3CreateBucketOperator(task_id="bucket", bucket_name="fruit", aws_conn_id="s3")
    put = S3CreateObjectOperator(
        task_id="put",
        s3_bucket="fruit",
        s3_key="basket/apple.txt",
        data="three apples",
        aws_conn_id="s3",
    )
    sense = S3KeySensor(
        task_id="sense",
        bucket_name="fruit",
        bucket_key="basket/*.txt",
        wildcard_match=True,
        aws_conn_id="s3",
        poke_interval=1,
    )
    listing = S3ListOperator(task_id="listing", bucket="fruit", prefix="basket/", aws_conn_id="s3")

    @task
    def read():
        return S3Hook(aws_conn_id="s3").read_key("basket/apple.txt", bucket_name="fruit")

    bucket >> put >> sense >> [listing, read()]

with DAG("provider_notify", start_date=START, schedule=None):
    SlackWebhookOperator(
        task_id="slack",
        slack_webhook_conn_id="slack",
        message="run {{ run_id }} is done",
    )
    EmailOperator(
        task_id="email",
        conn_id="mail",
        to="ops@example.com",
        subject="fruit {{ ds }}",
        html_content="<p>three apples</p>",
        from_email="tradewind@example.com",
    )

# Each pokes once in its try, finds nothing yet, and defers: the provider's trigger
# (HttpSensorTrigger, S3KeyTrigger) polls from the triggerer until the test makes the thing appear.
with DAG("provider_deferred", start_date=START, schedule=None):
    HttpSensor(
        task_id="http_later",
        http_conn_id="web",
        endpoint="later",
        poke_interval=1,
        deferrable=True,
    )
    late_bucket = S3CreateBucketOperator(
        task_id="late_bucket", bucket_name="late", aws_conn_id="s3"
    )
    late_bucket >> S3KeySensor(
        task_id="s3_later",
        bucket_name="late",
        bucket_key="basket/late.txt",
        aws_conn_id="s3",
        poke_interval=1,
        deferrable=True,
    )
