"""Partitioned assets: producers naming their partitions at run time, and partitioned DAGs
scheduled on them (a daily rollup of hours, a weekly fan-out to days, allowed regions)."""

from tradewind import (
    DAG,
    AllowedKeyMapper,
    Asset,
    DayWindow,
    FanOutMapper,
    FixedKeyMapper,
    PartitionedAssetTimetable,
    PartitionedAtRuntime,
    RollupMapper,
    StartOfDayMapper,
    StartOfWeekMapper,
    WeekWindow,
    task,
)

hourly = Asset("s3://stats/hourly")
weekly = Asset("s3://models/weekly")
regions = Asset("s3://sales/regions")

for dag_id, asset in (("emit_hourly", hourly), ("emit_weekly", weekly), ("emit_regions", regions)):
    with DAG(dag_id, schedule=PartitionedAtRuntime()):

        @task(outlets=[asset], task_id="emit")
        def emit(dag_run=None, outlet_events=None, asset=asset):
            outlet_events[asset].add_partitions(dag_run.conf["keys"])

        emit()


def consumer(dag_id, asset, mapper):
    timetable = PartitionedAssetTimetable(assets=asset, default_partition_mapper=mapper)
    with DAG(dag_id, schedule=timetable):

        @task
        def report(dag_run=None):
            return dag_run.partition_key

        report()


consumer("daily", hourly, RollupMapper(upstream_mapper=StartOfDayMapper(), window=DayWindow()))
consumer(
    "daily_inference",
    weekly,
    FanOutMapper(upstream_mapper=StartOfWeekMapper(), window=WeekWindow()),
)
consumer("allowed_regions", regions, AllowedKeyMapper(["us", "eu"]))
consumer("every_region", regions, FixedKeyMapper("all"))
