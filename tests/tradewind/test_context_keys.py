"""The context's ``macros``, its keys read from the store on first use, Airflow 2's date keys,
and the warning a DAG file using one of those gets at load."""

from __future__ import annotations

import datetime as dt
import warnings
from types import SimpleNamespace
from typing import Any

import pytest

from tradewind import DAG, dag, task
from tradewind import macros as tw_macros
from tradewind.assets import Asset, AssetAlias
from tradewind.bash_operator import BashOperator
from tradewind.context_keys import TriggeringAssetEvents, airflow2_keys, context_keys
from tradewind.spellings import Airflow2Spelling
from tradewind.templates import render_string

DAY = dt.timedelta(days=1)
LOGICAL = dt.datetime(2024, 3, 10, tzinfo=dt.UTC)


def details(run_type: str = "scheduled") -> SimpleNamespace:
    return SimpleNamespace(
        logical_date=LOGICAL,
        data_interval_start=LOGICAL,
        data_interval_end=LOGICAL + DAY,
        run_type=run_type,
    )


class FactsClient:
    """A supervisor that counts how often it is asked for the run's facts."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.facts, self.asked = facts, 0

    def run_facts(self) -> dict[str, Any]:
        self.asked += 1
        return self.facts


FACTS = {
    "prev_success": {
        "start_date": "2024-03-09T01:00:00+00:00",
        "end_date": "2024-03-09T01:05:00+00:00",
        "data_interval_start": "2024-03-08T00:00:00+00:00",
        "data_interval_end": "2024-03-09T00:00:00+00:00",
    },
    "expanded_ti_count": 4,
    "triggering_asset_events": [],
}


def test_macros_work_in_templates_and_from_the_module() -> None:
    with DAG("m") as built:
        pass
    context = {"ds": "2024-03-10", "macros": tw_macros}

    rendered = render_string(
        "{{ macros.ds_add(ds, 7) }} {{ macros.ds_format(ds, '%Y-%m-%d', '%d/%m') }} "
        "{{ macros.datetime(2020, 1, 2).year }} {{ macros.timedelta(days=1).days }} "
        "{{ macros.json.dumps([1]) }} {{ macros.uuid.UUID(int=0).version is none }}",
        context,
        built,
    )

    assert rendered == "2024-03-17 10/03 2020 1 [1] True"
    assert tw_macros.ds_add("2024-03-10", -10) == "2024-02-29"
    assert tw_macros.dateutil.relativedelta.relativedelta(months=1).months == 1
    assert 0 <= tw_macros.random() < 1 and tw_macros.time.time() > 0
    now = dt.datetime(2024, 1, 10, 12)
    assert tw_macros.datetime_diff_for_humans(now - 3 * DAY, now) == "3 days before"
    assert tw_macros.datetime_diff_for_humans(dt.datetime.now() + dt.timedelta(hours=2, minutes=1))
    assert tw_macros.datetime_diff_for_humans(dt.datetime.now() - 2 * DAY) == "2 days ago"


def test_the_store_is_asked_once_and_only_when_a_key_is_read() -> None:
    client = FactsClient(FACTS)

    keys = context_keys(details(), client)

    assert client.asked == 0  # building the context asks nothing
    assert keys["prev_start_date_success"] == dt.datetime(2024, 3, 9, 1, tzinfo=dt.UTC)
    assert keys["prev_end_date_success"].minute == 5
    assert keys["prev_data_interval_start_success"].isoformat() == "2024-03-08T00:00:00+00:00"
    assert str(keys["prev_data_interval_end_success"]) == "2024-03-09 00:00:00+00:00"
    assert keys["expanded_ti_count"] == 4
    assert isinstance(keys["prev_start_date_success"], dt.datetime)
    assert client.asked == 1


def test_without_a_previous_success_the_dates_are_none() -> None:
    keys = context_keys(details(), FactsClient({**FACTS, "prev_success": None}))
    assert keys["prev_start_date_success"] == None  # noqa: E711  (a proxy: `is` cannot see it)
    assert not keys["prev_end_date_success"]


def test_airflow2_date_keys_of_a_scheduled_and_a_manual_run() -> None:
    scheduled = airflow2_keys(details())
    assert scheduled["execution_date"] == LOGICAL
    assert (scheduled["next_ds"], scheduled["next_ds_nodash"]) == ("2024-03-11", "20240311")
    assert (scheduled["prev_ds"], scheduled["prev_ds_nodash"]) == ("2024-03-09", "20240309")
    assert scheduled["next_execution_date"] == LOGICAL + DAY
    assert scheduled["prev_execution_date"] == LOGICAL - DAY
    assert (scheduled["yesterday_ds"], scheduled["tomorrow_ds_nodash"]) == (
        "2024-03-09",
        "20240311",
    )
    manual = airflow2_keys(details("manual"))
    assert manual["next_ds"] == manual["prev_ds"] == "2024-03-10"
    no_date = airflow2_keys(SimpleNamespace(logical_date=None))
    assert no_date["execution_date"] is None and no_date["yesterday_ds"] is None


def test_triggering_asset_events_by_asset_alias_and_uri() -> None:
    row = {
        "uri": "s3://b/k",
        "name": "k",
        "extra": {"n": 1},
        "timestamp": "2024-03-10T00:00:00+00:00",
        "source_dag_id": "up",
        "source_run_id": "r",
        "source_task_id": "t",
        "source_map_index": -1,
        "source_alias": "al",
        "partition_key": None,
    }
    events = TriggeringAssetEvents([row, {**row, "extra": {"n": 2}, "source_alias": None}])

    assert list(events) == [Asset(name="k", uri="s3://b/k")]
    assert [e.extra for e in events[Asset("s3://b/k")]] == [{"n": 1}, {"n": 2}]
    assert [e.extra for e in events["s3://b/k"]] == [{"n": 1}, {"n": 2}]
    assert [e.source_dag_id for e in events[AssetAlias("al")]] == ["up"]
    assert dict(events.items())[Asset("s3://b/k")][1].extra == {"n": 2}


def spellings_of(make: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return [str(w.message) for w in caught if issubclass(w.category, Airflow2Spelling)]


def test_airflow2_keys_in_parameters_and_templates_are_named_at_load() -> None:
    def build() -> None:
        @task
        def old(execution_date=None, ds=None, **context):
            return None

        @task
        def templated(command: str) -> None:
            return None

        @dag(dag_id="old_keys")
        def old_keys():
            old()
            templated("echo {{ yesterday_ds_nodash }} {{ ds }}")
            BashOperator(task_id="bash", bash_command="echo {{ next_ds }} {{ prev_ds }}")

        old_keys()

    assert spellings_of(build) == [
        "execution_date (Airflow 3: logical_date)",
        "yesterday_ds_nodash (Airflow 3: {{ macros.ds_add(ds, -1) }} without dashes)",
        "next_ds (Airflow 3: {{ data_interval_end | ds }})",
        "prev_ds (Airflow 3: {{ prev_data_interval_start_success | ds }})",
    ]


def test_airflow3_names_and_plain_strings_are_not_named() -> None:
    def build() -> None:
        with DAG("new_keys"):
            BashOperator(task_id="b", bash_command="echo execution_date {{ logical_date }}")

    assert spellings_of(build) == []


@pytest.mark.parametrize("key", ["execution_date", "next_ds", "tomorrow_ds"])
def test_a_task_naming_an_airflow2_key_gets_it_in_the_context_keys(key: str) -> None:
    from tradewind.context import CONTEXT_KEYS

    assert key in CONTEXT_KEYS


def test_a_lazy_value_returned_by_a_task_is_stored_as_what_it_stands_for() -> None:
    from tradewind.context_keys import unwrap

    keys = context_keys(details(), FactsClient(FACTS))

    assert type(unwrap(keys["expanded_ti_count"])) is int
    assert unwrap("plain") == "plain"


def test_an_undefined_name_in_a_template_is_an_error_as_in_airflow() -> None:
    import jinja2

    from tradewind.templates import TemplateError

    with DAG("strict_templates") as strict:
        pass
    with pytest.raises(TemplateError, match="'no_such_name' is undefined"):
        render_string("{{ no_such_name }}", {"ds": "2026-01-01"}, strict, where="task t")

    with DAG("lenient_templates", template_undefined=jinja2.Undefined) as lenient:
        pass
    assert render_string("[{{ no_such_name }}]{{ ds }}", {"ds": "2026-01-01"}, lenient) == (
        "[]2026-01-01"
    )
