"""The context's keys through the fleet: the previous success, a mapped task's names and
count, and the asset events that created a run."""

import datetime as dt

from tradewind import DAG, Asset, get_current_context, task

reports = Asset("s3://warehouse/reports")

with DAG("context_fleet", start_date=dt.datetime(2024, 1, 1)):

    @task
    def previous(prev_start_date_success=None, prev_data_interval_end_success=None):
        return [str(prev_start_date_success), str(prev_data_interval_end_success)]

    @task(map_index_template="{{ name }}")
    def each(x):
        context = get_current_context()
        context["name"] = f"item-{x}"
        return context["expanded_ti_count"]

    previous()
    each.expand(x=["a", "b"])

with DAG("reports_producer"):

    @task(outlets=[reports])
    def publish(dag_run=None, outlet_events=None):
        outlet_events[reports].extra["run"] = dag_run.run_id

    publish()

with DAG("reports_consumer", schedule=[reports]):

    @task
    def read(triggering_asset_events=None, dag_run=None):
        events = triggering_asset_events[reports]
        return [dag_run.run_type, [event.extra["run"] for event in events]]

    read()
