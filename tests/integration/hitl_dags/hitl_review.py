"""Every kind of human-in-the-loop task, as Airflow's standard provider writes them: a form, a
choice, several choices, a timeout that its default answers, an approval, a branch; notifiers
that log the link to the page where a person answers."""

import datetime

import pendulum
from airflow.providers.standard.operators.hitl import (
    ApprovalOperator,
    HITLBranchOperator,
    HITLEntryOperator,
    HITLOperator,
)
from airflow.sdk import DAG, Param, task
from airflow.sdk.bases.notifier import BaseNotifier


class LinkInLog(BaseNotifier):
    template_fields = ("message",)

    def __init__(self, message):
        self.message = message

    def notify(self, context):
        link = HITLOperator.generate_link_to_ui_from_context(
            context=context, base_url="http://tradewind.example"
        )
        self.log.info("%s -> %s", self.message, link)


asked = LinkInLog("[asked] {{ task.subject }} among {{ task.options }}")

with DAG(
    dag_id="hitl_review",
    start_date=pendulum.datetime(2021, 1, 1, tz="UTC"),
    schedule=None,
    catchup=False,
):
    wait_for_input = HITLEntryOperator(
        task_id="wait_for_input",
        subject="Which dataset?",
        params={"information": Param("", type="string")},
        notifiers=[asked],
    )
    wait_for_option = HITLOperator(
        task_id="wait_for_option",
        subject="Choose one",
        options=["option 1", "option 2", "option 3"],
        notifiers=[asked],
    )
    wait_for_multiple_options = HITLOperator(
        task_id="wait_for_multiple_options",
        subject="Choose some",
        options=["option 4", "option 5", "option 6"],
        multiple=True,
    )
    wait_for_default_option = HITLOperator(
        task_id="wait_for_default_option",
        subject="Nobody answers this one",
        options=["option 7", "option 8", "option 9"],
        defaults=["option 7"],
        response_timeout=datetime.timedelta(seconds=1),
    )
    valid_input_and_options = ApprovalOperator(
        task_id="valid_input_and_options",
        subject="Are these right?",
        body="Input: {{ ti.xcom_pull(task_ids='wait_for_input')['params_input']['information'] }}"
        " / Timeout option: "
        "{{ ti.xcom_pull(task_ids='wait_for_default_option')['chosen_options'] }}",
        defaults="Reject",
        response_timeout=datetime.timedelta(minutes=5),
        assigned_users=[{"id": "admin", "name": "admin"}],
    )
    choose_a_branch_to_run = HITLBranchOperator(
        task_id="choose_a_branch_to_run",
        subject="Which task runs?",
        options=["task_1", "task_2", "task_3"],
    )

    @task
    def task_1(): ...

    @task
    def task_2(): ...

    @task
    def task_3(): ...

    (
        [wait_for_input, wait_for_option, wait_for_default_option, wait_for_multiple_options]
        >> valid_input_and_options
        >> choose_a_branch_to_run
        >> [task_1(), task_2(), task_3()]
    )

with DAG("hitl_gate", schedule=None, start_date=pendulum.datetime(2021, 1, 1, tz="UTC")):
    gate = ApprovalOperator(task_id="gate", subject="Release?", fail_on_reject=True)

    @task
    def release():
        return "released"

    gate >> release()
