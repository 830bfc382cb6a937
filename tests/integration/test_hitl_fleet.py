"""Human-in-the-loop tasks on a real fleet (PostgreSQL, Redis, scheduler, Celery worker, API
server), answered through Airflow's own client (``apache-airflow-client`` 3.3.2):

- a DAG written as the standard provider's ``example_hitl_operator`` (a form, one option,
  several, a timeout its default answers, an approval with an assigned user, a branch) ends as
  in Airflow once each question is answered with ``PATCH .../hitlDetails``: the branch's other
  tasks skipped, every answer its task's XCom;
- waiting holds no worker slot: six questions wait on a worker of one slot;
- a rejected approval with ``fail_on_reject=True`` fails, and its downstream ends
  ``upstream_failed``; a bad answer, a second answer and a user not assigned are refused with
  400, 409 and 403, and change nothing.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import airflow_client.client as airflow
import pytest
from airflow_client.client.exceptions import ApiException

from api.security import hash_password
from state.core import session_scope
from state.records.users import Role, create_user
from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
DAGS = Path(__file__).parent / "hitl_dags"
PASSWORD = "correct horse battery staple"


def _client(base: str, username: str) -> airflow.TaskInstanceApi:
    request = urllib.request.Request(
        f"{base}/auth/token",
        data=json.dumps({"username": username, "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        token = json.loads(reply.read())["access_token"]
    config = airflow.Configuration(host=base, access_token=token)
    return airflow.TaskInstanceApi(airflow.ApiClient(config))


@pytest.fixture
def served(make_fleet: Any) -> tuple[Fleet, str]:
    fleet: Fleet = make_fleet(DAGS)
    with session_scope(fleet.url) as session:
        hashed = hash_password(PASSWORD)
        create_user(session, "admin", hashed, Role.ADMIN)
        create_user(session, "ada", hashed, Role.USER)
        create_user(session, "viewer", hashed, Role.VIEWER)
    fleet.start_scheduler()
    fleet.start_worker(concurrency=1)  # one slot: the waiting tasks must not hold it
    return fleet, fleet.start_api()


def _waiting(fleet: Fleet, dag_id: str, run_id: str) -> set[str]:
    states = fleet.task_states(dag_id, run_id)
    return {task_id for task_id, (state, _try) in states.items() if state == "awaiting_input"}


def _answer(api: airflow.TaskInstanceApi, run_id: str, task_id: str, chosen: list[str], **given):
    body = airflow.UpdateHITLDetailPayload(chosen_options=chosen, params_input=given)
    return api.update_hitl_detail("hitl_review", run_id, task_id, -1, body)


def test_the_review_dag_ends_as_in_airflow_with_its_answers_given_through_the_api(
    served: tuple[Fleet, str],
) -> None:
    fleet, base = served
    ada, admin = _client(base, "ada"), _client(base, "admin")
    fleet.trigger("hitl_review", "r1")
    # Four questions at once on a one-slot worker: asking freed it each time; the timeout's
    # default answered the fourth.
    first = {"wait_for_input", "wait_for_option", "wait_for_multiple_options"}
    fleet.wait_for(lambda: _waiting(fleet, "hitl_review", "r1") == first, 90, "three questions")
    fleet.wait_for(
        lambda: fleet.task_states("hitl_review", "r1")["wait_for_default_option"][0] == "success",
        60,
        "the timeout's default",
    )
    listed = ada.get_hitl_details("hitl_review", "r1", response_received=False)
    assert {d.task_instance.task_id for d in listed.hitl_details} == first
    assert listed.total_entries == 3
    detail = ada.get_hitl_detail("hitl_review", "r1", "wait_for_input", -1)
    assert detail.subject == "Which dataset?" and detail.options == ["OK"]
    assert detail.params["information"]["schema"] == {"type": "string"}
    assert detail.task_instance.state == "awaiting_input"

    # Refused, and nothing changes: an option not offered, two where one is asked.
    for chosen in (["option 9"], ["option 1", "option 2"]):
        with pytest.raises(ApiException) as bad:
            _answer(ada, "r1", "wait_for_option", chosen)
        assert bad.value.status == 400
    assert "wait_for_option" in _waiting(fleet, "hitl_review", "r1")

    answered = _answer(ada, "r1", "wait_for_input", ["OK"], information="customers")
    assert answered.responded_by.name == "ada" and answered.params_input == {
        "information": "customers"
    }
    with pytest.raises(ApiException) as again:
        _answer(ada, "r1", "wait_for_input", ["OK"], information="orders")
    assert again.value.status == 409
    _answer(ada, "r1", "wait_for_option", ["option 1"])
    _answer(ada, "r1", "wait_for_multiple_options", ["option 4", "option 6"])

    approval = {"valid_input_and_options"}
    fleet.wait_for(lambda: _waiting(fleet, "hitl_review", "r1") == approval, 90, "the approval")
    question = admin.get_hitl_detail("hitl_review", "r1", "valid_input_and_options", -1)
    assert question.body == "Input: customers / Timeout option: ['option 7']"  # rendered
    with pytest.raises(ApiException) as not_assigned:
        _answer(ada, "r1", "valid_input_and_options", ["Approve"])
    assert not_assigned.value.status == 403
    _answer(admin, "r1", "valid_input_and_options", ["Approve"])

    branch = {"choose_a_branch_to_run"}
    fleet.wait_for(lambda: _waiting(fleet, "hitl_review", "r1") == branch, 90, "the branch")
    _answer(ada, "r1", "choose_a_branch_to_run", ["task_2"])
    assert fleet.wait_run("hitl_review", "r1", 90) == "success"
    states = {task: state for task, (state, _try) in fleet.task_states("hitl_review", "r1").items()}
    assert states == {
        "wait_for_input": "success",
        "wait_for_option": "success",
        "wait_for_multiple_options": "success",
        "wait_for_default_option": "success",
        "valid_input_and_options": "success",
        "choose_a_branch_to_run": "success",
        "task_1": "skipped",
        "task_2": "success",
        "task_3": "skipped",
    }
    xcom = json.loads(fleet.xcom("hitl_review", "r1", "wait_for_multiple_options") or "null")
    assert xcom["chosen_options"] == ["option 4", "option 6"]
    assert xcom["responded_by_user"] == {"id": "ada", "name": "ada"}
    timed_out = json.loads(fleet.xcom("hitl_review", "r1", "wait_for_default_option") or "null")
    assert timed_out["chosen_options"] == ["option 7"] and timed_out["responded_by_user"] is None
    assert json.loads(fleet.xcom("hitl_review", "r1", "choose_a_branch_to_run") or "null") == [
        "task_2"
    ]
    # Each task asked once: waiting and resuming cost no try.
    assert {tries for _state, tries in fleet.task_states("hitl_review", "r1").values()} <= {0, 1}
    assert "-> http://tradewind.example/dags/hitl_review/runs/r1/tasks/wait_for_option" in (
        _task_log(fleet, "r1", "wait_for_option")
    )


def _task_log(fleet: Fleet, run_id: str, task_id: str) -> str:
    logs = fleet.home / "logs"
    found = [path for path in logs.rglob("*.log") if task_id in str(path) and run_id in str(path)]
    return "\n".join(path.read_text(errors="replace") for path in found)


def test_a_rejection_with_fail_on_reject_fails_and_its_downstream_ends_upstream_failed(
    served: tuple[Fleet, str],
) -> None:
    fleet, base = served
    viewer, ada = _client(base, "viewer"), _client(base, "ada")
    fleet.trigger("hitl_gate", "g1")
    fleet.wait_for(lambda: _waiting(fleet, "hitl_gate", "g1") == {"gate"}, 90, "the gate")
    body = airflow.UpdateHITLDetailPayload(chosen_options=["Reject"])
    with pytest.raises(ApiException) as read_only:
        viewer.update_hitl_detail("hitl_gate", "g1", "gate", -1, body)
    assert read_only.value.status == 403
    ada.update_hitl_detail("hitl_gate", "g1", "gate", -1, body)
    assert fleet.wait_run("hitl_gate", "g1", 90) == "failed"
    states = fleet.task_states("hitl_gate", "g1")
    assert states["gate"][0] == "failed" and states["release"][0] == "upstream_failed"
    error = fleet.task_instances("hitl_gate", "g1")["gate"].error or ""
    assert 'the answer was "Reject"' in error
